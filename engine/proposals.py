"""Proposals and schedules: how a denoising round turns logits into a proposed token and a
distribution per position (`propose`, with top-k / top-p filtering and Gumbel-max sampling), the
scores the selection rules read (confidence, top-2 margin, entropy), and how many tokens a round
commits under a fixed schedule. The rules that choose among the proposals are engine/samplers.py.

Notation: a block has B positions, M of them still masked. `propose` gives every position a
token x_i and a distribution p_i; the confidence of a proposal is c_i = p_i[x_i]."""

from __future__ import annotations

import torch

NEG_INF = float("-inf")


def filter_logits(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Top-k then top-p (nucleus) filtering of (B, V) logits; removed entries become -inf.

    top-k keeps the k largest logits (ties at the k-th value are kept). top-p keeps the smallest
    prefix of the tokens sorted by probability whose mass reaches p: a token is dropped when the
    mass strictly before it is already >= p, so the most likely token always survives.
    """
    out = logits
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(out, top_k, dim=-1).values[..., -1:]                 # (B, 1)
        out = out.masked_fill(out < kth, NEG_INF)
    if top_p < 1.0:
        sorted_logits, order = torch.sort(out, dim=-1, descending=True)       # (B, V)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        drop_sorted = mass_before >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        out = out.masked_fill(drop, NEG_INF)
    return out


def nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Top-p on probabilities, as the upstream loops that sample in the model's dtype write it: a
    token is dropped when the cumulative probability of the tokens sorted before it is > top_p,
    and the rest is renormalised (Fast-dLLM v2; SDAR and LLaDA2 drop the same tokens from the
    logits before their softmax)."""
    if top_p >= 1.0:
        return probs
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)          # (B, V)
    over = torch.cumsum(sorted_probs, dim=-1) > top_p
    drop_sorted = torch.zeros_like(over)
    drop_sorted[:, 1:] = over[:, :-1]
    kept = probs.masked_fill(torch.zeros_like(over).scatter(-1, order, drop_sorted), 0.0)
    return kept / kept.sum(-1, keepdim=True)


def gumbel_noise(shape: tuple[int, ...], generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """Standard Gumbel noise g = -log(-log u), u ~ U(0, 1), drawn in float64 (as LLaDA does:
    low-precision Gumbel-max visibly degrades samples). Drawn on the generator's device (CPU
    for the seeded generator) and moved to `device`."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    u = u.clamp_(min=torch.finfo(torch.float64).tiny)                          # log(0) would give -inf noise
    return (-torch.log(-torch.log(u))).to(device)


def propose(
    logits: torch.Tensor, temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0,
    generator: torch.Generator | None = None, *, untempered_confidence: bool = False,
    never: int | None = None, dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One proposal per row: logits (B, V) -> tokens (B,) long, probs (B, V).

    T > 0: z = filter(logits / T) in float64, token = argmax(z + g) with float64 Gumbel noise g,
    i.e. an exact sample from softmax(z) (Gumbel-max trick). LLaDA writes the same argmax as
    argmax(exp(l) / (-log u)^T): divide its log by T > 0 to get ours.
    T = 0: token = argmax logits (greedy); nothing is sampled, so top-p / top-k do not apply
    (z = logits: the confidence is the model's own probability, as Fast-dLLM v2 scores it).
    probs = softmax(z) (at T = 1 when greedy), float32; with `untempered_confidence`,
    softmax(logits) in float64, unfiltered and at T = 1, as LLaDA and Fast-dLLM score confidence.
    `never`: a token id never proposed (the mask), though it keeps its share of probs.
    `dtype`: compute as SDAR, LLaDA2 and Fast-dLLM v2 do, in the dtype of the model's logits:
    probs = nucleus(softmax(top_k(logits / T))) in it, token = argmax(log probs + g) (the same
    sample, with that dtype's rounding; argmax probs at T = 0), so confidences (bf16 on a GPU)
    compare with the threshold and tie as upstream's.
    """
    if dtype is not None:
        z = logits.to(dtype)
        if temperature > 0:
            probs = nucleus(torch.softmax(filter_logits(z / temperature, top_k), dim=-1), top_p)
        else:
            probs = torch.softmax(z, dim=-1)
        score = probs
        if temperature > 0:
            score = torch.log(probs.to(torch.float64)) + gumbel_noise(tuple(probs.shape), generator, probs.device)
        if never is not None:
            score = score.clone()
            score[:, never] = NEG_INF
        return torch.argmax(score, dim=-1), probs
    if temperature > 0:
        z = filter_logits(logits.to(torch.float64) / temperature, top_k, top_p)   # (B, V)
        score = z + gumbel_noise(tuple(z.shape), generator, z.device)
    else:
        z = logits.to(torch.float32)
        score = z
    if never is not None:
        score = score.clone()
        score[:, never] = NEG_INF
    tokens = torch.argmax(score, dim=-1)
    if untempered_confidence:
        return tokens, torch.softmax(logits.to(torch.float64), dim=-1)
    return tokens, torch.softmax(z, dim=-1).to(torch.float32)


def confidence(probs: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """c_i = p_i[x_i]: (B, V), (B,) -> (B,)."""
    return probs.gather(-1, tokens[:, None])[:, 0]


def top2_margin(probs: torch.Tensor) -> torch.Tensor:
    """p_(1) - p_(2), the gap between the two most likely tokens: (B, V) -> (B,)."""
    top2 = torch.topk(probs, 2, dim=-1).values
    return top2[:, 0] - top2[:, 1]


def token_entropy(probs: torch.Tensor) -> torch.Tensor:
    """H_i = -sum_v p log p in nats, with 0 log 0 = 0: (B, V) -> (B,)."""
    return torch.special.entr(probs.to(torch.float64)).sum(-1).to(probs.dtype)


def dream_transfer_count(masked_count: int, round_index: int, steps: int, eps: float = 1e-3) -> int:
    """Dream's k for round i of `steps` with M masks left: int(M (1 - s / t)) with t, s = the
    i-th and (i+1)-th of linspace(1, eps, steps + 1), all of M in the last round. Computed with
    the same float32 tensor operations as Dream's generation_utils, since int() truncates."""
    if round_index >= steps - 1:
        return masked_count
    timesteps = torch.linspace(1, eps, steps + 1)
    t, s = timesteps[round_index], timesteps[round_index + 1]
    return int(torch.tensor([masked_count]).sum() / 1 * (1 - s / t))


def transfer_schedule(masked_count: int, steps: int) -> list[int]:
    """Split M masked tokens over S rounds as evenly as possible, earlier rounds first:
    round i commits floor(M / S) + [i < M mod S]. M=10, S=4 -> [3, 3, 2, 2]."""
    base, extra = divmod(masked_count, steps)
    return [base + (i < extra) for i in range(steps)]
