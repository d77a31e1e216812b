"""The engine decodes as Fast-dLLM v2's own loop does (reference/fast_dllm_v2.py): same
tiny random block-causal model read with a logit shift, same prompt, matched noise, the canvas
compared after every round."""

from __future__ import annotations

import itertools

import pytest
import torch

import tests.tiny_models as tm
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import fast_dllm_v2 as reference

# 3 and 5 tokens (inside the first block), 16 (whole blocks: a greedy first token), 11 (a tail)
PROMPTS = ([17, 40, 61], [9, 70, 31, 52, 13], list(range(20, 36)), list(range(40, 51)))
TEMPERATURES = (0.0, 0.5, 1.0, 2.0)


@pytest.fixture(scope="module")
def backend():
    return tm.tiny_block_backend(seed=6, logit_shift=True)


def test_the_fast_dllm_v2_presets_follow_it():
    for name in ("Fast_dLLM_v2_1.5B", "Fast_dLLM_v2_7B"):
        preset = PRESETS_BY_NAME[name]
        assert preset.follows == "fast_dllm_v2"
        assert {k: preset.defaults[k] for k in DECODINGS["fast_dllm_v2"].settings} == dict(
            DECODINGS["fast_dllm_v2"].settings)


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p5", "p16", "p11"])
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("block, small", [(8, 4), (8, 8)], ids=["sub-blocks", "one-sub-block"])
@pytest.mark.parametrize("tau", [0.3, 0.9])
def test_fast_dllm_v2(backend, prompt, temperature, block, small, tau):
    config = GenerationConfig(**{**DECODINGS["fast_dllm_v2"].settings, "stop_on_eos": False, "gen_length": 16,
                                 "block_size": block, "steps": 4, "sub_block_size": small,
                                 "temperature": temperature, "threshold": tau, "seed": 3})
    frames = run(backend, prompt, config).frames
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=block, small=small,
                              temperature=temperature, threshold=tau, seed=3)
    assert [f.canvas for f in frames] == theirs


@pytest.mark.parametrize("change", [{"sub_block_size": 0}, {"greedy_first_token": False}, {"aligned_blocks": False}],
                         ids=["no-sub-blocks", "no-greedy-first-token", "unaligned"])
def test_the_comparison_can_fail(backend, change):
    """Each of these upstream points, turned off, changes the canvases on some prompt."""
    differs = 0
    for prompt in PROMPTS:
        config = GenerationConfig(**{**DECODINGS["fast_dllm_v2"].settings, "stop_on_eos": False, "gen_length": 16,
                                     "block_size": 8, "sub_block_size": 4, "temperature": 0.0, "threshold": 0.9,
                                     **change})
        frames = run(backend, prompt, config).frames
        theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, small=4,
                                  temperature=0.0, threshold=0.9, seed=0)
        length = len(theirs[0])
        differs += [f.canvas[:length] for f in frames[:len(theirs)]] != theirs
    assert differs > 0


def test_the_prompts_tail_counts_toward_gen_length(backend):
    """Fast-dLLM v2 decodes gen_length // block + P // block blocks: an 11-token prompt in blocks of
    8 leaves 16 - 3 = 13 answer positions. Without tail_in_length the engine decodes on to the
    end of the block holding gen_length (as SDAR does) and the rounds no longer match."""
    prompt = PROMPTS[3]
    settings = {**DECODINGS["fast_dllm_v2"].settings, "stop_on_eos": False, "gen_length": 16, "block_size": 8,
                "sub_block_size": 4, "temperature": 0.0, "threshold": 0.9}
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, small=4,
                              temperature=0.0, threshold=0.9, seed=0)
    ours = [f.canvas for f in run(backend, prompt, GenerationConfig(**settings)).frames]
    assert len(theirs[-1]) == len(ours[-1]) == 13 and ours == theirs
    longer = [f.canvas for f in run(backend, prompt, GenerationConfig(**{**settings, "tail_in_length": False})).frames]
    assert len(longer[-1]) == 21 and longer != theirs


def test_fast_dllm_v2_samples_in_its_logits_dtype():
    """Fast-dLLM v2 samples in its logits' dtype (bf16: its forward does not cast them) and takes
    top-p on the probabilities, renormalised: with `model_dtype_probs` (on in its decoding) the
    engine does too and equals the reference on a bf16 stand-in; in float some runs differ."""
    backend = tm.tiny_block_backend(seed=6, logit_shift=True)
    backend.model.to(torch.bfloat16)
    equal, equal_in_float, runs = 0, 0, 0
    for prompt, temperature, small, tau in itertools.product(PROMPTS, TEMPERATURES, (4, 8), (0.3, 0.9)):
        settings = {**DECODINGS["fast_dllm_v2"].settings, "stop_on_eos": False, "gen_length": 16, "block_size": 8,
                    "sub_block_size": small, "temperature": temperature, "threshold": tau, "seed": 3}
        theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8, small=small,
                                  temperature=temperature, threshold=tau, seed=3)
        runs += 1
        equal += [f.canvas for f in run(backend, prompt, GenerationConfig(**settings)).frames] == theirs
        in_float = GenerationConfig(**{**settings, "model_dtype_probs": False})
        equal_in_float += [f.canvas for f in run(backend, prompt, in_float).frames] == theirs
    assert equal == runs
    assert equal_in_float < runs
