"""Scaffolded tool calls (engine/scaffold/): the automaton's forced text and choices, decoding on
tiny Sprout twins and on seeded noise (every call parses, scaffold positions are prefilled and
never re-masked), AR jump-forward's extend against one step per token, slot budgets, the
sentences for what cannot work, Frame compatibility, and bench --scaffold."""

from __future__ import annotations

import json
from functools import partial

import pytest
import torch

from bench.agent import run_agent_benchmark
from engine.generate import run as run_with
from engine.scaffold import machine
from engine.scaffold.schema import STRING_CHARS, compile_schema, longest, schema_problem
from engine.scaffold.target import tool_call_shape
from engine.trace import ConfigError, Frame, GenerationConfig, Result
from tests.engine.test_scaffold_schemas import check_frames
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.scaffold_models import RandomLogits, sprout_twins
from tests.world.scripted import babbling_ar, oracle_diffusion
from world.format import TOOL_CALLS, ParseError, parse_call
from world.task_sets import load_heldout_tasks
from world.tools import TOOLS

run = partial(run_with, tools=TOOL_CALLS)   # scaffolded tool calls are written from the world's registry

CONFIG = GenerationConfig(gen_length=128, block_size=16, steps=16, sampler="prefix_threshold", threshold=0.9,
                          scaffold=True)
WORDS = ["blue", "dress", "size", "L", "add", "cart", "Cleo Abbott", "P3K7", "invoice", "paid", "sum", "923",
         "hello", "{", '"', "</tool_call>", "ü", "\\", "\n", "finish", "ECO3", "customer", "C455", "  "]


def test_the_call_prefix_is_forced_and_the_name_is_the_first_choice():
    state = machine.start(tool_call_shape(TOOL_CALLS))
    assert machine.forced(state) == '<tool_call>{"name":"'
    state = machine.advance(state, machine.forced(state))
    starts = {t["name"][0] for t in TOOLS}
    assert {c for c in "abcdefghijklmnopqrstuvwxyz" if machine.advance(state, c)} == starts
    state = machine.advance(state, "view")                               # one tool left: the rest is forced
    assert machine.forced(state) == '_cart","arguments":{}}</tool_call>'


def test_optional_keys_are_the_models_choice_in_schema_order():
    state = machine.advance(machine.start(tool_call_shape(TOOL_CALLS)),
                            '<tool_call>{"name":"search_products","arguments":{"query":"dress')
    assert machine.advance(state, '","c') and machine.advance(state, '","s') and machine.advance(state, '"}}')
    assert not machine.advance(state, '","q')                            # no key twice
    after_size = machine.advance(state, '","size":"L')
    assert machine.forced(after_size) == '"}}</tool_call>'               # color may not come after size
    enum = machine.advance(state, '","color":"')
    assert machine.advance(enum, "blue") and not machine.advance(enum, "bluish")


def test_placeable_leaves_a_quote_and_its_choice_to_one_token():
    state = machine.advance(machine.start(tool_call_shape(TOOL_CALLS)),
                            '<tool_call>{"name":"search_products","arguments":{"query":"dress","color":"blue')
    assert machine.forced(state) == '"' and machine.placeable(state) == ""   # the model writes `","` or `"}}`


@pytest.fixture(scope="module")
def twins():
    return sprout_twins()


@pytest.mark.parametrize("which", ["bd", "ar"])
def test_tiny_sprout_writes_a_call_that_parses(twins, which):
    backend = twins[0 if which == "bd" else 1]
    for prompt in ("Please add a blue dress in size L to the cart.", "Look up customer Cleo Abbott.", "x"):
        ids = backend.encode_chat([{"role": "user", "content": prompt}])
        result = run(backend, ids, CONFIG)
        assert result.schema_error == ""
        assert not isinstance(parse_call(result.text), ParseError), result.text
        check_frames(result.frames, backend.mask_id)
        first = result.frames[0]
        assert first.prefilled[:4] == [0, 1, 2, 3]          # `<tool_call>{"name":"` before any forward
        assert result.stats.nfe == result.frames[-1].nfe


def test_the_unscaffolded_twin_is_left_as_it_was(twins):
    backend = twins[0]
    ids = backend.encode_chat([{"role": "user", "content": "Look up customer Cleo Abbott."}])
    result = run(backend, ids, CONFIG.replace(scaffold=False))
    assert all(f.prefilled == [] for f in result.frames)


