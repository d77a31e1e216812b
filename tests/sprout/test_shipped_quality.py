"""CI-sized quality check of the committed Sprout-BD: greedy block diffusion solves held-out
agent tasks. A correctness test: the ten tasks are fixed (every fourth held-out agent task),
decoding is deterministic, and nothing is timed."""

from pathlib import Path

from bench.agent import DEFAULT_CONFIG
from engine.backends.sprout import load
from world.agent import run_episode
from world.task_sets import load_heldout_tasks

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_shipped_bd_solves_at_least_8_of_10_held_out_tasks():
    backend = load(MODELS / "sprout-bd", "cpu")
    tasks = [t for t in load_heldout_tasks() if t["domain"] != "document"][::4][:10]
    assert len(tasks) == 10
    results = {t["id"]: run_episode(backend, t, DEFAULT_CONFIG) for t in tasks}
    solved = [tid for tid, tr in results.items() if tr.success]
    failed = {tid: tr.error_type for tid, tr in results.items() if not tr.success}
    assert len(solved) >= 8, f"solved {len(solved)}/10; failures: {failed}"
