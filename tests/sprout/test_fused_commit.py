"""The fused decoding pass (`SproutModel.commit_then_denoise`, and the Sprout-BD backend that
defers each commit into the next denoise) against its reference, the two passes one after the
other: the same logits, the same cache, and the same replies."""

import pytest
import torch

from engine.backends.sprout import SproutBackend
from engine.trace import GenerationConfig
from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
from tests.sprout.test_modeling_equivalence import VOCAB, tiny_model
from world.agent import run_episode
from world.task_sets import load_heldout_tasks

TOL = {"atol": 1e-5, "rtol": 1e-5}


def _same_cache(a, b):
    assert a.length == b.length
    for left, right in zip(a.layers, b.layers, strict=True):
        for name in ("keys", "values", "state", "tail"):
            if hasattr(left, name):
                torch.testing.assert_close(getattr(left, name), getattr(right, name), **TOL)
    torch.testing.assert_close(a.next_logits, b.next_logits, **TOL)


@pytest.mark.parametrize("shift", [False, True], ids=["no-shift", "logit-shift"])
@pytest.mark.parametrize("pattern", ["GAGA", "AG", "GG"])
@pytest.mark.parametrize("conv", [4, 12], ids=["conv4", "conv12"])    # 12: the tail reaches past short commits
@pytest.mark.parametrize("n", [1, 3, 16, 21])                         # 1 takes the delta rule's one-step path
@torch.inference_mode()
def test_commit_then_denoise_equals_the_two_passes(pattern, shift, conv, n):
    model = tiny_model(pattern, logit_shift=shift, conv=conv)
    gen = torch.Generator().manual_seed(n)
    context = torch.randint(3, VOCAB, (1, 13), generator=gen)
    ids = torch.randint(3, VOCAB, (1, n), generator=gen)
    block = torch.randint(1, VOCAB, (1, 8), generator=gen)            # masks (id 1) among tokens
    cache, _ = model.prefill(context)
    committed, _ = model.commit(ids, cache)
    reference = model.denoise(block, committed)
    fused_cache, fused = model.commit_then_denoise(ids, block, cache)
    torch.testing.assert_close(fused, reference, **TOL)
    _same_cache(fused_cache, committed)
    assert cache.length == 13, "the cache passed in stays as it was"
    later = torch.randint(1, VOCAB, (1, 8), generator=gen)           # the next block reads the same context
    torch.testing.assert_close(model.denoise(later, fused_cache), model.denoise(later, committed), **TOL)


def _replies(backend, tasks, config):
    return [[step.result.token_ids for step in run_episode(backend, task, config, max_replies=3).steps]
            for task in tasks]


@pytest.mark.parametrize("scaffold", [False, True], ids=["plain", "scaffolded"])
def test_agent_replies_are_the_same_with_the_fused_pass(monkeypatch, scaffold):
    tok, model = tiny_tokenizer(), tiny_sprout(causal=False, seed=5)
    fused, reference = SproutBackend(model, tok), SproutBackend(model, tok, fuse_commit=False)
    fused_calls = []
    original = model.commit_then_denoise
    monkeypatch.setattr(model, "commit_then_denoise", lambda *a: fused_calls.append(1) or original(*a))
    # small blocks and a low threshold: several blocks per reply, so commits happen between them
    config = GenerationConfig(gen_length=32, block_size=4, steps=4, sampler="threshold", threshold=0.3,
                              scaffold=scaffold, stop_on_eos=False)
    tasks = load_heldout_tasks()[:3]
    got = _replies(fused, tasks, config)
    used = len(fused_calls)
    assert got and all(got) and got == _replies(reference, tasks, config)
    assert used > 0 and len(fused_calls) == used, "the fused backend fused; the reference never does"


def test_the_fused_benchmark_reports_same_replies_and_times(capsys):
    from bench import main
    from bench.fused import run_fused

    backend = SproutBackend(tiny_sprout(causal=False, seed=5), tiny_tokenizer())
    report = run_fused(backend, load_heldout_tasks()[:2], attempts=2)
    assert report["episodes"] == 4 and report["same_replies"] == 4
    assert report["fused_s"] > 0 and report["two_pass_s"] > 0 and report["ratio"] > 0
    assert backend.fuse_commit, "the backend is left as it was given"
    assert main(["fused", "--model", "py:tests.world.scripted:oracle_ar"]) == 2
    assert "has no fused pass" in capsys.readouterr().err


@torch.inference_mode()
def test_a_deferred_commit_is_named_held_and_run_by_the_next_denoise_or_a_read_of_the_cache():
    """The protocol's deferral (engine/backends/base.py): commit holds the block as a DeferredCommit,
    blocks in a row join it, the next denoise runs it fused, and settled_cache() runs it alone;
    the cache then equals the reference backend's, which commits at once."""
    from engine.backends.base import DeferredCommit

    tok, model = tiny_tokenizer(), tiny_sprout(causal=False, seed=5)
    fused, reference = SproutBackend(model, tok), SproutBackend(model, tok, fuse_commit=False)
    prompt = torch.randint(3, 40, (1, 9), generator=torch.Generator().manual_seed(1))
    canvas = torch.randint(3, 40, (1, 16), generator=torch.Generator().manual_seed(2))
    for backend in (fused, reference):
        backend.prefill(prompt)
    assert isinstance(fused.deferred, DeferredCommit) and fused.deferred.prompt is not None   # the prompt's last piece
    assert reference.deferred is None
    first, second = slice(0, 8), slice(8, 16)
    torch.testing.assert_close(fused.denoise(canvas, first), reference.denoise(canvas, first), **TOL)
    assert fused.deferred is None                                    # the denoise ran it
    for block in (first, second):                                    # two blocks in a row wait as one
        fused.commit(canvas, block)
        reference.commit(canvas, block)
    assert fused.deferred is not None and fused.deferred.tokens.shape == (1, 16)
    _same_cache(fused.settled_cache(), reference.settled_cache())    # a read runs it alone
    assert fused.deferred is None
