"""The engine decodes as SDAR's own loop does (reference/sdar.py): same tiny random
block-causal model, same prompt, matched noise, the canvas compared after every round."""

from __future__ import annotations

import itertools

import pytest

import tests.tiny_models as tm
from engine.generate import run
from engine.presets import DECODINGS, PRESETS_BY_NAME
from engine.trace import GenerationConfig
from reference import sdar as reference

PROMPTS = ([17, 40, 61], [22, 33, 44, 55, 66, 77, 88, 12], [9, 70, 31, 52, 13])   # 3, 8 and 5 tokens
TEMPERATURES = (0.0, 0.5, 1.0, 2.0)
BLOCK_STEPS = ((4, 4), (4, 2), (8, 8), (8, 3))
THRESHOLDS = (0.3, 0.9)


@pytest.fixture(scope="module")
def backend():
    return tm.tiny_block_backend(seed=4, logit_shift=False)


def engine_canvases(backend, prompt, **settings) -> list[list[int]]:
    config = GenerationConfig(**{**DECODINGS["sdar"].settings, "stop_on_eos": False, **settings})
    return [frame.canvas for frame in run(backend, prompt, config).frames]


def reference_canvases(model, prompt, settings) -> tuple[list[list[int]], int | None]:
    return reference.decode(model, prompt, mask_id=tm.MASK_ID, gen_length=settings["gen_length"],
                            block=settings["block_size"], steps=settings["steps"],
                            temperature=settings["temperature"], threshold=settings["threshold"], seed=settings["seed"])


def sweep(temperatures):
    """(prompt, settings) of every run of the sweep at these temperatures."""
    for prompt, temperature, (block, steps), tau in itertools.product(PROMPTS, temperatures, BLOCK_STEPS, THRESHOLDS):
        yield prompt, {"gen_length": 16, "block_size": block, "steps": steps, "temperature": temperature,
                       "threshold": tau, "seed": 5}


def test_the_sdar_presets_follow_sdar():
    for name in ("SDAR-1.7B-Chat", "SDAR-4B-Chat"):
        preset = PRESETS_BY_NAME[name]
        assert preset.follows == "sdar"
        assert {k: preset.defaults[k] for k in DECODINGS["sdar"].settings if k != "threshold"} == {
            k: v for k, v in DECODINGS["sdar"].settings.items() if k != "threshold"}


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("block, steps", BLOCK_STEPS,
                         ids=["b4-steps=block", "b4-steps<block", "b8-steps=block", "b8-steps<block"])
@pytest.mark.parametrize("tau", THRESHOLDS)
def test_sdar(backend, prompt, temperature, block, steps, tau):
    settings = {"gen_length": 16, "block_size": block, "steps": steps, "temperature": temperature,
                "threshold": tau, "seed": 5}
    ours = engine_canvases(backend, prompt, **settings)
    theirs, rewrote = reference_canvases(backend.model, prompt, settings)
    if rewrote is None:
        assert ours == theirs
    else:   # upstream overwrote a prompt token: equal through that round, then its blocks read another prompt
        assert ours[:rewrote + 1] == theirs[:rewrote + 1]


# Which runs above overwrite what (k above the masks left): torch.topk's order over the block
# decides which decided positions it returns, so this is counted, not derived.
REWRITES = {"answer": 21, "prompt": 8}


