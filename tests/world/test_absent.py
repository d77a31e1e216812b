"""Requests for a product the shop does not stock at all (tasks.py shop_absent): the search
finds nothing and the honest answer is the near miss's sentence. A training-corpus intent kept
out of the committed benchmark sets; its own check set is engine/world/heldout_absent.json."""

import json
from collections import Counter

import pytest

from engine.agent import run_episode
from engine.trace import GenerationConfig
from engine.world import entities as E
from engine.world import grammar
from engine.world.grader import grade
from engine.world.oracle import OracleModel
from engine.world.state import world_for
from engine.world.tasks import (
    ABSENT_INTENT,
    ABSENT_PATH,
    AGENT_INTENTS,
    ALL_INTENTS,
    PHRASING_INTENTS,
    build_task,
    load_heldout_tasks,
    make_absent_set,
    task_seeds,
)
from engine.world.templates import ANSWERS
from tests.world.heldout_values import assert_heldout_values
from training.corpus import corpus_lines, default_intents

ABSENT = load_heldout_tasks(ABSENT_PATH)


class Step:
    def __init__(self, call=None, error=None):
        self.call, self.error = call, error


@pytest.mark.parametrize("split,phrasing", [("train", "train"), ("heldout", "heldout"), ("train", "template")])
def test_the_oracle_solves_300_tasks_and_its_search_finds_nothing(split, phrasing):
    failed, wordings = [], Counter()
    for _, seed in task_seeds(split, 300, 7, [ABSENT_INTENT]):
        task, steps, final = build_task(ABSENT_INTENT, split, seed, phrasing)
        slots = task["slots"]
        wordings[slots["wording"]] += 1
        assert [c.name for c, _ in steps] == ["search_products"] and steps[0][1] == []
        assert slots["style"] not in {p["style"] for p in world_for(task).products.values()}
        assert final.arguments["answer"] == ANSWERS["shop_near_miss"].format(**slots)
        if not run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success:
            failed.append(task["id"])
    assert failed == [] and min(wordings.values()) > 100


def test_an_invented_product_or_an_add_fails_the_grade():
    task = ABSENT[0]
    right = task["gold_actions"][-1]["arguments"]["answer"]
    search = Step({"name": "search_products", "arguments": task["gold_actions"][0]["arguments"]})
    assert grade(task, world_for(task), right, [search, Step({"name": "finish"})]).success
    assert not grade(task, world_for(task), "Found P1E3 for $112.", [search, Step({"name": "finish"})]).success
    world = world_for(task)
    some = sorted(world.products)[0]
    world.cart.append([some, sorted(world.products[some]["stock"])[0], 1])   # an add of some other product
    assert not grade(task, world, right, [search, Step({"name": "add_to_cart"}), Step({"name": "finish"})]).success


def test_the_training_split_holds_no_heldout_value_or_wording():
    matcher, heldout_combos = grammar.heldout_matcher(), set(E.pool("combo", "heldout"))
    for _, seed in task_seeds("train", 300, 8, [ABSENT_INTENT]):
        task = build_task(ABSENT_INTENT, "train", seed, "train")[0]
        slots = task["slots"]
        assert f"{slots['color']}|{slots['size']}" not in heldout_combos
        assert all(E.split_of("product", pid) == "train" for pid in world_for(task).products)
        assert not matcher.search(task["instruction"]), task["instruction"]


def test_it_is_in_the_training_corpus_and_not_in_the_benchmark_intents():
    assert ABSENT_INTENT not in AGENT_INTENTS + PHRASING_INTENTS + ALL_INTENTS
    for phrasing in ("template", "train"):
        assert ABSENT_INTENT in default_intents(phrasing)
        n = 2 * len(default_intents(phrasing))
        records = [r for r in corpus_lines("train", n, 5, phrasing=phrasing) if r["intent"] == ABSENT_INTENT]
        assert len(records) == 2
        for r in records:
            roles = [m["role"] for m in r["messages"]]
            assert roles == ["user", "assistant", "tool", "assistant"] and r["messages"][2]["content"] == "[]"
            assert "not available" in r["messages"][3]["content"]


def test_the_check_set_is_what_the_code_makes_and_is_held_out():
    assert ABSENT == json.loads(json.dumps(make_absent_set()))
    assert len(ABSENT) == 20 and len({t["id"] for t in ABSENT}) == 20
    assert Counter(t["slots"]["wording"] for t in ABSENT) == {"look": 10, "act": 10}
    matcher = grammar.heldout_matcher()
    for task in ABSENT:
        assert task["intent"] == ABSENT_INTENT and task["split"] == "heldout"
        assert task["phrasing"]["split"] == "heldout" and "template" not in task["phrasing"]["frame"]
        assert_heldout_values(task, world_for(task))
        assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success, task["id"]
    # typos aside, each instruction is built on a held-out frame
    assert sum(bool(matcher.search(t["instruction"])) for t in ABSENT) >= 0.85 * len(ABSENT)
