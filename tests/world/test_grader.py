"""world/grader.py: success means end state + outputs; each scripted failure gets
exactly its error_type, on every intent."""

import pytest

from engine.trace import GenerationConfig
from tests.world.scripted import FAILURES
from world import conversation_sets, conversations, office_six
from world.agent import run_episode
from world.grader import answer_contains, gold_end_state, grade, replay
from world.start import world_for
from world.tasks import AGENT_INTENTS, make_task

TASKS = [make_task(intent, split, seed) for intent in AGENT_INTENTS for split, seed in (("train", 1), ("heldout", 2))]


@pytest.mark.parametrize("stand_in", list(FAILURES))
def test_each_scripted_failure_gets_its_error_type_every_time(stand_in):
    make_model, expected = FAILURES[stand_in]
    got = {}
    for task in TASKS:
        transcript = run_episode(None, task, GenerationConfig(), generate_fn=make_model(task))
        assert not transcript.success, task["id"]
        got[task["id"]] = transcript.error_type
    assert set(got.values()) == {expected}, {k: v for k, v in got.items() if v != expected}


def test_step_limit_and_veto_are_enforced():
    task = TASKS[0]
    _, loop_type = FAILURES["repeated_call"]
    model = FAILURES["repeated_call"][0](task)
    transcript = run_episode(None, task, GenerationConfig(), max_replies=5, generate_fn=model)
    assert len(transcript.steps) == 5 and loop_type == transcript.error_type == "loop"
    assert [s.observation for s in transcript.steps[1:]] == [{"error": "repeated_call"}] * 4
    assert transcript.steps[0].observation != {"error": "repeated_call"}


def test_gold_replay_changes_state_only_for_writing_tasks():
    for task in TASKS:
        start = world_for(task).end_state()
        writes = any(a["name"] in ("add_to_cart", "checkout_guest", "create_invoice", "register_course")
                     for a in task["gold_actions"])
        assert (gold_end_state(task) != start) == writes, task["id"]


def test_success_needs_finish_state_and_outputs():
    task = make_task("office_invoice", "train", 4)
    world = replay(task, task["gold_actions"])
    steps = [type("S", (), {"call": a, "error": None})() for a in task["gold_actions"]]
    answer = task["gold_actions"][-1]["arguments"]["answer"]
    assert grade(task, world, answer, steps).success
    assert grade(task, world, "Done.", steps).error_type == "wrong_value"
    assert grade(task, world, None, steps[:-1]).error_type == "step_limit"
    assert grade(task, world_for(task), answer, steps).error_type == "wrong_value"


def test_answer_contains_whole_tokens_only():
    assert answer_contains("Total $50.", "$50") and answer_contains("order o512 placed", "O512")
    assert not answer_contains("Total $500.", "$50") and not answer_contains("V1234", "V123")


def a_request_that_reads_and_names_nothing() -> dict:
    """An office-six draw whose last request ("and her invoices?") finds none: the set skips such
    chains (office_six.gradable); the grader must still not pass any finish on them."""
    for seed in range(600, 700):
        chain = conversations.draw("heldout", seed, office_six.PHRASING, plan=conversation_sets.SIX_OFFICE)
        if chain is not None and not office_six.gradable(chain["turns"][-1]):
            chain["id"] = f"draw-{seed}"
            return conversations.turn_task(chain, len(chain["turns"]) - 1)
    raise AssertionError("no draw in 600-699 ends on an empty lookup")


def test_a_read_only_request_with_nothing_to_name_needs_its_lookups():
    task = a_request_that_reads_and_names_nothing()
    world = replay(task, task["gold_actions"])       # read-only: the same as the start
    gold_calls = [a for a in task["gold_actions"] if a["name"] != "finish"]
    step = lambda call: type("S", (), {"call": call, "error": None})()  # noqa: E731
    answer = {"name": "finish", "arguments": {"answer": "She has no invoices."}}
    assert grade(task, world, "She has no invoices.", [step(c) for c in gold_calls] + [step(answer)]).success
    idle = grade(task, world, "She has no invoices.", [step(answer)])
    assert not idle.success and idle.error_type == "wrong_tool" and "never called" in idle.reason
    lookup = gold_calls[-1]
    elsewhere = {**lookup, "arguments": {**lookup["arguments"], "customer_id": "C-0000"}}
    before = [step(c) for c in gold_calls[:-1]]
    wrong = grade(task, world, "She has no invoices.", before + [step(elsewhere), step(answer)])
    assert not wrong.success and wrong.error_type == "wrong_value" and "wrong place" in wrong.reason
    # an optional filter may be left out, not changed; an id must be as written (the tools read "c303" as unknown)
    unfiltered = {"name": lookup["name"], "arguments": {"customer_id": lookup["arguments"]["customer_id"]}}
    assert grade(task, world, "None.", before + [step(unfiltered), step(answer)]).success
    lowered = {"name": lookup["name"], "arguments": {"customer_id": lookup["arguments"]["customer_id"].lower()}}
    assert grade(task, world, "None.", before + [step(lowered), step(answer)]).error_type == "wrong_value"
    other = "unpaid" if lookup["arguments"]["status"] == "paid" else "paid"
    refiltered = {"name": lookup["name"], "arguments": {**lookup["arguments"], "status": other}}
    assert grade(task, world, "None.", before + [step(refiltered), step(answer)]).error_type == "wrong_value"
