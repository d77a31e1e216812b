"""Noise shared by the engine and the references: the same generator, drawn in the same order
and shape ((block width, vocab) float64 uniforms, one draw per round when T > 0), so a
reference's sampled tokens can be compared with the engine's exactly."""

from __future__ import annotations

import torch


def uniforms(generator: torch.Generator, rows: int, vocab: int) -> torch.Tensor:
    """u ~ U(0, 1), (rows, vocab) float64, clamped away from 0 as the engine's gumbel_noise does."""
    u = torch.rand((rows, vocab), generator=generator, dtype=torch.float64)
    return u.clamp_(min=torch.finfo(torch.float64).tiny)


def damp_mask_logit(model: torch.nn.Module, mask_id: int, by: float = 30.0) -> torch.nn.Module:
    """Lower the mask token's logit by `by`, as in a trained dLLM (the mask is never a training
    target, so it is never the likeliest token); random tiny models would otherwise propose it."""

    class Damped(torch.nn.Module):
        def __init__(self, head: torch.nn.Module) -> None:
            super().__init__()
            self.head = head

        def forward(self, hidden: torch.Tensor) -> torch.Tensor:
            logits = self.head(hidden)
            logits[..., mask_id] -= by
            return logits

    model.lm_head = Damped(model.lm_head)
    return model
