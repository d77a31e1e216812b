"""CI-sized quality check of the committed Sprout-BD on requests worded the way people write
them: held-out sentence frames and values (world/heldout_phrasing_tasks.json, every fifth
task: one- and two-goal requests, missing details and an outside-the-world question). Greedy
block diffusion, fixed tasks, nothing timed."""

from pathlib import Path

from bench.agent import DEFAULT_CONFIG
from engine.backends.sprout import load
from world.agent import run_episode
from world.task_sets import PHRASING_PATH, load_heldout_tasks

MODELS = Path(__file__).resolve().parents[2] / "models"
FLOOR = 8          # of the 10: the bar for the shipped model


def test_shipped_bd_solves_held_out_phrasings():
    backend = load(MODELS / "sprout-bd", "cpu")
    tasks = load_heldout_tasks(PHRASING_PATH)[::5][:10]
    assert len(tasks) == 10
    results = {t["id"]: run_episode(backend, t, DEFAULT_CONFIG) for t in tasks}
    solved = [tid for tid, tr in results.items() if tr.success]
    failed = {tid: tr.error_type for tid, tr in results.items() if not tr.success}
    assert len(solved) >= FLOOR, f"solved {len(solved)}/10; failures: {failed}"
