"""The engine's prefix and dual caches (engine/backends/kv_window.py) decode as Fast-dLLM v1's
cached loops do (reference/fast_dllm_cache.py, and Dream's loop with a cache): same tiny
random model, matched noise, the canvas compared after every round and the logits to a tolerance.
The caches are not expected to equal the no-cache loop (stale keys and values): checked here at
block boundaries instead, where the cache must equal a fresh computation."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.generate import run
from engine.presets import DECODINGS
from engine.trace import GenerationConfig
from reference import dream as dream_reference
from reference import fast_dllm_cache as reference
from reference.noise import damp_mask_logit

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])   # 3, 8 and 5 tokens
PROMPT_IDS = ["p3", "p8", "p5"]
TEMPERATURES = (0.0, 0.5, 2.0)
CACHES = ("prefix", "dual")
RULES = {"llada": "llada", "fast_dllm_threshold": "threshold", "fast_dllm_factor": "factor"}


def tiny_backend(seed: int, logit_shift: bool) -> FullAttentionBackend:
    model = damp_mask_logit(tm.tiny_masked_lm(seed=seed), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID,
                                logit_shift=logit_shift, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def backend():
    return tiny_backend(3, False)


@pytest.fixture(scope="module")
def shifted():
    return tiny_backend(8, True)


class Recorded:
    """The backend's denoise, recording each round's block logits."""

    def __init__(self, backend):
        self.backend, self.logits = backend, []

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def denoise(self, canvas, block):
        logits = self.backend.denoise(canvas, block)
        self.logits.append(logits[0].clone())
        return logits


def engine_rounds(backend, prompt, decoding: str, **settings) -> tuple[list[list[int]], list[torch.Tensor]]:
    config = GenerationConfig(**{**DECODINGS[decoding].settings, "stop_on_eos": False, **settings})
    recorded = Recorded(backend)
    frames = run(recorded, prompt, config).frames
    return [frame.canvas for frame in frames], recorded.logits


def reference_rounds(backend, prompt, decoding: str, **settings) -> tuple[list[list[int]], list[torch.Tensor]]:
    logits: list[torch.Tensor] = []
    canvases = reference.decode(
        backend.model, prompt, cache=settings["cache"], mask_id=tm.MASK_ID, gen_length=settings["gen_length"],
        block=settings["block_size"], steps=settings["steps"], temperature=settings["temperature"],
        seed=settings["seed"], rule=RULES[decoding], threshold=settings.get("threshold", 0.9),
        factor=settings.get("factor", 1.0), logits_out=logits)
    return canvases, logits


def same_rounds(backend, prompt, decoding, **settings):
    ours, our_logits = engine_rounds(backend, prompt, decoding, **settings)
    theirs, their_logits = reference_rounds(backend, prompt, decoding, **settings)
    assert ours == theirs
    assert len(our_logits) == len(their_logits)
    for round_index, (a, b) in enumerate(zip(our_logits, their_logits)):
        torch.testing.assert_close(a, b.float(), atol=1e-4, rtol=1e-4, msg=f"round {round_index}")


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("prompt", PROMPTS, ids=PROMPT_IDS)
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("block, steps", [(4, 4), (8, 3)], ids=["steps=block", "uneven"])
def test_llada_low_confidence(backend, cache, prompt, temperature, block, steps):
    same_rounds(backend, prompt, "llada", gen_length=16, block_size=block, steps=steps, temperature=temperature,
                seed=11, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("prompt", PROMPTS, ids=PROMPT_IDS)
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("tau", [0.3, 0.9])
def test_fast_dllm_threshold(backend, cache, prompt, temperature, tau):
    same_rounds(backend, prompt, "fast_dllm_threshold", gen_length=16, block_size=8, steps=8,
                temperature=temperature, threshold=tau, seed=5, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("prompt", PROMPTS, ids=PROMPT_IDS)
@pytest.mark.parametrize("temperature", (0.0, 1.0))
@pytest.mark.parametrize("factor", [0.5, 3.0])
def test_fast_dllm_factor(backend, cache, prompt, temperature, factor):
    same_rounds(backend, prompt, "fast_dllm_factor", gen_length=16, block_size=8, steps=8,
                temperature=temperature, factor=factor, seed=7, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("prompt", PROMPTS, ids=PROMPT_IDS)
@pytest.mark.parametrize("temperature", (0.0, 1.0))
@pytest.mark.parametrize("steps", [16, 6], ids=["steps=length", "steps<length"])
def test_dream_with_a_cache(shifted, cache, prompt, temperature, steps):
    """Dream's one block (the whole canvas) with the prompt's keys and values cached."""
    settings = {"steps": steps, "temperature": temperature, "top_p": 0.95}
    config = GenerationConfig(**{**DECODINGS["dream"].settings, "stop_on_eos": False, "gen_length": 16,
                                 "block_size": 16, "seed": 4, "cache": cache, **settings})
    ours = [frame.canvas for frame in run(shifted, prompt, config).frames]
    theirs = dream_reference.decode(shifted.model, prompt, mask_id=tm.MASK_ID, gen_length=16, seed=4, cache=cache,
                                    **settings)
    assert ours == theirs


# --------------------------------------------------------------------------- where they differ

@pytest.mark.parametrize("logit_shift", [False, True], ids=["llada", "dream"])
@pytest.mark.parametrize("cache", CACHES)
def test_a_cached_forward_over_an_unchanged_canvas_is_the_full_forward(logit_shift, cache):
    """Nothing changed since the block's first forward: the window's logits are the full forward's
    (positions, rotation and the all-true mask are right)."""
    backend = tiny_backend(3, logit_shift)
    prompt, canvas = torch.tensor([[17, 40, 61, 9]]), torch.full((1, 16), tm.MASK_ID)
    canvas[0, :8] = torch.tensor([20, 21, 22, 23, 24, 25, 26, 27])
    block = slice(8, 12)
    backend.prefill(prompt)
    full = backend.denoise(canvas, block)
    backend.prefill(prompt, cache=cache)
    first, cached = backend.denoise(canvas, block), backend.denoise(canvas, block)
    torch.testing.assert_close(first, full)
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)
    fed = (16 - 8 if cache == "prefix" else 4) + logit_shift
    assert backend.positions_computed == 4 + 16 + fed


def fresh_keys(model, ids: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's keys for `ids` from transformers' own cache (an independent computation)."""
    from transformers import DynamicCache

    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, cache=cache, use_cache=True)
    return [layer.keys for layer in cache.layers]


