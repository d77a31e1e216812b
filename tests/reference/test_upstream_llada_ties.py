"""Exact ties: LLaDA's and Fast-dLLM v1's torch.topk over prompt + canvas decides which of several
equal confidences goes first, and the engine ranks over the same row (samplers.row_top_k), so the
canvas still equals the reference loop's (reference/llada.py) after every round.

The tiny masked LM's head is overwritten at fixed positions, as a trained model's EOS tail is:
positions i with i mod 8 in SURE get a row whose untempered softmax is exactly 1.0 in float64
(a logit 60 above the rest: 99 e^-60 is far below half an ulp of 1), those in UNSURE all get one
shared row (its top token has p ~ 0.8, below the threshold 0.9), the rest keep the model's own."""

from __future__ import annotations

import pytest
import torch

import engine.proposals as proposals
import engine.samplers as samplers
import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from reference import llada as reference
from reference.noise import damp_mask_logit
from tests.reference.test_upstream_llada import PROMPTS, engine_canvases

SURE, UNSURE = (1, 2, 6), (3, 4, 7)


class TiedHead(torch.nn.Module):
    def __init__(self, head: torch.nn.Module) -> None:
        super().__init__()
        self.head = head
        sure = torch.zeros(tm.VOCAB_SIZE)
        sure[tm.MASK_ID], sure[tm.EOS_ID] = -30.0, 60.0
        unsure = torch.zeros(tm.VOCAB_SIZE)
        unsure[tm.MASK_ID], unsure[50] = -30.0, 6.0        # e^6 / (e^6 + 98) ~ 0.80
        self.register_buffer("sure", sure)
        self.register_buffer("unsure", unsure)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.head(hidden)                         # (1, P + L, V)
        phase = torch.arange(logits.shape[1]) % 8
        for positions, fixed in ((SURE, self.sure), (UNSURE, self.unsure)):
            rows = torch.isin(phase, torch.tensor(positions))
            logits[:, rows] = fixed.to(logits.dtype)
        return logits


@pytest.fixture(scope="module")
def backend():
    model = damp_mask_logit(tm.tiny_masked_lm(seed=3), tm.MASK_ID)
    model.lm_head = TiedHead(model.lm_head)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny", mask_id=tm.MASK_ID, logit_shift=False,
                                device=torch.device("cpu"))


# (decoding, reference rule, settings): LLaDA's k = 1, 2, 4 per round of a block of 8, and the
# Fast-dLLM v1 rules whose top-1 (threshold) or count (factor) falls among tied confidences
CASES = [
    ("llada", "llada", {"steps": 8}), ("llada", "llada", {"steps": 4}), ("llada", "llada", {"steps": 2}),
    ("fast_dllm_threshold", "threshold", {"steps": 8, "threshold": 0.9}),
    ("fast_dllm_factor", "factor", {"steps": 8, "factor": 1.0}),
    ("fast_dllm_factor", "factor", {"steps": 8, "factor": 0.5}),
]
IDS = ["llada-k1", "llada-k2", "llada-k4", "threshold", "factor1", "factor0.5"]


def both(backend, prompt, decoding, rule, settings, temperature, seed=3):
    ours = engine_canvases(backend, prompt, decoding, gen_length=16, block_size=8, temperature=temperature,
                           seed=seed, **settings)
    theirs = reference.decode(backend.model, prompt, mask_id=tm.MASK_ID, gen_length=16, block=8,
                              steps=settings["steps"], temperature=temperature, seed=seed, rule=rule,
                              threshold=settings.get("threshold", 0.9), factor=settings.get("factor", 1.0))
    return ours, theirs


def test_the_head_ties_exactly(backend):
    """The confidences really tie: several masked positions at exactly 1.0, others equal below it."""
    x = torch.tensor([PROMPTS[0] + [tm.MASK_ID] * 16])
    with torch.no_grad():
        probs = torch.softmax(backend.model(input_ids=x).logits[0].to(torch.float64), -1)
    top = probs.max(-1).values
    phase = torch.arange(x.shape[1]) % 8
    assert bool((top[torch.isin(phase, torch.tensor(SURE))] == 1.0).all())
    unsure = top[torch.isin(phase, torch.tensor(UNSURE))]
    assert bool((unsure == unsure[0]).all()) and 0.5 < float(unsure[0]) < 0.9


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p8", "p5"])
@pytest.mark.parametrize("temperature", (0.0, 1.0))
@pytest.mark.parametrize("decoding, rule, settings", CASES, ids=IDS)
def test_ties_go_in_upstreams_order(backend, prompt, temperature, decoding, rule, settings):
    ours, theirs = both(backend, prompt, decoding, rule, settings, temperature)
    assert ours == theirs


def by_position(conf, masked, k, offset, length):
    """The old ranking: highest score first, ties to the lower position."""
    scores = conf.new_full((length,), proposals.NEG_INF)
    scores[offset: offset + conf.shape[0]] = torch.where(masked, conf, proposals.NEG_INF)
    return torch.sort(scores, descending=True, stable=True).indices[:k] - offset


def test_ranking_ties_by_position_differs(backend, monkeypatch):
    """The comparison above can fail: ranking ties by position instead gives other canvases for
    every rule, LLaDA's and both Fast-dLLM v1 ones."""
    monkeypatch.setattr(samplers, "row_top_k", by_position)
    differs = set()
    for prompt in PROMPTS:
        for decoding, rule, settings in CASES:
            ours, theirs = both(backend, prompt, decoding, rule, settings, 0.0)
            if ours != theirs:
                differs.add(rule)
    assert differs == {"llada", "threshold", "factor"}
