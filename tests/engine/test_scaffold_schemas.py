"""Scaffolded decoding under random schemas (hypothesis), built from the registry's schema
vocabulary: strings with enums, lengths and patterns, integers and numbers with bounds,
booleans, arrays, nested objects with optional keys. Whatever the model (tiny random Sprout
twins, or seeded noise), every output parses and validates against its schema, no scaffold
position is ever re-masked or counted as a model decision, and every value stays within its
slot's budget."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.generate import run
from engine.scaffold.schema import STRING_CHARS, compile_schema, longest
from engine.trace import GenerationConfig
from tests.scaffold_models import RandomLogits, sprout_twins
from world import entities

WORDS = list(entities.COLORS) + list(entities.SIZES) + ["dress", "jacket", "paid", "unpaid", "ECO3", "P3K7"]
PATTERNS = ["^[A-Z][0-9]{2,3}$", "^[a-z]{1,6}$", "^P[0-9]{1,4}$", "^[A-Z]{3}[0-9]$", "[0-9]"]
KEYS = ["query", "color", "size", "product_id", "quantity", "name", "email", "amount", "status", "amounts", "items",
        "note", "code", "gift"]


def strings():
    plain = st.builds(lambda low, extra: {"type": "string", "minLength": low, "maxLength": low + extra},
                      st.integers(0, 3), st.integers(0, 10))
    enum = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5, unique=True).map(
        lambda members: {"type": "string", "enum": members})
    pattern = st.sampled_from(PATTERNS).map(lambda p: {"type": "string", "pattern": p, "maxLength": 12})
    return st.one_of(plain, enum, pattern)


def integers():
    return st.tuples(st.integers(-500, 500), st.integers(0, 900)).map(
        lambda t: {"type": "integer", "minimum": t[0], "maximum": t[0] + t[1]})


def numbers():
    bounded = st.tuples(st.integers(-100, 100), st.integers(1, 500)).map(
        lambda t: {"type": "number", "minimum": t[0], "maximum": t[0] + t[1]})
    return st.one_of(bounded, st.just({"type": "number", "exclusiveMinimum": 0}), st.just({"type": "number"}))


SCALARS = st.one_of(strings(), integers(), numbers(), st.just({"type": "boolean"}))


def arrays(items):
    return st.tuples(items, st.integers(0, 2), st.integers(0, 2)).map(
        lambda t: {"type": "array", "items": t[0], "minItems": t[1], "maxItems": t[1] + t[2]})


def objects(values):
    @st.composite
    def build(draw):
        keys = draw(st.lists(st.sampled_from(KEYS), min_size=0, max_size=4, unique=True))
        properties = {k: draw(values) for k in keys}
        required = [k for k in keys if draw(st.booleans())]
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return build()


VALUES = st.recursive(SCALARS, lambda inner: st.one_of(arrays(inner), objects(inner)), max_leaves=5)
LONGEST = 240              # characters: the canvas (and the tiny models' context) stays small
SCHEMAS = objects(VALUES).filter(lambda s: longest(compile_schema(s)) <= LONGEST)


def decode(backend, schema, seed: int = 0):
    length = longest(compile_schema(schema)) + 16
    length += -length % 16
    config = GenerationConfig(gen_length=length, block_size=16, steps=16, sampler="prefix_threshold",
                              threshold=0.9, schema=schema, seed=seed)
    prompt = backend.encode_chat([{"role": "user", "content": "Two blue jackets in size M, please."}])
    return run(backend, prompt, config)


def check(result, schema, mask_id):
    assert result.schema_error == "", result.schema_error
    value = json.loads(result.text)
    jsonschema.validate(value, schema)
    check_frames(result.frames, mask_id)
    check_budgets(value, schema)
    return value


def check_frames(frames, mask_id):
    """Scaffold positions are never model decisions, and nothing decided is ever masked again."""
    seen: dict[int, int] = {}
    for frame in frames:
        decided = {p for p, _t, _c in frame.committed}
        assert not decided & set(frame.prefilled)
        for position, token in seen.items():
            assert frame.canvas[position] == token, "a decided position changed or was re-masked"
        seen.update({p: t for p, t in enumerate(frame.canvas) if t != mask_id})
        assert set(frame.prefilled) <= set(seen)
    previous: set[int] = set()
    for frame in frames:                                                       # prefilled only grows
        assert previous <= set(frame.prefilled)
        previous = set(frame.prefilled)


def check_budgets(value, schema):
    kind = schema.get("type")
    if kind == "string":
        assert len(value) <= schema.get("maxLength", STRING_CHARS)
    elif kind == "integer":
        assert len(str(value)) <= max(len(str(schema["minimum"])), len(str(schema["maximum"])))
    elif kind == "array":
        assert len(value) <= schema["maxItems"]
        for item in value:
            check_budgets(item, schema["items"])
    elif kind == "object":
        for key, item in value.items():
            check_budgets(item, schema["properties"][key])


@pytest.fixture(scope="module")
def twins():
    return sprout_twins()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(schema=SCHEMAS)
def test_tiny_sprout_twins_write_valid_json_for_random_schemas(twins, schema):
    for backend in twins:
        check(decode(backend, schema), schema, backend.mask_id)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, seed=st.integers(0, 10**6))
def test_noise_writes_valid_json_for_random_schemas(schema, seed):
    for kind in ("diffusion", "autoregressive"):
        backend = RandomLogits(kind, seed=seed)
        check(decode(backend, schema, seed), schema, backend.mask_id)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, seed=st.integers(0, 10**6))
def test_sliding_blocks_write_valid_json_for_random_schemas(schema, seed):
    """The same with blocks that start at the cursor (`slides_blocks`), and no forward is spent
    without a decision (a schema's opening text may fill the first window)."""
    backend = RandomLogits("diffusion", seed=seed)
    backend.slides_blocks = True
    result = decode(backend, schema, seed)
    check(result, schema, backend.mask_id)
    assert all(frame.committed for frame in result.frames if frame.nfe)


def test_the_strategy_reaches_every_part_of_the_vocabulary():
    """The generated schemas do hold patterns, enums, arrays, nested objects and optional keys."""
    from hypothesis import Phase, find

    quick = settings(phases=[Phase.generate], database=None, max_examples=2000)   # found, not shrunk
    for wanted in ('"pattern"', '"enum"', '"array"', '"number"', '"integer"', '"boolean"'):
        find(SCHEMAS, lambda s, w=wanted: w in json.dumps(s), settings=quick)
    find(SCHEMAS, lambda s: any(v.get("type") == "object" for v in s["properties"].values()), settings=quick)
    find(SCHEMAS, lambda s: set(s["properties"]) - set(s["required"]), settings=quick)