def test_sdar_rewrites_decided_tokens_as_sdar_does(backend):
    """SDAR's topk may return decided positions, and SDAR writes fresh samples over them: over
    the runs above it rewrites decided answer tokens in 21 (the engine does too, so those runs
    are equal throughout) and prompt tokens in 8 (3-token prompt, blocks of 4, 2 steps: the
    first block has one mask and k = 2; the engine leaves the prompt alone, so those runs are
    equal only through that round). The engine's rule without rewrites differs in the 21."""
    counts = {"answer": 0, "prompt": 0}
    capped_differs = 0
    for prompt, settings in sweep(TEMPERATURES):
        theirs, prompt_round = reference_canvases(backend.model, prompt, settings)
        if prompt_round is not None:
            counts["prompt"] += 1
            assert (settings["block_size"], settings["steps"], len(prompt)) == (4, 2, 3)
        elif any(rewritten(before, after) for before, after in zip(theirs, theirs[1:])):
            counts["answer"] += 1
            assert engine_canvases(backend, prompt, **settings) == theirs
            capped_differs += engine_canvases(backend, prompt, **settings, sampler="threshold_or_top_k") != theirs
    assert counts == REWRITES
    assert capped_differs == REWRITES["answer"]


def rewritten(before: list[int], after: list[int]) -> bool:
    """A position decided in `before` holds another token in `after`."""
    return any(b != tm.MASK_ID and a != b for b, a in zip(before, after))


def test_the_comparison_can_fail(backend):
    """Blocks that start at the prompt's end (ours before) give other canvases than SDAR's."""
    prompt = PROMPTS[0]
    theirs, _ = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=4, steps=4,
                                 temperature=0.0, threshold=0.9, seed=5)
    unaligned = engine_canvases(backend, prompt, gen_length=16, block_size=4, steps=4, temperature=0.0,
                                threshold=0.9, seed=5, aligned_blocks=False)
    assert unaligned != theirs


def test_aligned_blocks_need_a_block_causal_backend():
    from engine.trace import ConfigError
    from tests.fakes import FakeDiffusionBackend

    with pytest.raises(ConfigError, match="cannot align blocks"):
        run(FakeDiffusionBackend("abcd"), [5, 6, 7], GenerationConfig(gen_length=4, block_size=4, aligned_blocks=True))


def test_the_answer_never_exceeds_gen_length(backend):
    """Aligned blocks decode on to the end of the block holding gen_length (as SDAR does: here 17
    positions for a 3-token prompt in blocks of 4); the answer is cut at gen_length."""
    config = GenerationConfig(**{**DECODINGS["sdar"].settings, "stop_on_eos": False, "gen_length": 16,
                                 "block_size": 4, "steps": 4, "seed": 5})
    result = run(backend, PROMPTS[0], config)
    canvas = result.frames[-1].canvas
    assert len(canvas) == 17 and tm.MASK_ID not in canvas and tm.EOS_ID not in canvas   # 17 answer ids before the cut
    answer = canvas[:16][: next((i for i, t in enumerate(canvas[:16]) if t == tm.EOS_ID), 16)]
    assert result.token_ids == [t for t in answer if t != tm.PAD_ID]
    assert result.stats.new_tokens == len(result.token_ids) <= 16


@pytest.fixture(scope="module")
def bf16_backend():
    import torch

    backend = tm.tiny_block_backend(seed=4, logit_shift=False)
    backend.model.to(torch.bfloat16)
    return backend


def test_sdar_in_bf16(bf16_backend):
    """SDAR samples in its logits' dtype (bf16 on a GPU): confidences rounded to bf16 meet the
    threshold and tie as upstream's do only when the engine computes them in bf16 too
    (`model_dtype_probs`, on in the sdar decoding); in float32 some of these runs differ."""
    equal, equal_in_float32, runs = 0, 0, 0
    for prompt, settings in sweep((0.5, 1.0, 2.0)):
        theirs, prompt_round = reference_canvases(bf16_backend.model, prompt, settings)
        rounds = len(theirs) if prompt_round is None else prompt_round + 1
        ours = engine_canvases(bf16_backend, prompt, **settings)
        in_float32 = engine_canvases(bf16_backend, prompt, **settings, model_dtype_probs=False)
        runs += 1
        equal += ours[:rounds] == theirs[:rounds] and (prompt_round is not None or ours == theirs)
        equal_in_float32 += in_float32[:rounds] == theirs[:rounds]
    assert equal == runs
    assert equal_in_float32 < runs
