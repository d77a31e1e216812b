"""The engine decodes as Dream's own loop does (engine/upstream/dream.py): same tiny random
bidirectional model read with a logit shift, matched noise, the canvas compared after every round."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.catalog import DECODINGS, PRESETS_BY_NAME
from engine.generate import run
from engine.trace import GenerationConfig
from engine.upstream import dream as reference
from engine.upstream.noise import damp_mask_logit

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_masked_lm(seed=8), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID, logit_shift=True,
                                device=torch.device("cpu"))


def test_the_dream_preset_follows_dream():
    preset = PRESETS_BY_NAME["Dream-v0-Instruct-7B"]
    assert preset.follows == "dream" and preset.defaults["block_size"] == preset.defaults["gen_length"]
    assert {k: preset.defaults[k] for k in DECODINGS["dream"].settings} == dict(DECODINGS["dream"].settings)


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
# top-p stays 1: a nucleus of one token gives entropy exactly 0, and such ties are broken by
# position here but by torch.topk's order upstream (7 of 12 runs at top-p 0.95 differ so)
@pytest.mark.parametrize("temperature, top_p", [(0.0, 1.0), (0.5, 1.0), (1.0, 1.0), (2.0, 1.0)])
@pytest.mark.parametrize("steps", [16, 6], ids=["steps=length", "steps<length"])
def test_dream(backend, prompt, temperature, top_p, steps):
    config = GenerationConfig(**{**DECODINGS["dream"].settings, "stop_on_eos": False, "gen_length": 16,
                                 "block_size": 16, "steps": steps, "temperature": temperature, "top_p": top_p,
                                 "seed": 4})
    ours = [frame.canvas for frame in run(backend, prompt, config).frames]
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, steps=steps,
                              temperature=temperature, top_p=top_p, seed=4)
    assert ours == theirs


def test_the_comparison_can_fail(backend):
    """LLaDA's even schedule in blocks (the old Dream preset) gives other canvases."""
    prompt = PROMPTS[1]
    config = GenerationConfig(gen_length=16, block_size=8, steps=6, sampler="entropy", temperature=0.0,
                              stop_on_eos=False)
    ours = [frame.canvas for frame in run(backend, prompt, config).frames]
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, steps=6, temperature=0.0,
                              top_p=1.0, seed=0)
    assert ours != theirs


def test_an_unknown_schedule_is_a_sentence():
    from engine.trace import ConfigError

    with pytest.raises(ConfigError, match="Unknown schedule 'linear'; choose one of even, dream"):
        GenerationConfig(schedule="linear")
