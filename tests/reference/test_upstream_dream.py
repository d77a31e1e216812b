"""The engine decodes as Dream's own loop does (reference/dream.py): same tiny random
bidirectional model read with a logit shift, matched noise, the canvas compared after every round."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import dream as reference
from reference.noise import damp_mask_logit

# 3, 8, 5 and 16 tokens: the canvas is one block of 16, so the prompt is and is not a multiple of it
PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13], list(range(20, 36)))
PROMPT_IDS = ["p3", "p8", "p5", "p16"]


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_masked_lm(seed=8), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID, logit_shift=True,
                                device=torch.device("cpu"))


def test_the_dream_preset_follows_dream():
    preset = PRESETS_BY_NAME["Dream-v0-Instruct-7B"]
    assert preset.follows == "dream" and preset.defaults["block_size"] == preset.defaults["gen_length"]
    assert {k: preset.defaults[k] for k in DECODINGS["dream"].settings} == dict(DECODINGS["dream"].settings)


def engine_canvases(backend, prompt, **settings) -> list[list[int]]:
    config = GenerationConfig(**{**DECODINGS["dream"].settings, "stop_on_eos": False, "gen_length": 16,
                                 "block_size": 16, "seed": 4, **settings})
    return [frame.canvas for frame in run(backend, prompt, config).frames]


def reference_canvases(backend, prompt, **settings) -> list[list[int]]:
    return reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, seed=4, **settings)


@pytest.mark.parametrize("prompt", PROMPTS, ids=PROMPT_IDS)
@pytest.mark.parametrize("temperature", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("top_p, top_k", [(1.0, 0), (0.95, 0), (0.9, 0), (0.95, 5)],
                         ids=["top_p=1", "top_p=0.95", "top_p=0.9", "top_p=0.95-top_k=5"])
@pytest.mark.parametrize("steps", [16, 6], ids=["steps=length", "steps<length"])
def test_dream(backend, prompt, temperature, top_p, top_k, steps):
    settings = {"steps": steps, "temperature": temperature, "top_p": top_p, "top_k": top_k}
    assert engine_canvases(backend, prompt, **settings) == reference_canvases(backend, prompt, **settings)


@pytest.mark.parametrize("sampler, alg", [("low_confidence", "maskgit_plus"), ("margin", "topk_margin")])
@pytest.mark.parametrize("prompt", PROMPTS[:2], ids=PROMPT_IDS[:2])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_dreams_other_algs(backend, sampler, alg, prompt, temperature):
    settings = {"steps": 6, "temperature": temperature, "top_p": 0.9}
    ours = engine_canvases(backend, prompt, sampler=sampler, **settings)
    assert ours == reference_canvases(backend, prompt, alg=alg, **settings)


def test_without_dreams_own_round_top_p_runs_differ(backend, monkeypatch):
    """The test above can fail: through the engine's generic `entropy` sampler (ties broken by
    position, top-p filtered only when T > 0 and before top-k, in float64) several top-p runs
    differ from Dream's. At top-p 0.9 many positions keep a one-token nucleus, so their scores
    tie at entropy 0 and only Dream's topk over prompt + canvas orders them as Dream does."""
    runs = [(prompt, temperature) for prompt in PROMPTS for temperature in (0.0, 0.5, 1.0, 2.0)]
    settings = {"steps": 6, "top_p": 0.9, "top_k": 0}
    theirs = [reference_canvases(backend, prompt, temperature=t, **settings) for prompt, t in runs]
    monkeypatch.setattr("engine.generate.follows_dream", lambda config: False)
    generic = [engine_canvases(backend, prompt, temperature=t, **settings) for prompt, t in runs]
    assert sum(ours != reference for ours, reference in zip(generic, theirs)) > 0


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