@pytest.mark.parametrize("cache", CACHES)
def test_at_each_block_start_the_cache_is_a_fresh_computation(backend, cache):
    """At a block's first forward the kept keys equal a fresh forward's over the canvas of that
    moment; one round later the rows outside the window are still those (stale), while a fresh
    forward over the new canvas gives other keys there: that is where cached decoding departs
    from the no-cache loop."""
    prompt = PROMPTS[1]
    p = len(prompt)
    config = GenerationConfig(**{**DECODINGS["llada"].settings, "gen_length": 16, "block_size": 8, "steps": 4,
                                 "stop_on_eos": False, "cache": cache})
    checked = {"starts": 0, "stale": 0}
    original = backend.denoise

    def denoise(canvas, block):
        first = backend._cached_block != (block.start, block.stop)
        logits = original(canvas, block)
        ids = torch.cat([torch.tensor([prompt]), canvas], dim=1)
        fresh = fresh_keys(backend.model, ids)
        kept = backend.kv.keys
        if first:
            for ours, theirs in zip(kept, fresh):
                torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
            checked["starts"] += 1
        else:
            start = p + block.start
            stop = ids.shape[1] if cache == "prefix" else p + block.stop
            outside = torch.ones(ids.shape[1], dtype=torch.bool)
            outside[start:stop] = False
            moved = max(float((ours - theirs)[:, :, outside].abs().max()) for ours, theirs in zip(kept, fresh))
            assert moved > 1e-3                                        # stale: a fresh forward moved them
            checked["stale"] += 1
        return logits

    backend.denoise = denoise
    try:
        run(backend, prompt, config)
    finally:
        del backend.denoise
    assert checked == {"starts": 2, "stale": 6}


def test_cached_and_uncached_decoding_differ(backend):
    """Not a goal, a fact: the stale rows change what is decoded (on this random model, at once)."""
    prompt = PROMPTS[1]
    canvases = {}
    for cache in ("none", *CACHES):
        canvases[cache], _ = engine_rounds(backend, prompt, "llada", gen_length=16, block_size=4, steps=4,
                                           temperature=0.0, seed=0, cache=cache)
    assert canvases["none"][0] == canvases["prefix"][0] == canvases["dual"][0]    # round 0: the same forward
    assert canvases["none"] != canvases["prefix"] and canvases["none"] != canvases["dual"]


def test_the_reference_comparison_can_fail(backend):
    """The prefix reference is not the dual one: comparing the engine with the wrong one fails."""
    prompt = PROMPTS[0]
    settings = {"gen_length": 16, "block_size": 8, "steps": 8, "temperature": 0.0, "seed": 5}
    ours, _ = engine_rounds(backend, prompt, "llada", cache="dual", **settings)
    theirs, _ = reference_rounds(backend, prompt, "llada", cache="prefix", **settings)
    assert ours != theirs
