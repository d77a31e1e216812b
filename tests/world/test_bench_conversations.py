"""bench/agent.py on conversations: per-request and per-conversation success and pass^3, with
the oracle standing in for a model (through the real generation loop) and a babbling baseline."""

import json

from bench import main
from bench.agent import run_conversation_benchmark, table
from engine.trace import GenerationConfig
from tests.world.scripted import babbling_ar, oracle_conversations
from world import conversations as C

CONFIG = GenerationConfig(gen_length=256, block_size=32, steps=32, sampler="threshold", threshold=0.9)


def test_the_oracle_holds_every_conversation_and_a_babbler_none():
    conversations = C.load_conversations()[:3]
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
