"""The engine decodes as LLaDA's and Fast-dLLM v1's own loops do (reference/llada.py):
same tiny random model, same prompt, matched noise, the canvas compared after every round."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import llada as reference
from reference.noise import damp_mask_logit

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])   # 3, 8 and 5 tokens
TEMPERATURES = (0.0, 0.5, 1.0, 2.0)


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_masked_lm(seed=3), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID, logit_shift=False,
                                device=torch.device("cpu"))


def engine_canvases(backend, prompt, decoding: str, **settings) -> list[list[int]]:
    config = GenerationConfig(**{**DECODINGS[decoding].settings, "stop_on_eos": False, **settings})
    return [frame.canvas for frame in run(backend, prompt, config).frames]


def test_the_llada_preset_follows_llada():
    preset = PRESETS_BY_NAME["LLaDA-8B-Instruct"]
    assert preset.follows == "llada"
    assert {k: preset.defaults[k] for k in DECODINGS["llada"].settings} == dict(DECODINGS["llada"].settings)


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("block, steps", [(4, 4), (4, 2), (8, 3)], ids=["steps=block", "steps<block", "uneven"])
def test_llada_low_confidence(backend, prompt, temperature, block, steps):
    ours = engine_canvases(backend, prompt, "llada", gen_length=16, block_size=block, steps=steps,
                           temperature=temperature, seed=11)
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=block, steps=steps,
                              temperature=temperature, seed=11, rule="llada")
    assert ours == theirs


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("steps", [2, 8], ids=["steps<block", "steps=block"])
@pytest.mark.parametrize("tau", [0.3, 0.9])
def test_fast_dllm_threshold(backend, prompt, temperature, steps, tau):
    ours = engine_canvases(backend, prompt, "fast_dllm_threshold", gen_length=16, block_size=8, steps=steps,
                           temperature=temperature, threshold=tau, seed=5)
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, steps=steps,
                              temperature=temperature, seed=5, rule="threshold", threshold=tau)
    assert ours == theirs


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("steps", [2, 8], ids=["steps<block", "steps=block"])
@pytest.mark.parametrize("factor", [0.5, 1.0, 3.0])
def test_fast_dllm_factor(backend, prompt, temperature, steps, factor):
    ours = engine_canvases(backend, prompt, "fast_dllm_factor", gen_length=16, block_size=8, steps=steps,
                           temperature=temperature, factor=factor, seed=7)
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, steps=steps,
                              temperature=temperature, seed=7, rule="factor", factor=factor)
    assert ours == theirs


def test_the_comparison_can_fail(backend):
    """Our own rules (tempered confidence, steps as a cap) give other canvases than upstream's."""
    prompt = PROMPTS[1]
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, steps=2,
                              temperature=0.0, seed=5, rule="threshold", threshold=0.9)
    capped = engine_canvases(backend, prompt, "fast_dllm_threshold", gen_length=16, block_size=8, steps=2,
                             temperature=0.0, threshold=0.9, seed=5, steps_cap=True)
    assert capped != theirs
    differs = 0
    for seed in range(5):
        theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=4, steps=4,
                                  temperature=2.0, seed=seed, rule="llada")
        tempered = engine_canvases(backend, prompt, "llada", gen_length=16, block_size=4, steps=4, temperature=2.0,
                                   seed=seed, untempered_confidence=False)
        differs += tempered != theirs
    assert differs > 0