def test_extend_is_one_forward_with_the_logits_of_one_step_per_token(twins):
    ar = twins[1]
    prompt = ar.encode_chat([{"role": "user", "content": "Find a navy jacket."}])
    tokens = ar.tokenizer.encode('<tool_call>{"name":"')
    ar.prefill(torch.tensor([prompt]))
    stepped = [ar.step(t) for t in tokens][-1]
    ar.prefill(torch.tensor([prompt]))
    extended = ar.extend(tokens)
    torch.testing.assert_close(extended, stepped, rtol=1e-4, atol=1e-4)


def test_jump_forward_counts_one_forward_per_extend(twins):
    ar = twins[1]
    ids = ar.encode_chat([{"role": "user", "content": "View the cart."}])
    result = run(ar, ids, CONFIG)
    decided = sum(len(f.committed) for f in result.frames)
    assert result.stats.nfe == len(result.frames) == decided                  # one model token per forward
    assert len(result.token_ids) > decided                                    # the rest came in by extend


def fuzzed_prompt(rng) -> list[dict[str, str]]:
    words = [WORDS[int(i)] for i in torch.randint(len(WORDS), (int(torch.randint(0, 12, (1,), generator=rng)),),
                                                   generator=rng)]
    messages = [{"role": "user", "content": " ".join(words)}]
    if torch.rand(1, generator=rng) < 0.4:
        messages += [{"role": "assistant", "content": '<tool_call>{"name":"view_cart","arguments":{}}</tool_call>'},
                     {"role": "tool", "content": json.dumps({"items": words[:2], "total": 3})}]
    return messages


FUZZ_PROMPTS = 300   # in the test; the 10,000-prompt run is `python -m bench fuzz` (models/README.md)


def test_fuzzed_prompts_through_the_scaffold_never_give_a_parse_error():
    rng = torch.Generator().manual_seed(0)
    failures = []
    for i in range(FUZZ_PROMPTS):
        backend = RandomLogits("diffusion" if i % 2 else "autoregressive", seed=i, scale=1.0 + i % 5)
        result = run(backend, backend.encode_chat(fuzzed_prompt(rng)), CONFIG.replace(seed=i))
        parsed = parse_call(result.text)
        if isinstance(parsed, ParseError) or result.schema_error:
            failures.append((result.text, result.schema_error))
    assert failures == []


@pytest.mark.parametrize("threshold, scaffold_threshold", [(0.99, 0.5), (0.5, 0.95)],
                         ids=["scaffold-lower", "threshold-lower"])
def test_a_walk_commits_at_the_lower_of_the_two_thresholds(threshold, scaffold_threshold):
    """Every commit after a forward's first clears min(threshold, scaffold_threshold), and commits
    between the two bars happen: a walk on either bar alone fails one of the two cases."""
    bar, top = sorted((threshold, scaffold_threshold))
    rng = torch.Generator().manual_seed(0)
    between = 0
    for i in range(20):
        backend = RandomLogits("diffusion", seed=i, scale=8.0)
        config = CONFIG.replace(threshold=threshold, scaffold_threshold=scaffold_threshold, seed=i)
        result = run(backend, backend.encode_chat(fuzzed_prompt(rng)), config)
        later = [conf for frame in result.frames for _, _, conf in frame.committed[1:]]
        assert all(conf >= bar for conf in later)
        between += sum(conf < top for conf in later)
    assert between > 0


def test_an_unbounded_string_stops_at_its_budget():
    wordy = '{"note":"' + "a" * 400 + '"}'                                      # the model never closes the value
    schema = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    # the AR fake predicts by its own step count, so its target is the value's letters alone
    for backend in (FakeDiffusionBackend(wordy), FakeARBackend("a" * 400)):
        result = run(backend, backend.tokenizer.encode("hi"), CONFIG.replace(gen_length=256, scaffold=False,
                                                                              schema=schema))
        assert result.schema_error == ""
        assert json.loads(result.text) == {"note": "a" * STRING_CHARS}


def test_a_canvas_too_short_is_a_sentence_not_a_broken_answer():
    schema = {"type": "object", "properties": {"note": {"type": "string", "minLength": 40}}, "required": ["note"]}
    backend = FakeDiffusionBackend('{"note":"' + "b" * 60 + '"}')
    result = run(backend, backend.tokenizer.encode("hi"), CONFIG.replace(gen_length=32, schema=schema))
    assert "generation length" in result.schema_error and result.schema_error.endswith(".")


