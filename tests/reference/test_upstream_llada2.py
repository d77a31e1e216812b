"""The engine decodes as LLaDA2.0's own `generate` does (reference/llada2.py): same tiny
random block-causal model, no cache, matched noise, the canvas compared after every round."""

from __future__ import annotations

import itertools

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.block_causal import BlockCausalBackend
from engine.catalog import build_backend
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import llada2 as reference
from reference.noise import damp_mask_logit

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])   # 3, 8 and 5 tokens


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_block_lm(seed=7), tm.MASK_ID)
    preset = PRESETS_BY_NAME["LLaDA2.0-mini"]
    backend = build_backend(preset, model, tm.tiny_tokenizer(), torch.device("cpu"))
    assert isinstance(backend, BlockCausalBackend) and not backend.use_cache
    backend.mask_id = tm.MASK_ID                   # the stand-in's mask (the preset's is 156895)
    return backend


def test_the_llada2_preset_follows_llada2():
    preset = PRESETS_BY_NAME["LLaDA2.0-mini"]
    assert preset.follows == "llada2" and preset.mask_id == 156895
    assert {k: preset.defaults[k] for k in DECODINGS["llada2"].settings} == dict(DECODINGS["llada2"].settings)


def engine_canvases(backend, prompt, **settings):
    config = GenerationConfig(**{**DECODINGS["llada2"].settings, "stop_on_eos": False, **settings})
    return [frame.canvas for frame in run(backend, prompt, config).frames]


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", (0.5, 1.0, 2.0))
@pytest.mark.parametrize("block, steps", [(4, 4), (4, 2), (8, 3)], ids=["steps=block", "steps<block", "uneven"])
@pytest.mark.parametrize("tau", [0.3, 0.95])
def test_llada2(backend, prompt, temperature, block, steps, tau):
    ours = engine_canvases(backend, prompt, gen_length=16, block_size=block, steps=steps, temperature=temperature,
                           threshold=tau, seed=9)
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=block, steps=steps,
                              temperature=temperature, threshold=tau, seed=9)
    assert ours == theirs


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
def test_llada2_temperature_zero_samples_at_one(backend, prompt):
    """Upstream's temperature 0 still samples (at T = 1): the engine reproduces it at temperature 1,
    while the engine's temperature 0 is greedy."""
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=4, steps=4,
                              temperature=0.0, threshold=0.95, seed=9)
    assert engine_canvases(backend, prompt, gen_length=16, block_size=4, steps=4, temperature=1.0,
                           threshold=0.95, seed=9) == theirs


def test_the_comparison_can_fail(backend):
    """Blocks that start at the prompt's end give other canvases than LLaDA2's aligned ones."""
    differs = sum(
        engine_canvases(backend, prompt, gen_length=16, block_size=4, steps=4, temperature=0.5, threshold=0.95,
                        seed=9, aligned_blocks=False)
        != reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=4, steps=4,
                            temperature=0.5, threshold=0.95, seed=9)
        for prompt in PROMPTS)
    assert differs > 0


def test_llada2_samples_in_its_logits_dtype(backend):
    """LLaDA2 samples in its logits' dtype (its own forward casts them to float32; this stand-in's
    are bf16 once the model is): with `model_dtype_probs` (on in the llada2 decoding) the engine
    does too and equals the reference in bf16; in float32 some of these runs differ."""
    model = damp_mask_logit(tm.tiny_block_lm(seed=7), tm.MASK_ID).to(torch.bfloat16)
    bf16 = build_backend(PRESETS_BY_NAME["LLaDA2.0-mini"], model, tm.tiny_tokenizer(), torch.device("cpu"))
    bf16.mask_id = tm.MASK_ID
    equal, equal_in_float32, runs = 0, 0, 0
    for prompt, temperature, (block, steps), tau, seed in itertools.product(
            PROMPTS, (0.5, 1.0, 2.0), ((4, 4), (4, 2), (8, 3)), (0.3, 0.95), (9, 10)):
        settings = {"gen_length": 16, "block_size": block, "steps": steps, "temperature": temperature,
                    "threshold": tau, "seed": seed}
        theirs = reference.decode(model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=block, steps=steps,
                                  temperature=temperature, threshold=tau, seed=seed)
        runs += 1
        equal += engine_canvases(bf16, prompt, **settings) == theirs
        equal_in_float32 += engine_canvases(bf16, prompt, **settings, model_dtype_probs=False) == theirs
    assert equal == runs
    assert equal_in_float32 < runs
