"""Samplers: small pure functions that turn logits into proposals and choose which masked
positions of the active block to commit this round (docs/ARCHITECTURE.md, "Samplers").

Notation: a block has B positions, M of them still masked. `propose` gives every position a
token x_i and a distribution p_i; the confidence of a proposal is c_i = p_i[x_i]. A selection
rule returns a bool mask (B,) that is True only at masked positions, and True at one or more
of them whenever any position is still masked, so every round makes progress.

The samplers' names, descriptions and parameters are engine/sampler_table.py's SAMPLERS (no torch:
GenerationConfig validates against it); `RULES` here holds each one's rule, and `select` dispatches
through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from engine.sampler_table import SAMPLERS

if TYPE_CHECKING:   # the types import this table to validate configs, so no import cycle at run time
    from engine.trace import GenerationConfig

NEG_INF = float("-inf")


# --------------------------------------------------------------------------- proposals

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


# --------------------------------------------------------------------------- schedules

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


# --------------------------------------------------------------------------- selection rules

def _ranked(scores: torch.Tensor, masked: torch.Tensor, descending: bool = True) -> torch.Tensor:
    """Indices of the masked positions ordered by score; ties go to the lower position."""
    idx = masked.nonzero()[:, 0]
    order = torch.sort(scores[idx], descending=descending, stable=True).indices
    return idx[order]


def _masked_argmax(scores: torch.Tensor, masked: torch.Tensor) -> int:
    """The masked position with the highest (finite) score, ties to the lower position
    (torch.argmax returns the first maximal index)."""
    return int(torch.where(masked, scores, NEG_INF).argmax())


def _choose(masked: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    chosen = torch.zeros_like(masked)
    chosen[indices] = True
    return chosen


def top_scores(scores: torch.Tensor, masked: torch.Tensor, k: int) -> torch.Tensor:
    """The k masked positions with the highest score (k <= M enforced; k = 0 chooses none, as
    Dream's schedule may ask for in early rounds, any other k at least one)."""
    m = int(masked.sum())
    if m == 0 or k <= 0:
        return torch.zeros_like(masked)
    # The masked positions first (every score here is finite, the others -inf), by score, ties to
    # the lower position: the order of _ranked without its gather and scatter.
    order = torch.sort(torch.where(masked, scores, NEG_INF), descending=True, stable=True).indices
    return _choose(masked, order[: max(1, min(k, m))])


def low_confidence(conf: torch.Tensor, masked: torch.Tensor, k: int,
                   row: tuple[int, int] | None = None) -> torch.Tensor:
    """LLaDA: the top-k masked positions by confidence c_i = p_i[x_i] (= p_(1) under greedy).
    With a `row`, ranked by LLaDA's torch.topk over prompt + canvas (row_top_k), else ties go
    to the lower position; the same set whenever no two confidences tie."""
    m = int(masked.sum())
    if row is None or m == 0 or k <= 0:
        return top_scores(conf, masked, k)
    return _choose(masked, row_top_k(conf, masked, min(k, m), *row))


def margin(probs: torch.Tensor, masked: torch.Tensor, k: int) -> torch.Tensor:
    """The top-k masked positions by margin p_(1) - p_(2)."""
    return top_scores(top2_margin(probs), masked, k)


def entropy(probs: torch.Tensor, masked: torch.Tensor, k: int) -> torch.Tensor:
    """The top-k masked positions by -H, i.e. the k lowest-entropy ones."""
    return top_scores(-token_entropy(probs), masked, k)


def random_order(masked: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """k masked positions chosen uniformly at random (scores u ~ U(0, 1) from the generator)."""
    scores = torch.rand(masked.shape, generator=generator).to(masked.device)
    return top_scores(scores, masked, k)


def threshold(conf: torch.Tensor, masked: torch.Tensor, tau: float,
              row: tuple[int, int] | None = None) -> torch.Tensor:
    """Fast-dLLM parallel decoding: commit {i masked : c_i >= tau} plus the masked argmax of c,
    so at least one position per round. With a `row`, that argmax is the first of Fast-dLLM's
    torch.topk(M) over prompt + canvas (row_top_k), which breaks a tie at the top below tau its
    own way; without, the lower position wins."""
    m = int(masked.sum())
    if m == 0:
        return torch.zeros_like(masked)
    chosen = masked & (conf >= tau)
    top = _masked_argmax(conf, masked) if row is None else int(row_top_k(conf, masked, m, *row)[0])
    chosen[top] = True
    return chosen


def threshold_strict(conf: torch.Tensor, masked: torch.Tensor, tau: float) -> torch.Tensor:
    """Fast-dLLM v2: commit {i masked : c_i > tau} (strict) plus the masked argmax of c."""
    if not bool(masked.any()):
        return torch.zeros_like(masked)
    chosen = masked & (conf > tau)
    chosen[_masked_argmax(conf, masked)] = True
    return chosen


def prefix_threshold(conf: torch.Tensor, masked: torch.Tensor, tau: float) -> torch.Tensor:
    """Left-to-right threshold: the leftmost masked position, whatever its confidence, then the
    masked positions after it, in order, while c_i >= tau; never one to the right of a position
    left undecided this round.

    Why: the plain threshold rule may commit a far-right token that is only confident under one
    of two continuations the block has not chosen between yet (on Sprout it committed the " a"
    of "Sorry, a ... is not available" while the call's tool name was still open; models/README.md).
    Here a choice is made where a causal model would make it, with everything before it decided;
    confident runs (the call template, a copied id) still go in one forward."""
    if not bool(masked.any()):
        return torch.zeros_like(masked)
    idx = masked.nonzero()[:, 0]                                               # (M,) left to right
    passes = (conf[idx[1:]] >= tau).long()
    run = int(torch.cumprod(passes, 0).sum())                                  # confident run after the first
    return _choose(masked, idx[: 1 + run])


def prefix_threshold_ref(conf: torch.Tensor, masked: torch.Tensor, tau: float) -> torch.Tensor:
    """The same rule as a plain loop, for the tests."""
    chosen = torch.zeros_like(masked)
    first = True
    for i in range(masked.shape[0]):
        if not masked[i]:
            continue
        if not first and conf[i] < tau:
            break
        chosen[i], first = True, False
    return chosen


def factor(conf: torch.Tensor, masked: torch.Tensor, f: float, row: tuple[int, int] | None = None) -> torch.Tensor:
    """Fast-dLLM's factor rule (`get_transfer_index_dynamic`). c_(n) is the n-th largest masked
    confidence, n = 1..M. Rank n passes when c_(n) >= 1 - f / (n + 1), i.e. (n + 1)(1 - c_(n)) <= f,
    and rank 1 always passes. With n0 the first failing rank (M + 1 if none fails), commit ranks
    1..n0 - 1; but when n0 is M (only the last rank fails) or none fails, commit all M. With a
    `row`, the ranks committed are Fast-dLLM's torch.topk over prompt + canvas (row_top_k), else
    ties go to the lower position."""
    if not bool(masked.any()):
        return torch.zeros_like(masked)
    ranked = _ranked(conf, masked)                                             # (M,)
    m = len(ranked)
    n = torch.arange(1, m + 1, device=conf.device, dtype=torch.float64)
    passes = conf[ranked].to(torch.float64) >= 1 - f / (n + 1)                 # compared as upstream does
    passes[0] = True
    failing = (~passes).nonzero()
    first_fail = int(failing[0, 0]) + 1 if len(failing) else m + 1            # 1-based rank
    count = m if first_fail >= m else first_fail - 1
    return _choose(masked, ranked[:count] if row is None else row_top_k(conf, masked, count, *row))


def factor_prefix(conf: torch.Tensor, masked: torch.Tensor, f: float) -> torch.Tensor:
    """Our stricter factor rule: commit ranks 1..n for the largest n with (n + 1)(1 - c_(n)) < f,
    and always rank 1. The left side is non-decreasing in n (both factors are non-negative and
    non-decreasing), so the ranks that pass form a prefix. Unlike `factor` it never commits a
    rank that fails, and it compares with a strict <."""
    if not bool(masked.any()):
        return torch.zeros_like(masked)
    ranked = _ranked(conf, masked)                                             # (M,)
    n = torch.arange(1, len(ranked) + 1, device=conf.device, dtype=torch.float64)
    passes = (n + 1) * (1 - conf[ranked].to(torch.float64)) < f
    count = max(1, int(torch.cumprod(passes.long(), 0).sum()))                 # longest passing prefix
    return _choose(masked, ranked[:count])


def aligned_top_k(conf: torch.Tensor, masked: torch.Tensor, k: int, width: int) -> torch.Tensor:
    """torch.topk(k) over the whole aligned block as SDAR and LLaDA2 lay it out: `width`
    positions, the prompt's tail at the front of a shorter first block (width - B of them), then
    the block's B rows, -inf wherever the position is not masked. Returns the block rows picked
    (a pick in the prompt's tail is dropped). Ties come out in the order topk gives for exactly
    that tensor, as upstream's do; when k exceeds the masks left, topk also returns decided
    positions (score -inf), in that order too."""
    picked = row_top_k(conf, masked, k, width - conf.shape[0], width)
    return picked[picked >= 0]


def row_top_k(conf: torch.Tensor, masked: torch.Tensor, k: int, offset: int, length: int) -> torch.Tensor:
    """torch.topk(k) over a (length,) row in conf's dtype that holds this block's masked
    confidences at `offset` and -inf everywhere else, as block positions (negative: before the
    block). Which of several equal scores topk returns first depends on the whole tensor (its
    length, where the values sit, k), so a rule that must break ties as upstream does ranks over
    exactly upstream's row: LLaDA's and Fast-dLLM v1's prompt + whole canvas (float64), SDAR's
    and LLaDA2's aligned block (aligned_top_k)."""
    scores = conf.new_full((length,), NEG_INF)
    scores[offset: offset + conf.shape[0]] = torch.where(masked, conf, NEG_INF)
    return torch.topk(scores, k).indices - offset


def threshold_or_top_k(conf: torch.Tensor, masked: torch.Tensor, tau: float, k: int, width: int) -> torch.Tensor:
    """LLaDA2's rule: the masked positions with c_i > tau (strict) when there are at least k of
    them, else the top min(k, M) masked positions (aligned_top_k; k from the schedule)."""
    high = masked & (conf > tau)
    if int(high.sum()) >= k:
        return high
    return _choose(masked, aligned_top_k(conf, masked, min(k, int(masked.sum())), width))


def threshold_or_top_k_uncapped(conf: torch.Tensor, masked: torch.Tensor, tau: float, k: int,
                                width: int) -> torch.Tensor:
    """SDAR's `low_confidence_dynamic` as its code runs: like threshold_or_top_k, but k is not
    capped at the M masks left. When k > M (a round after one that committed more than its k,
    or a first block that starts with the prompt's tail) topk takes all M and k - M decided
    positions, and SDAR writes its fresh proposals over them: so does this rule, which is the
    only one that may return positions that are not masked. A pick in the prompt's tail is
    dropped: SDAR would overwrite a prompt token there; the engine never edits the prompt."""
    high = masked & (conf > tau)
    if int(high.sum()) >= k:
        return high
    return _choose(masked, aligned_top_k(conf, masked, k, width))


def entropy_bounded(probs: torch.Tensor, masked: torch.Tensor, gamma: float) -> torch.Tensor:
    """Entropy-bounded sampler: sort masked positions by entropy ascending, H_1 <= H_2 <= ...,
    and commit the largest k with sum_{j<=k} H_j - max_{j<=k} H_j <= gamma (k >= 1; k = 1
    always passes since the left side is 0). The left side is sum_{j<k} H_j, non-decreasing."""
    if not bool(masked.any()):
        return torch.zeros_like(masked)
    h = token_entropy(probs).to(torch.float64)
    ranked = _ranked(h, masked, descending=False)                              # (M,)
    hs = h[ranked]
    spent = torch.cumsum(hs, 0) - torch.cummax(hs, 0).values
    count = max(1, int(torch.cumprod((spent <= gamma).long(), 0).sum()))
    return _choose(masked, ranked[:count])


def reference(conf: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """The slow reference: exactly one token per forward, the most confident masked position."""
    return top_scores(conf, masked, 1)


# --------------------------------------------------------------------------- the sampler table

@dataclass(frozen=True)
class Round:
    """What a selection rule may read in one denoising round of one block."""

    config: GenerationConfig
    probs: torch.Tensor                 # (B, V) the distribution confidences come from
    conf: torch.Tensor                  # (B,) c_i = probs_i[x_i]
    masked: torch.Tensor                # (B,) bool, still masked before this round
    k: int                              # scheduled samplers: tokens to commit this round
    generator: torch.Generator | None
    # (offset, length): where the block sits in LLaDA's prompt + canvas row; set under
    # untempered_confidence (LLaDA's and Fast-dLLM v1's scoring), whose rules then rank by
    # torch.topk over that row (row_top_k) so exact ties go in upstream's order
    row: tuple[int, int] | None = None

    @property
    def width(self) -> int:
        """Positions of the whole block: an aligned first block also holds the prompt's tail."""
        return self.config.block_size if self.config.aligned_blocks else self.masked.shape[0]


# The rule of each sampler in engine/sampler_table.py's SAMPLERS (the same names, checked below).
RULES: dict[str, Callable[[Round], torch.Tensor]] = {
    "low_confidence": lambda r: low_confidence(r.conf, r.masked, r.k, r.row),
    "margin": lambda r: margin(r.probs, r.masked, r.k),
    "entropy": lambda r: entropy(r.probs, r.masked, r.k),
    "random_order": lambda r: random_order(r.masked, r.k, r.generator),
    "threshold": lambda r: threshold(r.conf, r.masked, r.config.threshold, r.row),
    "threshold_strict": lambda r: threshold_strict(r.conf, r.masked, r.config.threshold),
    "threshold_or_top_k": lambda r: threshold_or_top_k(r.conf, r.masked, r.config.threshold, r.k, r.width),
    "threshold_or_top_k_uncapped":
        lambda r: threshold_or_top_k_uncapped(r.conf, r.masked, r.config.threshold, r.k, r.width),
    "prefix_threshold": lambda r: prefix_threshold(r.conf, r.masked, r.config.threshold),
    "factor": lambda r: factor(r.conf, r.masked, r.config.factor, r.row),
    "factor_prefix": lambda r: factor_prefix(r.conf, r.masked, r.config.factor),
    "entropy_bounded": lambda r: entropy_bounded(r.probs, r.masked, r.config.entropy_bound),
    "reference": lambda r: reference(r.conf, r.masked),
}
if set(RULES) != set(SAMPLERS):
    raise ImportError(f"engine/sampler_table.py and RULES differ: {sorted(set(RULES) ^ set(SAMPLERS))}")


def select(
    config: GenerationConfig, probs: torch.Tensor, tokens: torch.Tensor, masked: torch.Tensor,
    round_index: int, schedule: list[int], generator: torch.Generator | None = None,
    row: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Which masked positions of the block to commit in round `round_index` (from 0).

    probs (B, V), tokens (B,), masked (B,) bool -> (B,) bool. `schedule` is
    transfer_schedule(M at block start, steps), read by the scheduled samplers. With
    config.steps_cap, every sampler but `reference` commits all that is still masked in round
    steps - 1; without it the unscheduled ones (threshold, factor, ...) go on until the block is
    done, as Fast-dLLM does. SDAR's rule runs its last round itself (its k may exceed the masks
    left there too). `row` = (offset of the block, length of prompt + canvas): read only under
    untempered_confidence, by low_confidence, threshold and factor (Round.row).
    """
    sampler = SAMPLERS[config.sampler]
    own_last_round = sampler.name in ("reference", "threshold_or_top_k_uncapped")
    if not own_last_round and round_index >= config.steps - 1 and (sampler.scheduled or config.steps_cap):
        return masked.clone()
    if config.schedule == "dream":
        k = dream_transfer_count(int(masked.sum()), round_index, config.steps)
    else:
        k = schedule[round_index] if round_index < len(schedule) else int(masked.sum())
    return RULES[config.sampler](Round(config, probs, confidence(probs, tokens), masked, k, generator,
                                row if config.untempered_confidence else None))
