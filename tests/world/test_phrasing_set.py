"""The held-out phrasing benchmark (world/heldout_phrasing_tasks.json): committed,
balanced, held-out in wording and in values, solvable; its validation split; and
`bench.agent agent --task-set phrasing`."""

import json
from collections import Counter

from bench import main
from engine.trace import GenerationConfig
from tests.world.heldout_values import assert_heldout_values
from world import grammar
from world.agent import run_episode
from world.oracle import OracleModel
from world.start import world_for
from world.task_sets import (
    PHRASING_PATH,
    PHRASING_SIZE,
    TASK_SETS,
    load_heldout_tasks,
    make_phrasing_set,
    phrasing_validation_tasks,
)
from world.tasks import OUTSIDE_INTENTS, PHRASING_INTENTS, TWO_GOAL_INTENTS, task_group

PHRASED = load_heldout_tasks(PHRASING_PATH)
BENCH_ARGS = ["--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none"]


def test_the_file_is_what_the_code_makes():
    assert PHRASED == json.loads(json.dumps(make_phrasing_set()))


def test_49_tasks_balanced_across_every_phrased_intent():
    assert len(PHRASED) == PHRASING_SIZE == 49 and len({t["id"] for t in PHRASED}) == 49
    counts = Counter(t["intent"] for t in PHRASED)
    assert counts.keys() == set(PHRASING_INTENTS) and max(counts.values()) - min(counts.values()) <= 1
    groups = Counter(task_group(t) for t in PHRASED)
    assert groups["two goals"] >= 2 * len(TWO_GOAL_INTENTS) - 1 and groups["outside"] >= 2 * len(OUTSIDE_INTENTS) - 1


def test_wording_and_values_are_held_out():
    matcher = grammar.heldout_matcher()
    for task in PHRASED:
        assert task["split"] == "heldout" and task["phrasing"]["split"] == "heldout"
        assert "template" not in task["phrasing"]["frame"]
        world = world_for(task)
        assert_heldout_values(task, world)
    # typos aside, each instruction is built on a held-out frame, clause or joiner
    assert sum(bool(matcher.search(t["instruction"])) for t in PHRASED) >= 0.85 * len(PHRASED)


def test_the_oracle_solves_every_task():
    for task in PHRASED:
        assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success, task["id"]


def test_validation_split_is_phrased_alike_but_not_the_benchmark():
    tasks = phrasing_validation_tasks(60)
    assert len(tasks) == 60 and {t["intent"] for t in tasks} == set(PHRASING_INTENTS)
    assert all(t["split"] == "heldout" and t["phrasing"]["split"] == "heldout" for t in tasks)
    assert not {t["id"] for t in tasks} & {t["id"] for t in PHRASED}
    assert set(TASK_SETS) == {"templates", "phrasing", "words", "tshirts"}


def test_cli_runs_the_phrasing_set_by_name(capsys):
    code = main(["agent", "--model", "py:tests.world.scripted:oracle_ar_phrasing", "--task-set", "phrasing",
                 "--attempts", "1", "--json", *BENCH_ARGS])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["task_set"] == "phrasing benchmark" and report["tasks"] == 49
    model = report["models"]["py:tests.world.scripted:oracle_ar_phrasing"]
    assert model["successes"] == 49 and model["errors"] == {}
    groups = report["groups"]["py:tests.world.scripted:oracle_ar_phrasing"]
    assert groups["outside"] == {"attempts": 8, "successes": 8, "tool_calls": 0}
    assert sum(g["attempts"] for g in groups.values()) == 49
    # a babbling model fails them all; the table shows the groups
    assert main(["agent", "--model", "py:tests.world.scripted:babbling_ar", "--task-set", "phrasing", "--tasks", "10",
                 "--attempts", "1", *BENCH_ARGS]) == 0
    out = capsys.readouterr().out
    assert "by group:" in out and "tasks: phrasing benchmark, 10 x 1" in out
    assert main(["agent", "--model", "py:tests.world.scripted:babbling_ar", "--task-set", "phrasing",
                 "--tasks-file", str(PHRASING_PATH)]) == 2
    assert "not both" in capsys.readouterr().err


def test_cli_phrasing_validation(capsys):
    assert main(["agent", "--model", "py:tests.world.scripted:babbling_ar", "--task-set", "phrasing",
                 "--validation", "3", "--attempts", "1", "--json", *BENCH_ARGS]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task_set"] == "phrasing validation (3)" and report["tasks"] == 3
