"""Samplers: small pure functions that choose which masked positions of the active block to
commit this round (docs/ARCHITECTURE.md, "Samplers"); the proposals they choose among come from
engine/proposals.py.

Notation: a block has B positions, M of them still masked. `propose` gives every position a
token x_i and a distribution p_i; the confidence of a proposal is c_i = p_i[x_i]. A selection
rule returns a bool mask (B,) that is True only at masked positions, and True at one or more
of them whenever any position is still masked, so every round makes progress; the rules that
edit (SDAR's uncapped top k, LLaDA2.1's joint_threshold) may also return decided positions, whose
tokens are then rewritten (Frame.edits).

The samplers' names, descriptions and parameters are engine/sampler_table.py's SAMPLERS (no torch:
GenerationConfig validates against it); `RULES` here holds each one's rule, and `select` dispatches
through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from engine.proposals import NEG_INF, confidence, dream_transfer_count, token_entropy, top2_margin
from engine.sampler_table import SAMPLERS

if TYPE_CHECKING:   # the types import this table to validate configs, so no import cycle at run time
    from engine.trace import GenerationConfig


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


def joint_threshold(conf: torch.Tensor, masked: torch.Tensor, tokens: torch.Tensor, current: torch.Tensor | None,
                    tau: float, edit_tau: float, width: int) -> torch.Tensor:
    """LLaDA2.1's draft-then-edit rule, both halves read from one forward.

    Mask to token: the masked positions with c_i > tau (strict) when at least one passes, else the
    most confident masked one (upstream's num_to_transfer = 1: torch.topk over the aligned block,
    aligned_top_k). Token to token: a position already decided when the round began is rewritten
    when its proposal x_i differs from the token it holds and c_i > edit_tau. The rounds after a
    block is full, in which only the second half can act, are run by engine/generate.py
    (GenerationConfig.max_post_steps)."""
    chosen = masked & (conf > tau)
    if bool(masked.any()) and not bool(chosen.any()):
        chosen = _choose(masked, aligned_top_k(conf, masked, 1, width))
    if current is None:                 # no tokens given for the decided positions: nothing to rewrite
        return chosen
    return chosen | (~masked & (conf > edit_tau) & (tokens != current))


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
    tokens: torch.Tensor | None = None  # (B,) this round's proposals, for rules that edit
    current: torch.Tensor | None = None  # (B,) the tokens the block holds before this round

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
    "joint_threshold": lambda r: joint_threshold(r.conf, r.masked, r.tokens, r.current, r.config.threshold,
                                                 r.config.edit_threshold, r.width),
    "entropy_bounded": lambda r: entropy_bounded(r.probs, r.masked, r.config.entropy_bound),
    "reference": lambda r: reference(r.conf, r.masked),
}
if set(RULES) != set(SAMPLERS):
    raise ImportError(f"engine/sampler_table.py and RULES differ: {sorted(set(RULES) ^ set(SAMPLERS))}")


def select(
    config: GenerationConfig, probs: torch.Tensor, tokens: torch.Tensor, masked: torch.Tensor,
    round_index: int, schedule: list[int], generator: torch.Generator | None = None,
    row: tuple[int, int] | None = None, current: torch.Tensor | None = None,
) -> torch.Tensor:
    """Which masked positions of the block to commit in round `round_index` (from 0).

    probs (B, V), tokens (B,), masked (B,) bool -> (B,) bool. `schedule` is
    transfer_schedule(M at block start, steps), read by the scheduled samplers. With
    config.steps_cap, every sampler but `reference` commits all that is still masked in round
    steps - 1; without it the unscheduled ones (threshold, factor, ...) go on until the block is
    done, as Fast-dLLM does. SDAR's rule runs its last round itself (its k may exceed the masks
    left there too). `row` = (offset of the block, length of prompt + canvas): read only under
    untempered_confidence, by low_confidence, threshold and factor (Round.row). `current` (B,):
    the tokens the block holds, read by the rules that edit (joint_threshold).
    """
    sampler = SAMPLERS[config.sampler]
    if not sampler.owns_last_round and round_index >= config.steps - 1 and (sampler.scheduled or config.steps_cap):
        return masked.clone()
    if config.schedule == "dream":
        k = dream_transfer_count(int(masked.sum()), round_index, config.steps)
    else:
        k = schedule[round_index] if round_index < len(schedule) else int(masked.sum())
    return RULES[config.sampler](Round(config, probs, confidence(probs, tokens), masked, k, generator,
                                       row if config.untempered_confidence else None, tokens, current))
