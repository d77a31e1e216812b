"""Requests for a product the shop does not stock at all (tasks.py shop_absent) and for clothes
it never sells (shop_unknown, "a raincoat"): the search finds nothing and the honest answer is the
near miss's sentence. Training-corpus intents kept out of the committed benchmark sets; their own
check sets are world/heldout_absent.json and heldout_unknown.json."""

import json
import re
from collections import Counter

import pytest

from engine.trace import GenerationConfig
from tests.world.heldout_values import assert_heldout_values
from training.corpus import corpus_lines, default_intents
from world import entities, grammar
from world.agent import run_episode
from world.grader import grade
from world.oracle import OracleModel
from world.start import world_for
from world.task_sets import ABSENT_PATH, ABSENT_SEED, UNKNOWN_PATH, UNKNOWN_SEED, load_heldout_tasks, make_absent_set
from world.tasks import (
    ABSENT_INTENT,
    AGENT_INTENTS,
    ALL_INTENTS,
    PHRASING_INTENTS,
    UNKNOWN_INTENT,
    build_task,
    task_seeds,
)
from world.templates import ANSWERS

ABSENT = load_heldout_tasks(ABSENT_PATH)
CHECK_SETS = {ABSENT_INTENT: (ABSENT_PATH, ABSENT_SEED), UNKNOWN_INTENT: (UNKNOWN_PATH, UNKNOWN_SEED)}
BOTH = pytest.mark.parametrize("intent", list(CHECK_SETS))


def style_split(intent: str, style: str) -> str | None:
    """The split of a style the shop never sells; None for one of its own styles (all shared)."""
    if intent == ABSENT_INTENT:
        assert style in entities.STYLES
        return None
    assert style in entities.UNKNOWN_STYLES or entities.is_made_up("unknown_style", style)
    return entities.split_of("unknown_style", style)


class Step:
    def __init__(self, call=None, error=None):
        self.call, self.error = call, error


@BOTH
@pytest.mark.parametrize("split,phrasing", [("train", "train"), ("heldout", "heldout"), ("train", "template")])
def test_the_oracle_solves_300_tasks_and_its_search_finds_nothing(intent, split, phrasing):
    failed, wordings = [], Counter()
    for _, seed in task_seeds(split, 300, 7, [intent]):
        task, steps, final = build_task(intent, split, seed, phrasing)
        slots = task["slots"]
        wordings[slots["wording"]] += 1
        assert style_split(intent, slots["style"]) in (None, split)
        assert [c.name for c, _ in steps] == ["search_products"] and steps[0][1] == []
        assert slots["style"] not in {p["style"] for p in world_for(task).products.values()}
        assert final.arguments["answer"] == ANSWERS["shop_near_miss"].format(**slots)
        if not run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success:
            failed.append(task["id"])
    assert failed == [] and min(wordings.values()) > 100


@BOTH
def test_an_invented_product_another_style_or_an_add_fails_the_grade(intent):
    task = load_heldout_tasks(CHECK_SETS[intent][0])[0]
    right = task["gold_actions"][-1]["arguments"]["answer"]
    search = Step({"name": "search_products", "arguments": task["gold_actions"][0]["arguments"]})
    assert grade(task, world_for(task), right, [search, Step({"name": "finish"})]).success
    assert not grade(task, world_for(task), "Found P1E3 for $112.", [search, Step({"name": "finish"})]).success
    other = next(s for s in entities.STYLES if s != task["slots"]["style"])
    assert not grade(task, world_for(task), right.replace(task["slots"]["style"], other),
                     [search, Step({"name": "finish"})]).success
    world = world_for(task)
    some = sorted(world.products)[0]
    world.cart.append([some, sorted(world.products[some]["stock"])[0], 1])   # an add of some other product
    assert not grade(task, world, right, [search, Step({"name": "add_to_cart"}), Step({"name": "finish"})]).success


@BOTH
def test_the_training_split_holds_no_heldout_value_or_wording(intent):
    matcher, heldout_combos = grammar.heldout_matcher(), set(entities.pool("combo", "heldout"))
    heldout_styles = set(entities.pool("unknown_style", "heldout"))
    assert heldout_styles and set(entities.pool("unknown_style", "train"))
    for _, seed in task_seeds("train", 300, 8, [intent]):
        task = build_task(intent, "train", seed, "train")[0]
        words = set(re.findall(r"[a-z]+", task["instruction"].lower()))
        assert not words & (heldout_styles | {entities.plural(s) for s in heldout_styles}), task["instruction"]
        slots = task["slots"]
        assert f"{slots['color']}|{slots['size']}" not in heldout_combos
        assert all(entities.split_of("product", pid) == "train" for pid in world_for(task).products)
        assert not matcher.search(task["instruction"]), task["instruction"]


@BOTH
def test_it_is_in_the_training_corpus_and_not_in_the_benchmark_intents(intent):
    assert intent not in AGENT_INTENTS + PHRASING_INTENTS + ALL_INTENTS
    for phrasing in ("template", "train"):
        assert intent in default_intents(phrasing)
        n = 2 * len(default_intents(phrasing))
        records = [r for r in corpus_lines("train", n, 5, phrasing=phrasing) if r["intent"] == intent]
        assert len(records) == 2
        for r in records:
            roles = [m["role"] for m in r["messages"]]
            assert roles == ["user", "assistant", "tool", "assistant"] and r["messages"][2]["content"] == "[]"
            assert "not available" in r["messages"][3]["content"]


@BOTH
def test_the_check_set_is_what_the_code_makes_and_is_held_out(intent):
    path, seed = CHECK_SETS[intent]
    tasks = load_heldout_tasks(path)
    assert tasks == json.loads(json.dumps(make_absent_set(seed=seed, intent=intent)))
    assert len(tasks) == 20 and len({t["id"] for t in tasks}) == 20
    assert Counter(t["slots"]["wording"] for t in tasks) == {"look": 10, "act": 10}
    matcher = grammar.heldout_matcher()
    for task in tasks:
        assert task["intent"] == intent and task["split"] == "heldout"
        assert style_split(intent, task["slots"]["style"]) in (None, "heldout")
        assert task["phrasing"]["split"] == "heldout" and "template" not in task["phrasing"]["frame"]
        assert_heldout_values(task, world_for(task))
        assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success, task["id"]
    # typos aside, each instruction is built on a held-out frame
    assert sum(bool(matcher.search(t["instruction"])) for t in tasks) >= 0.85 * len(tasks)
