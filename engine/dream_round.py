"""Dream's own round (Dream-org/Dream-v0-Instruct-7B `generation_utils.py` `_sample`; the slow
reference is reference/dream.py): with the `dream` schedule, the samplers that score as one
of Dream's `alg`s propose and choose as Dream does, in the model's dtype and with Dream's
`torch.topk` over prompt + canvas, instead of through proposals.propose / samplers.select."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from engine.proposals import NEG_INF, dream_transfer_count, gumbel_noise

if TYPE_CHECKING:
    from engine.trace import GenerationConfig


# Dream's `alg`s and the samplers that score as they do: maskgit_plus, topk_margin, entropy.
DREAM_SCORES = ("low_confidence", "margin", "entropy")


def follows_dream(config: GenerationConfig) -> bool:
    """Dream's schedule with one of Dream's scores: the round is Dream's own (dream_round)."""
    return config.schedule == "dream" and config.sampler in DREAM_SCORES


def dream_filter(logits: torch.Tensor, top_p: float = 1.0, top_k: int = 0) -> torch.Tensor:
    """Dream's top-p, then top-k, in the logits' dtype: a token is dropped when the cumulative
    softmax of the tokens sorted before it is > top_p, or when its logit is below the k-th
    largest; dropped logits become the dtype's lowest value (not -inf). Unlike filter_logits:
    the other order, > instead of >=, and the mass read from the cumsum one place back."""
    lowest = torch.finfo(logits.dtype).min
    out = logits
    if top_p < 1.0:
        sorted_logits, order = torch.sort(out, dim=-1, descending=True)        # (M, V)
        over = torch.cumsum(torch.softmax(sorted_logits, dim=-1), dim=-1) > top_p
        drop_sorted = torch.zeros_like(over)
        drop_sorted[:, 1:] = over[:, :-1]
        out = out.masked_fill(torch.zeros_like(over).scatter(-1, order, drop_sorted), lowest)
    if top_k > 0:
        kth = torch.topk(out, min(top_k, out.shape[-1]), dim=-1).values[:, -1:]
        out = out.masked_fill(out < kth, lowest)
    return out


def dream_round(
    logits: torch.Tensor, masked: torch.Tensor, config: GenerationConfig, round_index: int,
    generator: torch.Generator | None, *, dtype: torch.dtype, offset: int, length: int, never: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One round of Dream's `_sample` (reference/dream.py): (B, V) logits and (B,) masked ->
    (chosen (B,) bool, tokens (B,), p_i[x_i] (B,)).

    Only the masked rows are read, in the model's `dtype`: z = dream_filter(logits / T) (filtered
    at T = 0 too), probs = softmax(z), token = argmax(log probs + g) for T > 0 (g: the same
    Gumbel noise as `propose`), argmax probs at T = 0; score = sum p log(p + 1e-10), p[x] or
    p_(1) - p_(2) by sampler; k = dream_transfer_count. The k positions are torch.topk's over
    a (length,) score tensor laid out as Dream's prompt + canvas (this block's rows at `offset`,
    -inf everywhere else) in that dtype, because ties are common (every one-token nucleus has
    entropy 0) and Dream breaks them in the order topk gives for exactly that tensor.
    """
    width, vocab = logits.shape
    rows = masked.nonzero()[:, 0]                                              # (M,)
    z = logits[rows].to(dtype)                                                 # (M, V)
    if config.temperature > 0:
        z = z / config.temperature
    probs = torch.softmax(dream_filter(z, config.top_p, config.top_k), dim=-1)
    if config.temperature > 0:
        score = torch.log(probs.to(torch.float64)) + gumbel_noise((width, vocab), generator, z.device)[rows]
    else:
        score = probs
    if never is not None:
        score = score.clone()
        score[:, never] = NEG_INF
    picks = torch.argmax(score, dim=-1)                                        # (M,)
    p_pick = probs.gather(-1, picks[:, None])[:, 0]
    if config.sampler == "entropy":
        scores = torch.sum(probs * torch.log(probs + 1e-10), dim=-1)
    elif config.sampler == "margin":
        top2 = torch.topk(probs, 2, dim=-1).values
        scores = top2[:, 0] - top2[:, 1]
    else:
        scores = p_pick
    tokens = torch.zeros(width, dtype=torch.long, device=logits.device)
    tokens[rows] = picks
    conf = torch.zeros(width, dtype=torch.float32, device=logits.device)
    conf[rows] = p_pick.float()
    chosen = torch.zeros_like(masked)
    k = dream_transfer_count(len(rows), round_index, config.steps)
    if k > 0:
        full = torch.full((length,), NEG_INF, dtype=dtype, device=logits.device)
        full[offset + rows] = scores
        chosen[torch.topk(full, k).indices - offset] = True
    return chosen, tokens, conf
