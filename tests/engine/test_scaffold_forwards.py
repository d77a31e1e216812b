"""Every forward a scaffolded generation runs is one it counts: on a real (tiny, random) Sprout-BD
the number of model passes after the prompt's prefill equals the Result's NFE, with and without
logit shift, on the grid (blocks the scaffold's text fills wait for the next denoise as one
chunk) and with sliding blocks. Forwards per tool call in the benchmark are these NFE."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from engine.generate import run as run_with
from engine.trace import GenerationConfig
from tests.engine.test_scaffold import fuzzed_prompt
from tests.engine.test_scaffold_schemas import check_frames
from tests.scaffold_models import sprout_twins
from world.format import TOOL_CALLS

run = partial(run_with, tools=TOOL_CALLS)   # scaffolded tool calls are written from the world's registry

PASSES = ("prefill", "commit", "denoise", "commit_then_denoise")


def count_passes(backend, monkeypatch) -> dict[str, int]:
    """Model passes by kind, counted from the end of the backend's `prefill` on (the prompt's
    pieces other than the last run there, once per prompt, counted by no loop)."""
    counts = dict.fromkeys(PASSES, 0)
    for name in PASSES:
        original = getattr(backend.model, name)
        monkeypatch.setattr(backend.model, name,
                            lambda *a, _o=original, _n=name, **k: counts.__setitem__(_n, counts[_n] + 1) or _o(*a, **k))
    prefill = backend.prefill

    def prefill_then_reset(*a, **k):
        out = prefill(*a, **k)
        counts.update(dict.fromkeys(PASSES, 0))
        return out

    monkeypatch.setattr(backend, "prefill", prefill_then_reset)
    return counts


@pytest.mark.parametrize("shift", [False, True], ids=["no-shift", "logit-shift"])
@pytest.mark.parametrize("mode", ["plain", "grid", "sliding"])
def test_every_model_pass_is_a_counted_forward(monkeypatch, shift, mode):
    """The plain loop too: the scaffolded forwards per call are compared with its."""
    backend = sprout_twins(seed=2)[0]
    monkeypatch.setattr(backend.model.config, "logit_shift", shift)
    monkeypatch.setattr(backend.model.config, "sliding_blocks", mode == "sliding")
    counts = count_passes(backend, monkeypatch)
    # blocks of 4 and a low threshold: the scaffold's fixed text fills whole blocks
    config = GenerationConfig(gen_length=64, block_size=4, steps=4, sampler="prefix_threshold", threshold=0.3,
                              scaffold=mode != "plain")
    rng = torch.Generator().manual_seed(11)
    whole_blocks_filled = 0
    for _ in range(6):
        result = run(backend, backend.encode_chat(fuzzed_prompt(rng)), config)
        if mode != "plain":
            check_frames(result.frames, backend.mask_id)
        assert result.stats.nfe == len(result.frames) > 0
        assert sum(counts.values()) == result.stats.nfe, counts
        assert counts["commit"] == counts["prefill"] == 0, "a pass ran alone outside the counted forwards"
        jumps = [b.block - a.block for a, b in zip(result.frames, result.frames[1:])]
        whole_blocks_filled += sum(j > 1 for j in jumps)
        counts.update(dict.fromkeys(PASSES, 0))
    assert mode != "grid" or whole_blocks_filled > 0    # the construction reaches consecutive commits


def test_consecutive_commits_wait_as_one_chunk_and_read_as_the_reference():
    """Two blocks committed back to back then a denoise: one pass, the logits of the commit-by-
    commit reference (up to float rounding)."""
    fused = sprout_twins(seed=4)[0]
    reference = type(fused)(fused.model, fused.tokenizer, fuse_commit=False)
    ids = torch.tensor([fused.encode_chat([{"role": "user", "content": "Add a blue dress in size L."}])])
    canvas = torch.randint(5, 40, (1, 24))                                      # (1, L)
    canvas[0, 16:] = fused.mask_id
    logits = {}
    for name, backend in (("fused", fused), ("reference", reference)):
        backend.prefill(ids)
        backend.commit(canvas, slice(0, 8))
        backend.commit(canvas, slice(8, 16))
        logits[name] = backend.denoise(canvas, slice(16, 24))                   # (1, 8, V)
    torch.testing.assert_close(logits["fused"], logits["reference"], rtol=1e-4, atol=1e-4)
    assert fused.settled_cache().length == reference.settled_cache().length == ids.shape[1] + 16
