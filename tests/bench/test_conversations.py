"""bench/conversations.py: per-request and per-conversation success and pass^3, with
the oracle standing in for a model (through the real generation loop) and a babbling baseline."""

import json

from bench import main
from bench.agent import table
from bench.conversations import run_conversation_benchmark
from engine.trace import GenerationConfig
from tests.world.scripted import babbling_ar, oracle_conversations
from world import conversation_sets

CONFIG = GenerationConfig(gen_length=256, block_size=32, steps=32, sampler="threshold", threshold=0.9)


def test_the_oracle_holds_every_conversation_and_a_babbler_none():
    conversations = conversation_sets.load_conversations()[:3]
    report = run_conversation_benchmark({"A": oracle_conversations(), "B": babbling_ar()}, conversations,
                                        attempts=3, config=CONFIG, system=None, warmup=False)
    a, b = report["models"]["A"], report["models"]["B"]
    requests = sum(len(c["turns"]) for c in conversations)
    assert a["attempts"] == 3 * requests and a["success_rate"] == 1.0 and a["pass_hat_3"] == 1.0
    assert a["conversations"] == 9 and a["conversation_success_rate"] == 1.0 and a["conversation_pass_hat_3"] == 1.0
    assert b["successes"] == 0 and b["conversation_successes"] == 0 and b["conversation_pass_hat_3"] == 0.0
    assert sum(g["attempts"] for g in report["groups"]["A"].values()) == 3 * requests
    assert report["requests"] == requests and report["reads"] == "declared"
    shown = table(report)
    assert "conversations 9/9 (100.0%), pass^3 1.000" in shown and "follow-up" in shown


def test_the_cli_runs_a_sample_of_the_conversation_set(capsys):
    code = main(["agent", "--model", "py:tests.world.scripted:oracle_conversations", "--task-set", "conversations",
                 "--sample", "2", "--attempts", "1", "--no-warmup", "--json", "--system", "none",
                 "--gen-length", "256", "--block-size", "32", "--steps", "32", "--sampler", "threshold",
                 "--threshold", "0.9"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["tasks"] == 2 and report["task_set"].endswith("2 spread evenly")
    model = report["models"]["py:tests.world.scripted:oracle_conversations"]
    assert model["conversation_success_rate"] == 1.0 and model["success_rate"] == 1.0
    assert main(["agent", "--model", "py:tests.world.scripted:oracle_conversations", "--task-set", "handwritten",
                 "--validation", "3"]) == 2              # a hand-written set has no validation draw


def test_the_cost_by_position_counts_each_request_once_and_the_history_grows():
    conversations = conversation_sets.load_conversations()[:4]
    report = run_conversation_benchmark({"A": oracle_conversations()}, conversations, attempts=2, config=CONFIG,
                                        system=None, warmup=False)
    cost = report["by_position"]["A"]
    rows = cost["positions"]
    longest = max(len(c["turns"]) for c in conversations)
    assert [r["position"] for r in rows] == list(range(1, longest + 1))
    for r in rows:   # every request at position k of every conversation that long, each attempt
        assert r["requests"] == 2 * sum(len(c["turns"]) >= r["position"] for c in conversations)
        assert r["median_request_s"] > 0 and r["median_forward_ms"] > 0
    history = [r["median_history_tokens"] for r in rows]
    assert history[0] > 0 and history == sorted(history) and history[-1] > history[0]  # earlier turns are read
    ratio = cost["position_ratio"]
    assert ratio["position"] == min(longest, 6)
    assert ratio["history_tokens"] == history[ratio["position"] - 1] / history[0]
    assert "position 1:" in table(report) and "/ position 1:" in table(report)


def test_the_position_ratio_reads_position_six_or_the_last_there_is():
    from bench.conversations import position_ratio

    def row(k, s):
        return {"position": k, "requests": 1, "median_request_s": s, "median_forward_ms": 2 * s,
                "median_history_tokens": 10 * k}
    assert position_ratio([row(1, 1.0)]) is None
    assert position_ratio([row(1, 1.0), row(2, 3.0), row(3, 4.0)]) == {
        "position": 3, "request_s": 4.0, "forward_ms": 4.0, "history_tokens": 3.0}
    seven = [row(k, float(k)) for k in range(1, 8)]
    assert position_ratio(seven)["position"] == 6 and position_ratio(seven)["request_s"] == 6.0


def test_the_cli_runs_the_office_six_chains_graded_per_request_and_per_chain(capsys):
    from world.office_six import load_office_six

    chains = load_office_six()
    code = main(["agent", "--model", "py:tests.world.scripted:oracle_office_six", "--baseline",
                 "py:tests.world.scripted:babbling_ar", "--task-set", "office-six", "--tasks", "3", "--attempts", "3",
                 "--no-warmup", "--json", "--system", "none", "--gen-length", "256", "--block-size", "32",
                 "--steps", "32", "--sampler", "threshold", "--threshold", "0.9"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["tasks"] == 3 and report["requests"] == 18
    assert report["task_set"] == "office-six benchmark"
    assert report["via"] == "world" and report["browser_ms_per_call"] is None
    oracle = report["models"]["py:tests.world.scripted:oracle_office_six"]
    babbler = report["models"]["py:tests.world.scripted:babbling_ar"]
    assert oracle["attempts"] == 54 and oracle["pass_hat_3"] == 1.0 and oracle["conversation_pass_hat_3"] == 1.0
    assert oracle["conversations"] == 9 and oracle["conversation_success_rate"] == 1.0
    assert babbler["successes"] == 0 and babbler["conversation_pass_hat_3"] == 0.0
    assert len(chains) >= 10 and report["median_ratio"] is not None
