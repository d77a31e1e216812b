"""world/agent.py: the loop through engine.generate with fake backends speaking the oracle's
calls; transcripts keep text, call, observation and the Result with its frames."""

import json

import pytest

from engine.trace import ConfigError, GenerationConfig
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.agent import STOPPED, act, cancelled, prompt_ids_for, run_episode
from world.format import render_chat
from world.start import world_for
from world.tasks import make_task

CONFIG = GenerationConfig(gen_length=320, block_size=32, steps=32, sampler="threshold", threshold=0.9)
SLOW = GenerationConfig(gen_length=64, block_size=8, steps=8, sampler="low_confidence")   # one token per forward
TASKS = [make_task("shop_out_of_stock", "heldout", 1), make_task("office_unpaid_total", "train", 2),
         make_task("shop_missing_info", "train", 3), make_task("doc_html", "heldout", 4)]


@pytest.mark.parametrize("kind", ["diffusion", "autoregressive"])
def test_oracle_backend_succeeds_through_generate(kind):
    make = FakeDiffusionBackend if kind == "diffusion" else FakeARBackend
    backend = make(oracle_target(TASKS))
    for task in TASKS:
        frames, steps = [], []
        transcript = run_episode(backend, task, CONFIG, system=None, on_frame=frames.append, on_step=steps.append)
        assert transcript.success, (task["id"], transcript.reason)
        assert steps == transcript.steps and len(steps) == max(1, len(task["gold_actions"]))
        assert frames == [f for s in transcript.steps for f in s.result.frames]
        assert transcript.nfe == sum(s.result.stats.nfe for s in transcript.steps) > 0
        assert transcript.seconds > 0 and transcript.error_type is None
        if task["domain"] != "document":
            assert [s.call for s in transcript.steps] == task["gold_actions"]
            assert all(s.raw_text == s.result.text for s in transcript.steps)
            assert transcript.steps[-1].observation is None and transcript.final_answer
        json.dumps(transcript.to_dict())  # the session store can persist it as it is
    if kind == "diffusion":
        assert transcript.new_tokens / transcript.nfe > 1  # several tokens per forward


def test_world_format_backends_read_the_exact_template():
    task = TASKS[1]
    backend = world_format(FakeARBackend(oracle_target(TASKS)))
    transcript = run_episode(backend, task, CONFIG)  # system "auto": none for the world format
    assert transcript.success
    prompts = [backend.tokenizer.decode(p) for p in backend.prompts]
    assert prompts[0] == render_chat([{"role": "user", "content": task["instruction"]}], add_generation_prompt=True)
    assert prompts[-1] == render_chat(transcript.messages[:-1], add_generation_prompt=True)
    assert prompt_ids_for(backend, transcript.messages[:1]) == backend.prompts[0]


def test_other_backends_get_their_chat_template_and_the_full_tool_list():
    task = TASKS[2]
    backend = FakeARBackend(oracle_target(TASKS), max_length=8192)
    transcript = run_episode(backend, task, CONFIG)
    assert transcript.success and transcript.messages[0]["role"] == "system"
    assert "<tools>" in transcript.messages[0]["content"]
    assert backend.tokenizer.decode(backend.prompts[0]).startswith("system: You are a shop and office agent.")


def test_unparsable_replies_are_fed_back_as_typed_errors():
    task = TASKS[1]
    backend = FakeARBackend("I think the answer is 42.")
    transcript = run_episode(backend, task, CONFIG, system="compact", max_replies=3)
    assert not transcript.success and transcript.error_type == "parse_error" and len(transcript.steps) == 3
    assert transcript.steps[0].error["kind"] == "no_call" and transcript.steps[0].observation == {"error": "no_call"}
    assert transcript.messages[2] == {"role": "assistant", "content": "I think the answer is 42."}
    assert transcript.messages[3] == {"role": "tool", "content": '{"error":"no_call"}'}


def test_context_overflow_ends_the_episode_as_step_limit():
    """A transcript that outgrows the model's context ends the episode (no exception) as step_limit."""
    from engine.trace import GenerationConfig
    from tests.fakes import FakeARBackend
    from world.agent import run_episode
    from world.task_sets import load_heldout_tasks

    task = next(t for t in load_heldout_tasks() if t.get("domain") != "document")
    backend = FakeARBackend('<tool_call>{"name":"view_cart","arguments":{}}</tool_call>', max_length=160)
    tr = run_episode(backend, task, GenerationConfig(gen_length=64, block_size=16), system=None)
    assert tr.success is False and tr.error_type == "step_limit"
    assert "prompt" in tr.stopped and tr.stopped in tr.reason


def test_stop_ends_the_reply_in_progress_as_the_engines_cancelled_step_and_runs_no_call():
    """should_stop is asked after every forward: the generation Stop cut is the engine's partial
    Result (stop_reason "cancelled"), the loop returns STOPPED, and the half-written call never runs."""
    task = make_task("shop_add", "heldout", 5)
    backend = FakeDiffusionBackend(oracle_target([task]))
    frames: list = []
    steps: list = []
    world = world_for(task)
    before = world.end_state()
    messages = [{"role": "user", "content": task["instruction"]}]
    answer, why = act(backend, world, messages, SLOW, on_frame=frames.append, on_step=steps.append,
                      should_stop=lambda: len(frames) == 3)
    assert (answer, why) == (None, STOPPED)
    assert len(steps) == 1 and steps[0].call is None and steps[0].observation is None
    cut = steps[0].result
    assert cancelled(cut) and cut.frames == frames and cut.stats.nfe == 3
    assert world.end_state() == before and messages[-1]["role"] == "user"   # nothing ran, nothing answered


def test_stop_between_replies_starts_no_new_generation():
    task = make_task("shop_add", "heldout", 5)
    backend = FakeDiffusionBackend(oracle_target([task]))
    steps: list = []
    frames: list = []
    frames_at_stop: list[int] = []

    def should_stop() -> bool:
        if steps and not frames_at_stop:
            frames_at_stop.append(len(frames))
        return bool(steps)

    answer, why = act(backend, world_for(task), [{"role": "user", "content": task["instruction"]}], CONFIG,
                      on_step=steps.append, on_frame=frames.append, should_stop=should_stop)
    assert (answer, why) == (None, STOPPED) and len(steps) == 1 and not cancelled(steps[0].result)
    assert steps[0].call == task["gold_actions"][0] and len(frames) == frames_at_stop[0] > 0


def test_only_an_outgrown_context_ends_the_loop_quietly():
    """A transcript past the model's context is out of budget (the loop ends with the sentence);
    any other ConfigError is a setting that can never work and reaches the caller as it is."""
    task = make_task("shop_add", "heldout", 5)
    small = FakeDiffusionBackend(oracle_target([task]), max_length=CONFIG.gen_length + 8)
    steps: list = []
    answer, why = act(small, world_for(task), [{"role": "user", "content": task["instruction"]}], CONFIG,
                      on_step=steps.append)
    assert answer is None and "prompt is" in why and "tokens long" in why and steps == []
    backend = FakeDiffusionBackend(oracle_target([task]))
    with pytest.raises(ConfigError, match="cache"):
        act(backend, world_for(task), [{"role": "user", "content": task["instruction"]}],
            CONFIG.replace(cache="dual"))