@pytest.mark.parametrize("kind", ["diffusion", "autoregressive"])
def test_a_model_that_never_closes_its_strings_still_ends_with_whole_json(kind):
    """Two 64-character strings and the call around them are more than 96 tokens: the decoder
    keeps the room the rest of the value needs, so the strings are cut short instead."""
    wordy = '<tool_call>{"name":"register_course","arguments":{"student_name":"' + "k" * 300
    backend = FakeDiffusionBackend(wordy) if kind == "diffusion" else FakeARBackend("k" * 300)
    result = run(backend, backend.tokenizer.encode("hi"), CONFIG.replace(gen_length=96))
    assert result.schema_error == "" and not isinstance(parse_call(result.text), ParseError), result.text
    assert len(result.token_ids) <= 96


@pytest.mark.parametrize("schema, words", [
    ({"type": "object", "properties": {"a": {"$ref": "#/b"}}}, "$ref"),
    ({"type": "string", "pattern": "("}, "pattern"),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "email", "uniqueItems": True}}},
     "uniqueItems"),
    ({"type": "integer", "minimum": 5, "maximum": 3}, "No whole number"),
    ({"type": "array", "minItems": 3, "maxItems": 1}, "minItems"),
    ({}, "any value"),
    ("not a schema", "JSON object"),
], ids=["ref", "bad-pattern", "unknown-keyword", "empty-range", "items-range", "anything", "a-string"])
def test_schemas_the_scaffold_cannot_follow_are_sentences(schema, words):
    problem = schema_problem(schema)
    assert problem and words in problem and problem[0].isupper() and problem.endswith(".")
    with pytest.raises(ConfigError) as raised:
        GenerationConfig(schema=schema)
    assert str(raised.value) == problem


def test_an_object_without_properties_is_any_object():
    schema = {"type": "object"}
    length = longest(compile_schema(schema)) + 16
    for seed in range(10):
        backend = RandomLogits("diffusion" if seed % 2 else "autoregressive", seed=seed)
        result = run(backend, backend.encode_chat([{"role": "user", "content": "json"}]),
                     CONFIG.replace(gen_length=length + (-length % 16), scaffold=False, schema=schema, seed=seed))
        assert result.schema_error == "" and isinstance(json.loads(result.text), dict)


def test_budgets_come_from_the_schema():
    shape = compile_schema({"type": "object", "properties": {
        "q": {"type": "integer", "minimum": 1, "maximum": 9}, "s": {"type": "string", "maxLength": 5},
        "n": {"type": "integer", "minimum": -120, "maximum": 40}}})
    (_, q, _), (_, s, _), (_, n, _) = shape.keys
    assert (q.max_chars, s.max_chars, n.max_chars) == (1, 5, 4)


def test_frames_keep_prefilled_and_read_old_dicts():
    frame = Frame(nfe=1, block=0, round=0, committed=[(4, 7, 0.9)], canvas=[1, 2, 3, 4, 7], elapsed_s=0.1,
                  prefilled=[0, 1, 2, 3])
    assert Frame.from_dict(json.loads(json.dumps(frame.to_dict()))) == frame
    old = {k: v for k, v in frame.to_dict().items() if k != "prefilled"}
    assert Frame.from_dict(old).prefilled == []
    assert Result.from_dict({"token_ids": [], "text": "", "frames": [], "stats": {
        "nfe": 0, "new_tokens": 0, "tokens_per_forward": 0.0, "seconds": 0.0, "tokens_per_s": 0.0,
        "first_token_s": None, "stop_reason": "eos"}}).schema_error == ""


def test_bench_runs_both_modes_in_one_run_with_forwards_per_call():
    tasks = load_heldout_tasks()[:2]
    config = GenerationConfig(gen_length=256, block_size=32, steps=32, sampler="threshold", threshold=0.9)
    report = run_agent_benchmark({"A": oracle_diffusion(tasks), "B": babbling_ar()}, tasks, attempts=1,
                                 config=config, system=None, scaffold=True)
    models = report["models"]
    assert list(models) == ["A", "B", "A (scaffold)", "B (scaffold)"]
    assert [m["scaffold"] for m in models.values()] == [False, False, True, True]
    assert models["A (scaffold)"]["successes"] == models["A"]["successes"] == 2
    assert models["B"]["errors"].get("parse_error") and "parse_error" not in models["B (scaffold)"]["errors"]
    assert models["A (scaffold)"]["forwards_per_call"] < models["A"]["forwards_per_call"]
    assert report["scaffold"] is True and report["median_ratio_scaffold"] == pytest.approx(
        models["A (scaffold)"]["median_task_s"] / models["B (scaffold)"]["median_task_s"])


