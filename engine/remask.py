"""Remasking: put decided tokens of the active block back to the mask, so that later rounds
decode them again with more of the block known (GenerationConfig.remask; off by default).

The rule follows ReMDM (Wang, Schiff, Sahoo, Kuleshov 2025, "Remasking Discrete Diffusion Models
with Inference-Time Scaling", arXiv 2503.00307). There a decoded token z^l is remasked in a step
with probability sigma_t^l, and two of its schedules are:
- ReMDM-loop: decode as usual until the share of decoded tokens reaches alpha_on, then hold it
  for a window of steps in which each step remasks some decoded tokens and decodes as many masks
  ("the loop"), then finish decoding;
- ReMDM-cap: remask in every step, with sigma_t = min(eta_cap, (1 - alpha_s) / alpha_t).
Both may be reweighted by confidence (ReMDM-conf): sigma_t^l proportional to exp(-psi^l), psi^l
the probability the model gave the token when it was last unmasked, so unsure tokens go back first.

In a block of a confidence-ruled sampler we take the greedy form of that weighting (the
`remask_count` decided tokens of lowest psi, ties to the lower position) and a budget of
`remask_rounds` rounds per block instead of a time window:
- `loop`: alpha_on is the full block. When a round leaves the block without masks and rounds are
  left, the lowest-psi tokens go back, and the sampler decodes them again in the next rounds;
  the block ends when it is full and the budget is spent.
- `cap`: while the block still has masks after a round, the lowest-psi tokens decided in earlier
  rounds (ReMDM never remasks a token in the step that decodes it) go back, for at most
  `remask_rounds` rounds; the cap on how many go back is `remask_count`.
A remasked position decoded to a different token is an edit (Frame.edits); to the same token it
is decided again, never counted twice (engine/metrics.py).
"""

from __future__ import annotations

import torch

from engine.sampler_table import REMASK_SCHEDULES  # noqa: F401  (the names live beside the samplers', no torch)


def remask_choice(schedule: str, psi: torch.Tensor, decided: torch.Tensor, fresh: torch.Tensor,
                  count: int, rounds_left: int) -> torch.Tensor:
    """Block positions to put back to the mask after this round, sorted.

    psi (B,): the confidence of each position's last decision; decided (B,) bool: holds a token
    now; fresh (B,) bool: decided by this round. Empty when the schedule is off, the budget is
    spent, or the schedule does not act in this round (`loop`: masks are left; `cap`: none are).
    """
    full = bool(decided.all())
    if schedule == "off" or rounds_left <= 0 or (schedule == "loop") != full:
        return torch.zeros(0, dtype=torch.long, device=psi.device)
    eligible = decided if schedule == "loop" else decided & ~fresh
    scores = torch.where(eligible, psi.to(torch.float64), float("inf"))       # (B,) not eligible: never first
    order = torch.sort(scores, stable=True).indices                            # lowest psi first, ties to the left
    picked = order[: min(count, int(eligible.sum()))]
    return torch.sort(picked).values


def remask_choice_ref(schedule: str, psi: list[float], decided: list[bool], fresh: list[bool],
                      count: int, rounds_left: int) -> list[int]:
    """The same choice as a plain loop, for the tests."""
    full = all(decided)
    if schedule == "off" or rounds_left <= 0 or (schedule == "loop") != full:
        return []
    eligible = [i for i in range(len(psi)) if decided[i] and (schedule == "loop" or not fresh[i])]
    picked: list[int] = []
    for _ in range(min(count, len(eligible))):
        best = min((i for i in eligible if i not in picked), key=lambda i: (psi[i], i))
        picked.append(best)
    return sorted(picked)
