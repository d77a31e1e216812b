"""bench/agent.py: the agent benchmark, as a function and as the CLI, with tiny fake models."""

import json
from math import comb

import pytest

from bench import main
from bench.agent import run_agent_benchmark
from bench.episodes import pass_hat_k
from bench.report import percentile
from engine.trace import GenerationConfig
from tests.world.scripted import babbling_ar, oracle_diffusion
from world.task_sets import load_heldout_tasks, validation_tasks

FIELDS = {"attempts", "successes", "success_rate", "pass_hat_3", "median_task_s", "p90_task_s", "mean_nfe",
          "tokens_per_forward", "forwards_per_call", "scaffold", "errors", "edits"}
CONFIG = GenerationConfig(gen_length=256, block_size=32, steps=32, sampler="threshold", threshold=0.9)


def test_pass_hat_k_is_the_tau_bench_formula():
    assert pass_hat_k([(3, 3), (0, 3)]) == 0.5
    assert pass_hat_k([(4, 5)]) == pytest.approx(comb(4, 3) / comb(5, 3))
    assert pass_hat_k([(2, 2)]) is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90) == pytest.approx(4.6) and percentile([7.0], 90) == 7.0


def test_two_models_interleaved_per_task():
    tasks = load_heldout_tasks()[:2]
    a, b = oracle_diffusion(tasks), babbling_ar()
    seen = []
    report = run_agent_benchmark({"A": a, "B": b}, tasks, attempts=3, config=CONFIG, system=None,
                                 progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (12, 12)
    m, base = report["models"]["A"], report["models"]["B"]
    assert set(m) == set(base) == FIELDS
    assert m["attempts"] == 6 and m["successes"] == 6 and m["pass_hat_3"] == 1.0 and m["errors"] == {}
    assert base["successes"] == 0 and base["errors"] == {"parse_error": 6} and base["pass_hat_3"] == 0.0
    assert m["tokens_per_forward"] > 1.0 and 0 < base["tokens_per_forward"] <= 1.0
    assert report["median_ratio"] == pytest.approx(m["median_task_s"] / base["median_task_s"])
    assert m["p90_task_s"] >= m["median_task_s"] > 0
    # warm-up + 6 counted episodes, each with its own seed (0, 1, 2 per task)
    assert a.prefill_calls >= 1 + 6


def test_cli_end_to_end_json(capsys):
    code = main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--baseline",
                 "py:tests.world.scripted:babbling_ar", "--tasks", "3", "--attempts", "3", "--json",
                 "--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert set(report) >= {"models", "median_ratio"}
    models = report["models"]
    a, b = models["py:tests.world.scripted:oracle_ar"], models["py:tests.world.scripted:babbling_ar"]
    assert set(a) == set(b) == FIELDS
    assert a["attempts"] == 9 and a["success_rate"] == 1.0 and a["pass_hat_3"] == 1.0
    assert b["errors"] == {"parse_error": 9}
    assert isinstance(report["median_ratio"], float) and "18/18 episodes" in err
    assert report["config"]["scaffold_threshold"] == 0.95                     # the default, recorded


def test_cli_scaffold_threshold_reaches_the_config(capsys):
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--tasks", "1", "--attempts", "1", "--json",
                 "--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none",
                 "--scaffold-threshold", "0.8"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["scaffold_threshold"] == 0.8
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--scaffold-threshold", "1.5"]) == 2
    assert "Scaffold threshold must be a number between 0 and 1" in capsys.readouterr().err


def test_cli_table_and_errors(capsys):
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--tasks", "1", "--attempts", "1",
                 "--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none"]) == 0
    out = capsys.readouterr().out
    assert "success" in out and "1/1" in out and "ratio" not in out
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--block-size", "48"]) == 2
    assert "does not divide" in capsys.readouterr().err
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--tasks", "50"]) == 2


def test_cli_validation_tasks_are_not_the_benchmark(capsys):
    code = main(["agent", "--model", "py:tests.world.scripted:babbling_ar", "--validation", "4", "--attempts", "1",
                 "--json", "--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["task_set"] == "validation (4)" and report["tasks"] == 4
    assert report["models"]["py:tests.world.scripted:babbling_ar"]["errors"] == {"parse_error": 4}
    benchmark = {t["id"] for t in load_heldout_tasks()}
    assert benchmark and not benchmark & {t["id"] for t in validation_tasks(4)}
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--validation", "0"]) == 2
    assert "--validation must be at least 1" in capsys.readouterr().err


def test_cli_writes_one_line_per_episode(capsys, tmp_path):
    path = tmp_path / "episodes.jsonl"
    code = main(["agent", "--model", "py:tests.world.scripted:oracle_ar", "--baseline",
                 "py:tests.world.scripted:babbling_ar", "--tasks", "2", "--attempts", "2", "--json",
                 "--gen-length", "256", "--block-size", "32", "--steps", "32", "--system", "none",
                 "--episodes", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 8 and not list(tmp_path.glob("*.partial"))
    by_model = {name: [r for r in rows if r["model"] == name] for name in json.loads(out)["models"]}
    oracle, babble = by_model["py:tests.world.scripted:oracle_ar"], by_model["py:tests.world.scripted:babbling_ar"]
    assert [r["success"] for r in oracle] == [True] * 4 and [r["attempt"] for r in oracle] == [0, 1, 0, 1]
    assert oracle[0]["calls"][-1]["name"] == "finish" and oracle[0]["final_answer"]
    assert {r["error_type"] for r in babble} == {"parse_error"} and "error" in babble[0]["calls"][0]
    assert [r["task_id"] for r in oracle] == [t["id"] for t in load_heldout_tasks()[:2] for _ in range(2)]


class SlowToOpen:
    """A venue whose pages take OPEN_S to open and whose tools run on the World (world.agent's
    PageTools): what the benchmark reports through the pages, without a browser."""
    OPEN_S = 0.05

    def __init__(self) -> None:
        from types import SimpleNamespace
        self.driver = SimpleNamespace(call_ms=[], webmcp="polyfill")   # whose WebMCP the report names

    def episode(self, _task, world):
        import time

        from world.format import ToolSet
        from world.tools import TOOLS, call_tool
        time.sleep(self.OPEN_S)

        class Tools:
            tools = ToolSet(list(TOOLS))

            @staticmethod
            def execute(call):
                return call_tool(world, call["name"], call["arguments"])
        return Tools()


def test_through_the_pages_the_time_to_open_them_is_reported_apart():
    tasks = load_heldout_tasks()[:2]
    a, b = oracle_diffusion(tasks), babbling_ar()
    report = run_agent_benchmark({"A": a, "B": b}, tasks, attempts=1, config=CONFIG, system=None,
                                 pages=SlowToOpen(), warmup=False)
    m, base = report["models"]["A"], report["models"]["B"]
    assert report["via"] == "webmcp" and report["webmcp"] == "polyfill" and m["successes"] == 2
    for model in (m, base):
        assert model["median_open_s"] >= SlowToOpen.OPEN_S
        assert model["median_task_s_after_open"] < model["median_task_s"] - SlowToOpen.OPEN_S * 0.9
    assert report["median_ratio_after_open"] == pytest.approx(m["median_task_s_after_open"]
                                                              / base["median_task_s_after_open"])


def test_through_the_world_no_open_time_is_reported():
    tasks = load_heldout_tasks()[:1]
    report = run_agent_benchmark({"A": oracle_diffusion(tasks), "B": babbling_ar()}, tasks, attempts=1,
                                 config=CONFIG, system=None, warmup=False)
    assert report["median_ratio_after_open"] is None and "median_open_s" not in report["models"]["A"]
