"""The decode benchmark CLI runs end to end on a very small random model (not a timing test)."""

from __future__ import annotations

import json

from engine import bench


def test_decode_benchmark_reports_engine_and_reference(capsys):
    code = bench.main(["decode", "--model", "random:llada", "--hidden", "32", "--layers", "1", "--gen-length", "8",
                       "--block-size", "4", "--steps", "4", "--repeats", "1", "--reference", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["same_canvases"] is True
    for run in ("engine", "reference"):
        assert report[run]["forwards"] >= 2 * len(bench_prompts())
        assert report[run]["new_tokens"] == 8 * len(bench_prompts())
    assert report["overhead"] > 0


def test_unknown_decoding_is_a_sentence(capsys):
    assert bench.main(["decode", "--model", "random:llada", "--decoding", "nope"]) == 2
    assert "Unknown decoding 'nope'" in capsys.readouterr().err


def bench_prompts():
    from engine.bench_decode import PROMPTS

    return PROMPTS
