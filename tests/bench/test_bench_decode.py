"""The decode benchmark CLI runs end to end on very small random models (not a timing test)."""

from __future__ import annotations

import json

import pytest

import bench
from bench.decode import PROMPTS, RANDOM_MODELS, same_rounds


@pytest.mark.parametrize("model", sorted(RANDOM_MODELS))
def test_decode_benchmark_reports_engine_and_reference(capsys, model):
    code = bench.main(["decode", "--model", f"random:{model}", "--hidden", "32", "--layers", "1", "--gen-length", "8",
                       "--block-size", "4", "--steps", "4", "--repeats", "1", "--reference", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["decoding"] == RANDOM_MODELS[model].decoding
    assert report["same_canvases"] is True
    for run in ("engine", "reference"):
        assert report[run]["forwards"] >= len(PROMPTS)
        assert 0 < report[run]["new_tokens"] <= 8 * len(PROMPTS)      # never more than gen_length each
    assert report["overhead"] > 0 and report["overhead_per_forward"] > 0
    assert report["engine"]["edits"] == report["reference"]["edits"]           # counted alike
    if RANDOM_MODELS[model].decoding in ("llada", "dream", "fast_dllm_v2", "llada2"):
        assert report["engine"]["edits"] == 0                                  # these rules never rewrite


def test_joint_threshold_edits_on_the_random_llada2_model(capsys):
    """The draft-then-edit rule rewrites tokens on a random LLaDA2-shaped model at the benchmark's
    sizes (gen 64, blocks of 32), the same rewrites as its reference loop."""
    code = bench.main(["decode", "--model", "random:llada21", "--gen-length", "64", "--block-size", "32",
                       "--repeats", "1", "--reference", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["same_canvases"] is True and report["engine"]["edits"] == report["reference"]["edits"] > 0


def test_same_rounds_compares_every_round_or_the_references_prefix():
    assert same_rounds([[1, 2], [3, 4]], [[1, 2], [3, 4]], prefix=False)
    assert not same_rounds([[1, 2], [3, 4], [5, 6]], [[1, 2], [3, 4]], prefix=False)
    assert same_rounds([[1, 2, 9], [3, 4, 9], [5, 6, 7]], [[1, 2], [3, 4]], prefix=True)
    assert not same_rounds([[1, 2, 9], [3, 5, 9]], [[1, 2], [3, 4]], prefix=True)
    assert not same_rounds([[1, 2]], [[1, 2], [3, 4]], prefix=True)


def test_unknown_decoding_or_model_is_a_sentence(capsys):
    assert bench.main(["decode", "--model", "random:llada", "--decoding", "nope"]) == 2
    assert "Unknown decoding 'nope'" in capsys.readouterr().err
    assert bench.main(["decode", "--model", "random:nope"]) == 2
    assert "Unknown random model 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["llada", "dream"])
def test_decode_benchmark_with_each_cache(capsys, model):
    """Each cache against its own (cached) reference loop; fewer positions per forward with more cached."""
    per_forward = {}
    for cache in ("none", "prefix", "dual"):
        code = bench.main(["decode", "--model", f"random:{model}", "--hidden", "32", "--layers", "1", "--gen-length",
                           "16", "--block-size", "4", "--steps", "4", "--repeats", "1", "--reference", "--json",
                           "--cache", cache])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert report["config"]["cache"] == cache and report["same_canvases"] is True
        assert report["reference"]["positions_per_forward"] is None
        per_forward[cache] = report["engine"]["positions_per_forward"]
    if model == "llada":
        assert per_forward["dual"] < per_forward["prefix"] < per_forward["none"]
    else:                          # Dream's one block: both caches feed the canvas and one prompt position
        assert per_forward["dual"] == per_forward["prefix"] < per_forward["none"]


def test_a_cache_on_a_block_causal_model_is_a_sentence(capsys):
    assert bench.main(["decode", "--model", "random:sdar", "--hidden", "32", "--layers", "1", "--gen-length", "8",
                       "--block-size", "4", "--steps", "4", "--repeats", "1", "--cache", "dual"]) == 2
    assert "set cache to none" in capsys.readouterr().err.lower()        # aligned blocks: refused by the config
