"""GenerationConfig under random input: every bad value is a ConfigError whose message is a short
sentence for a person (capital first, under 300 characters, no object repr), never TypeError or
ValueError from inside; absurd sizes are refused by their bounds before any arithmetic."""

from __future__ import annotations

import dataclasses
import re
import warnings
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.samplers import SAMPLERS
from engine.setting_rules import MAX_SEED
from engine.trace import ConfigError, GenerationConfig

FIELDS = [f.name for f in dataclasses.fields(GenerationConfig)]


class Opaque:
    """A value with the default repr, `<...Opaque object at 0x...>`."""


ANYTHING = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**40), max_value=10**40),
    st.just(10**5000), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=2000), st.binary(max_size=20),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.builds(object), st.builds(Opaque), st.just(Decimal("0.5")), st.just(Fraction(1, 3)), st.just(1 + 2j),
    st.sampled_from(list(SAMPLERS) + ["random", "eb", "nucleus", ""]),
)
PLAUSIBLE = {
    "gen_length": st.integers(1, 4096), "block_size": st.integers(1, 256), "steps": st.integers(1, 64),
    "sampler": st.sampled_from(list(SAMPLERS)), "threshold": st.floats(0.01, 1.0), "factor": st.floats(0.1, 4),
    "scaffold_threshold": st.floats(0.01, 1.0),
    "entropy_bound": st.floats(0, 2), "temperature": st.floats(0, 2), "top_p": st.floats(0.05, 1.0),
    "top_k": st.integers(0, 100), "seed": st.integers(0, MAX_SEED),
}


@st.composite
def settings_dicts(draw):
    """Mostly plausible settings with a few hostile ones, so relations between settings are reached too."""
    values = {}
    for name in draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=len(FIELDS))):
        plausible = PLAUSIBLE.get(name)
        values[name] = draw(plausible if plausible is not None and draw(st.booleans()) else ANYTHING)
    return values


def check_message(message: str) -> None:
    assert len(message) < 300, message
    assert message[:1].isupper(), message
    assert "object at 0x" not in message and not re.search(r"<[^>]* at 0x", message), message
    assert message.rstrip().endswith((".", ")")), message


@settings(max_examples=1200, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(values=settings_dicts())
def test_random_configs_raise_only_config_error_with_a_sentence(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # old sampler names are drawn too
        try:
            GenerationConfig(**values)
        except ConfigError as exc:
            check_message(str(exc))


@settings(max_examples=300, deadline=1000)
@given(values=st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=80), st.integers()), ANYTHING,
                              max_size=6) | ANYTHING)
def test_from_dict_raises_only_config_error(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            GenerationConfig.from_dict(values)
        except ConfigError as exc:
            check_message(str(exc))


@pytest.mark.parametrize("changes, words", [
    pytest.param({"threshold": None}, ["Threshold must be a number between 0 and 1", "got None."], id="none"),
    pytest.param({"seed": 10**30}, ["Seed", "9,223,372,036,854,775,807"], id="seed-overflow"),
    pytest.param({"seed": -1}, ["Seed", "from 0"], id="seed-negative"),
    pytest.param({"gen_length": 10**8 + 1, "block_size": 10**8}, ["Generation length", "1,048,576"], id="absurd"),
    pytest.param({"temperature": Opaque()}, ["Temperature", "type Opaque"], id="object"),
    pytest.param({"sampler": "x" * 5000}, ["Unknown sampler", "…"], id="long-text"),
    pytest.param({"top_p": float("nan")}, ["Top-p", "nan"], id="nan"),
    pytest.param({"factor": 10**5000}, ["Factor", "bits"], id="huge-int"),
    pytest.param({"temperature": 1e308}, ["Temperature", "to 100", "1e+308"], id="temperature-1e308"),
    pytest.param({"temperature": float("inf")}, ["Temperature", "inf"], id="temperature-inf"),
    pytest.param({"top_p": 1e308}, ["Top-p"], id="top-p-1e308"),
    pytest.param({"top_k": 10**40}, ["Top-k"], id="top-k-huge"),
    pytest.param({"top_k": -5}, ["Top-k"], id="top-k-negative"),
    pytest.param({"threshold": float("-inf")}, ["Threshold"], id="threshold-minus-inf"),
    pytest.param({"gen_length": -3}, ["Generation length"], id="gen-length-negative"),
    pytest.param({"steps": 10**20}, ["Steps per block"], id="steps-huge"),
    pytest.param({"seed": float("nan")}, ["Seed"], id="seed-nan"),
    pytest.param({"factor": 1e308}, ["Factor"], id="factor-1e308"),
    pytest.param({"entropy_bound": 1e308}, ["Entropy bound"], id="entropy-bound-1e308"),
    pytest.param({"scaffold_threshold": 7.0}, ["Scaffold threshold"], id="scaffold-threshold-7"),
])
def test_named_bad_values(changes, words):
    with pytest.raises(ConfigError) as caught:
        GenerationConfig(**changes)
    for word in words:
        assert word in str(caught.value)
    check_message(str(caught.value))


def test_many_problems_are_cut_to_a_short_message():
    bad = dict.fromkeys(FIELDS, Opaque())
    with pytest.raises(ConfigError, match=r"more settings are also wrong") as caught:
        GenerationConfig(**bad)
    check_message(str(caught.value))


def test_largest_seed_is_accepted():
    assert GenerationConfig(seed=MAX_SEED).seed == MAX_SEED


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(GenerationConfig) if isinstance(f.default, bool)])
def test_every_switch_takes_only_true_or_false(name):
    with pytest.raises(ConfigError, match=r"must be on or off \(true or false\), got 1\.$") as caught:
        GenerationConfig(**{name: 1})
    check_message(str(caught.value))


def test_a_long_first_problem_keeps_the_message_short():
    """An unknown sampler's sentence lists every sampler; with another setting wrong too, the note
    about it must not push the message past the limit (fuzzing found 300 characters once)."""
    from engine.setting_rules import MESSAGE_CHARS

    for name in ("x" * 60, "00\x1f\x1f\x1f\U00018d09"):
        with pytest.raises(ConfigError) as caught:
            GenerationConfig(sampler=name, remask=None)          # the remasking after it is wrong too
        message = str(caught.value)
        assert len(message) <= MESSAGE_CHARS and message.startswith("Unknown sampler")
        check_message(message)
