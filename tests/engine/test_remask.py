"""Remasking (engine/remask.py, ReMDM's loop and cap schedules with confidence weights, greedy):
the choice against its plain-loop reference, and whole generations on a tiny random masked model,
where every remasked position must be the least confident decided one, come back masked, be
decoded again, and be counted once."""

from __future__ import annotations

import random

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.generate import run
from engine.metrics import Ends, answer_commits
from engine.remask import remask_choice, remask_choice_ref
from engine.trace import GenerationConfig
from reference.noise import damp_mask_logit


@pytest.mark.parametrize("schedule", ("off", "loop", "cap"))
def test_choice_matches_the_plain_loop(schedule):
    rng = random.Random(3)
    for _ in range(300):
        width = rng.randint(1, 8)
        psi = [rng.choice([0.1, 0.5, 0.5, 0.9, rng.random()]) for _ in range(width)]   # ties on purpose
        decided = [rng.random() < 0.8 for _ in range(width)]
        fresh = [d and rng.random() < 0.4 for d in decided]
        count, left = rng.randint(1, 4), rng.randint(0, 2)
        fast = remask_choice(schedule, torch.tensor(psi, dtype=torch.float64), torch.tensor(decided),
                             torch.tensor(fresh), count, left)
        assert fast.tolist() == remask_choice_ref(schedule, psi, decided, fresh, count, left)


def test_loop_acts_on_a_full_block_and_cap_on_earlier_decisions():
    psi = torch.tensor([0.9, 0.2, 0.6, 0.3], dtype=torch.float64)
    full, fresh = torch.ones(4, dtype=torch.bool), torch.tensor([False, True, False, False])
    assert remask_choice("loop", psi, full, fresh, 2, 1).tolist() == [1, 3]
    assert remask_choice("loop", psi, full, fresh, 2, 0).tolist() == []                     # budget spent
    assert remask_choice("cap", psi, full, fresh, 2, 1).tolist() == []                      # no mask left
    partly = torch.tensor([True, True, False, True])
    assert remask_choice("loop", psi, partly, fresh, 2, 1).tolist() == []
    assert remask_choice("cap", psi, partly, fresh, 1, 1).tolist() == [3]                   # 1 is fresh, 2 masked


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_masked_lm(seed=4), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID, logit_shift=False,
                                device=torch.device("cpu"))


BASE = {"gen_length": 16, "block_size": 8, "steps": 8, "sampler": "threshold", "threshold": 0.9,
        "stop_on_eos": False, "seed": 5}


def test_off_or_no_budget_changes_nothing(backend):
    plain = run(backend, [17, 40, 61], GenerationConfig(**BASE))
    spent = run(backend, [17, 40, 61], GenerationConfig(**BASE, remask="loop", remask_rounds=0))
    assert [f.canvas for f in plain.frames] == [f.canvas for f in spent.frames]
    assert not any(f.edits or f.remasked for f in plain.frames)


@pytest.mark.parametrize("schedule", ("loop", "cap"))
@pytest.mark.parametrize("temperature", (0.0, 1.0))
@pytest.mark.parametrize("prompt", ([17, 40, 61], [9, 70, 31, 52, 13]), ids=["p3", "p5"])
def test_generation_remasks_the_least_confident_and_decodes_them_again(backend, schedule, temperature, prompt):
    config = GenerationConfig(**{**BASE, "threshold": 0.6}, temperature=temperature, remask=schedule,
                              remask_rounds=2, remask_count=3)
    result = run(backend, prompt, config)
    canvas = [tm.MASK_ID] * 16
    psi: dict[int, float] = {}
    last: dict[int, int] = {}
    rounds_used = {0: 0, 1: 0}
    for frame in result.frames:
        edits = []
        for position, token, conf in frame.committed:
            if position in last and last[position] != token:
                edits.append((position, last[position], token))
            canvas[position], psi[position], last[position] = token, conf, token
        assert sorted(frame.edits) == sorted(edits)
        if frame.remasked:
            rounds_used[frame.block] += 1
            lo, hi = 8 * frame.block, 8 * frame.block + 8
            fresh = {p for p, _t, _c in frame.committed}
            eligible = [p for p in range(lo, hi) if canvas[p] != tm.MASK_ID and (schedule == "loop" or p not in fresh)]
            assert (schedule == "loop") == all(canvas[p] != tm.MASK_ID for p in range(lo, hi))
            expected = sorted(sorted(eligible, key=lambda p: (psi[p], p))[:3])
            assert frame.remasked == expected
            for p in frame.remasked:
                canvas[p] = tm.MASK_ID
        assert frame.canvas == canvas
    assert tm.MASK_ID not in result.frames[-1].canvas
    assert sum(rounds_used.values()) >= 1 and max(rounds_used.values()) <= 2
    ends = Ends.of(backend, 16)
    assert sum(answer_commits(result.frames, ends)) == result.stats.new_tokens      # each position once
    answer = set(ends.answer_positions(result.frames[-1].canvas))
    assert result.stats.edits == sum(p in answer for f in result.frames for p, _o, _n in f.edits)


def test_remasking_costs_forwards_and_can_edit(backend):
    """The loop's budget buys forwards; on a random model some decoded-again tokens change."""
    prompts = ([17, 40, 61], [9, 70, 31, 52, 13], [22, 33, 44, 55])
    plain = [run(backend, p, GenerationConfig(**BASE, temperature=1.0)) for p in prompts]
    looped = [run(backend, p, GenerationConfig(**BASE, temperature=1.0, remask="loop", remask_rounds=2,
                                               remask_count=4)) for p in prompts]
    assert all(b.stats.nfe > a.stats.nfe for a, b in zip(plain, looped))
    assert sum(r.stats.edits for r in looped) > 0
