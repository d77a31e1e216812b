"""The engine decodes as LLaDA2.1's own `generate` does (reference/llada21.py): draft then
edit, on the same tiny random block-causal model, no cache, matched noise, the canvas compared
after every forward; and the edits it makes are the ones the trace records."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.block_causal import BlockCausalBackend
from engine.catalog import build_backend
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import llada21 as reference
from reference.noise import damp_mask_logit

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])   # 3, 8 and 5 tokens


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_block_lm(seed=7), tm.MASK_ID)
    backend = build_backend(PRESETS_BY_NAME["LLaDA2.1-mini"], model, tm.tiny_tokenizer(), torch.device("cpu"))
    assert isinstance(backend, BlockCausalBackend) and not backend.use_cache
    backend.mask_id = tm.MASK_ID                   # the stand-in's mask (the preset's is 156895)
    return backend


def test_the_llada21_preset_follows_llada21():
    preset = PRESETS_BY_NAME["LLaDA2.1-mini"]
    assert preset.follows == "llada21" and preset.mask_id == 156895
    assert {k: preset.defaults[k] for k in DECODINGS["llada21"].settings} == dict(DECODINGS["llada21"].settings)
    assert (preset.defaults["sampler"], preset.defaults["block_size"], preset.defaults["temperature"]) == (
        "joint_threshold", 32, 0.0)


def engine_run(backend, prompt, **settings):
    config = GenerationConfig(**{**DECODINGS["llada21"].settings, "stop_on_eos": False, **settings})
    return run(backend, prompt, config)


def theirs(backend, prompt, *, gen_length, block, temperature, threshold, edit, post, seed=9):
    return reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=gen_length, block=block,
                            temperature=temperature, threshold=threshold, editing_threshold=edit,
                            max_post_steps=post, seed=seed)


# The modes of LLaDA2.1's report (quality 0.7 / 0.5, speedy 0.5 / 0.0) and a strict pair; blocks
# of 4 (a prompt tail in the first block for p3, p5) and 8; post steps 0, 1 and upstream's 16.
@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", (0.0, 0.7, 1.0, 2.0))
@pytest.mark.parametrize("block", (4, 8))
@pytest.mark.parametrize("tau, edit", [(0.7, 0.5), (0.5, 0.0), (0.95, 0.9)], ids=["quality", "speedy", "strict"])
@pytest.mark.parametrize("post", (0, 1, 16))
def test_llada21(backend, prompt, temperature, block, tau, edit, post):
    ours = engine_run(backend, prompt, gen_length=16, block_size=block, temperature=temperature, threshold=tau,
                      edit_threshold=edit, max_post_steps=post, seed=9)
    assert [f.canvas for f in ours.frames] == theirs(backend, prompt, gen_length=16, block=block,
                                                     temperature=temperature, threshold=tau, edit=edit, post=post)


@pytest.mark.parametrize("steps", (1, 4))
def test_steps_neither_schedule_nor_cap(backend, steps):
    """joint_threshold runs until its blocks end by its own rule: `steps` below or equal to the
    block size changes nothing (upstream's generate does not read it)."""
    ours = engine_run(backend, PROMPTS[0], gen_length=16, block_size=4, steps=steps, temperature=1.0, seed=9)
    assert [f.canvas for f in ours.frames] == theirs(backend, PROMPTS[0], gen_length=16, block=4, temperature=1.0,
                                                     threshold=0.7, edit=0.5, post=16)


def test_edits_are_recorded_as_the_canvases_change(backend):
    """Every rewrite between two canvases is one Frame.edits entry (old -> new), and speedy mode
    on a random model makes some: a position counts once as decided, however often it is edited."""
    from engine.metrics import Ends, answer_commits, edit_counts

    edits_seen = 0
    for prompt in PROMPTS:
        result = engine_run(backend, prompt, gen_length=16, block_size=4, temperature=1.0, threshold=0.5,
                            edit_threshold=0.0, seed=9)
        before = [tm.MASK_ID] * len(result.frames[0].canvas)
        for frame in result.frames:
            rewritten = [(p, old, new) for p, (old, new) in enumerate(zip(before, frame.canvas))
                         if old != tm.MASK_ID and new != old]
            assert sorted(frame.edits) == rewritten
            before = frame.canvas
        ends = Ends.of(backend, 16)
        assert sum(answer_commits(result.frames, ends)) == result.stats.new_tokens
        answer = set(ends.answer_positions(result.frames[-1].canvas))
        assert edit_counts(result.frames, ends) == [sum(p in answer for p, _o, _n in f.edits) for f in result.frames]
        assert result.stats.edits == sum(edit_counts(result.frames, ends))
        edits_seen += sum(len(f.edits) for f in result.frames)
    assert edits_seen > 0


def test_the_comparison_can_fail(backend):
    """Without the edit half (an edit threshold of 1 never passes) the engine's canvases differ
    from upstream's speedy ones."""
    differs = sum(
        [f.canvas for f in engine_run(backend, prompt, gen_length=16, block_size=4, temperature=1.0, threshold=0.5,
                                      edit_threshold=1.0, seed=9).frames]
        != theirs(backend, prompt, gen_length=16, block=4, temperature=1.0, threshold=0.5, edit=0.0, post=16)
        for prompt in PROMPTS)
    assert differs > 0