def test_bench_episodes_start_with_no_prompt_cached(twins, monkeypatch):
    """With --scaffold one backend runs each task twice in a row; the second run must not find
    the first's prompts cached (free prefills the first run did not have)."""
    import bench.agent as bench

    kept_at_start, original = [], bench.run_episode

    def episode(backend, *args, **kwargs):
        kept_at_start.append(len(backend.prompt_cache._kept))
        return original(backend, *args, **kwargs)

    monkeypatch.setattr(bench, "run_episode", episode)
    bd, ar = twins
    report = run_agent_benchmark({"bd": bd, "ar": ar}, load_heldout_tasks()[:2], attempts=1,
                                 config=CONFIG.replace(scaffold=False, gen_length=32), max_replies=2, scaffold=True)
    assert len(kept_at_start) == 4 + 2 * 4 and report["models"]["bd (scaffold)"]["attempts"] == 2   # warm-ups, episodes
    assert kept_at_start == [0] * len(kept_at_start)


def test_causal_lm_extend_equals_one_step_per_token():
    from engine.backends.causal_lm import CausalLMBackend
    from tests import tiny_models as tm

    tok = tm.tiny_tokenizer()
    backend = CausalLMBackend(tm.tiny_causal_lm(), tok, name="tiny-ar", device=torch.device("cpu"))
    prompt = torch.tensor([tok.encode("A cat sat")])
    known = tok.encode('{"name":"')
    backend.prefill(prompt)
    stepped = [backend.step(t) for t in known][-1]
    backend.prefill(prompt)
    torch.testing.assert_close(backend.extend(known), stepped, atol=1e-4, rtol=0)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["name", "n"]}
    result = run(backend, prompt[0].tolist(), CONFIG.replace(gen_length=64, scaffold=False, schema=schema))
    assert result.schema_error == "" and set(json.loads(result.text)) == {"name", "n"}


@pytest.mark.parametrize("gen_length", [24, 32])
def test_aligned_blocks_keep_a_scaffolded_answer_within_gen_length(gen_length):
    """Aligned blocks run the canvas past gen_length (a 3-token prompt in blocks of 8 starts with a
    block of 5, and decodes gen_length + 5 positions); the scaffold writes the answer within gen_length, so the JSON it
    reports as whole is the answer the Result holds."""
    from tests.tiny_models import tiny_block_backend

    backend = tiny_block_backend(seed=4, logit_shift=False)
    schema = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 40}}, "required": ["note"]}
    config = GenerationConfig(gen_length=gen_length, block_size=8, steps=8, sampler="threshold", threshold=0.9,
                              aligned_blocks=True, schema=schema, seed=3)
    result = run(backend, [5, 6, 7], config)
    assert len(result.frames[-1].canvas) == gen_length + 5            # the canvas does run past gen_length
    assert len(result.token_ids) <= gen_length
    if result.schema_error:
        assert result.schema_error.endswith(".")
    else:
        assert set(json.loads(result.text)) == {"note"}


@pytest.mark.parametrize("intent", ["outside_greeting", "outside_about", "outside_general", "outside_unsupported"])
def test_the_honest_reply_outside_the_world_fits_finish_whole(intent):
    """finish's answer has no maxLength: its budget must hold the sentence the twins are trained
    to give outside the world (with a 64-character budget the scaffold cut it, and the grader
    failed the task)."""
    from world.format import render_call
    from world.templates import ANSWERS

    sentence = ANSWERS[intent]
    backend = FakeDiffusionBackend(render_call("finish", {"answer": sentence}))   # one token per character
    result = run(backend, backend.tokenizer.encode("hi"), CONFIG.replace(gen_length=256))
    parsed = parse_call(result.text)
    assert not isinstance(parsed, ParseError) and result.schema_error == ""
    assert parsed.arguments == {"answer": sentence}


def test_a_scaffolded_tool_call_needs_the_tools_it_may_call():
    """The engine knows no world: without the registry (and without a schema) there is nothing to write."""
    for kind in ("diffusion", "autoregressive"):
        backend = RandomLogits(kind, seed=1, scale=1.0)
        with pytest.raises(ConfigError, match="neither the tools it may call nor a schema"):
            run_with(backend, backend.encode_chat([{"role": "user", "content": "hi"}]), CONFIG)
