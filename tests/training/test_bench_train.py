"""`python -m bench train` compares the training paths on the same batches in one run: every path
sees the same tokens, and the report names the CPU, each path's precision and the speed-ups."""

import json

import torch

from bench.train import PATHS
from bench.train import main as bench_train
from training import precision
from training.train import main as train


def test_bench_train_runs_every_path_on_the_same_batches(tmp_path, capsys):
    models = tmp_path / "models"
    common = ["--preset", "smoke", "--run-dir", str(tmp_path / "runs"), "--data-dir", str(tmp_path / "data"),
              "--agent-tasks", "0", "--max-steps", "1"]
    assert train([*common, "--twin", "ar", "--out", str(models / "sprout-ar")]) == 0
    assert train([*common, "--twin", "bd", "--out", str(models / "sprout-bd"),
                  "--init-from", str(models / "sprout-ar")]) == 0
    capsys.readouterr()
    corpus = tmp_path / "data" / "corpus-train-smoke.jsonl"
    assert bench_train(["--models", str(models), "--corpus", str(corpus), "--steps", "2", "--max-tokens", "256",
                        "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    copy_here = precision.choose("auto", torch.device("cpu")).bf16_copy
    want = [p for p in PATHS if p != "autocast" or copy_here]
    for twin in ("ar", "bd"):
        runs = [r for r in report["runs"] if r["twin"] == twin]
        assert [r["path"] for r in runs] == want
        assert len({r["tokens"] for r in runs}) == 1 and runs[0]["tokens"] > 0     # the same batches
        assert all(r["steps"] == 2 and r["tokens_per_cpu_s"] > 0 for r in runs)
        assert runs[0]["precision"] == "fp32"
        speed = report["speedup"][twin]
        assert speed["cpu"] > 0 and ("cpu_over_autocast" in speed) == copy_here
    assert report["cpu"] and report["precision_reason"]
