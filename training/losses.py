"""The losses of a training step: the AR twin's next-token loss, the BD twin's block-diffusion loss
over concat(x_t, x_0) with the clean stream's next-token loss beside it, and the held-out loss that
chooses checkpoints. The read-out losses they add are training/readout.py's."""

from __future__ import annotations

import dataclasses
import random

import torch
import torch.nn.functional as F

from sprout.modeling import SproutModel
from training.data import Example, ar_batch, ar_weights, bd_batch, buckets


def next_token_loss(logits: torch.Tensor, batch: list[Example], targets: torch.Tensor,
                    focus_weight: float = 1.0, decision_weight: float = 1.0) -> torch.Tensor:
    """Mean CE over assistant targets (B, T), focus tokens counted focus_weight times and
    decision tokens decision_weight times."""
    if focus_weight == 1.0 and decision_weight == 1.0:
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="none")
    weights = ar_weights(batch, targets.shape[1], focus_weight, decision_weight).to(ce.device).flatten()
    return (ce * weights).sum() / max(int((targets != -100).sum()), 1)


def loss_ar(model: SproutModel, batch: list[Example], ids: dict[str, int],
            focus_weight: float = 1.0, decision_weight: float = 1.0) -> tuple[torch.Tensor, int]:
    x, targets = (t.to(model.device) for t in ar_batch(batch, ids["pad"]))
    logits = model(x)                                                     # (B, T, V)
    n_targets = int((targets != -100).sum())
    return next_token_loss(logits, batch, targets, focus_weight, decision_weight), n_targets


def loss_bd(model: SproutModel, batch: list[Example], ids: dict[str, int], block: int,
            gen: torch.Generator, complementary: bool = False, ar_weight: float = 0.0,
            focus_weight: float = 1.0, decision_weight: float = 1.0, on_blocks=None,
            shifted_share: float = 0.0) -> tuple[torch.Tensor, int]:
    """Masked-diffusion loss on noisy blocks; with ar_weight > 0 plus that times the next-token
    loss of the clean stream (the AR twin's pass, computed anyway as the blocks' context), so the
    adaptation keeps and sharpens what the AR twin knows about copying from the prompt. Focus
    tokens (data.FOCUS) count focus_weight times in both, decision tokens (data.DECISION)
    decision_weight times. on_blocks, if given, is told the
    blocks' starts (B, NB) before the forward pass (the colour read-out uses them)."""
    cfg = model.config
    blocks = bd_batch(batch, block, ids, (cfg.noise_low, cfg.noise_high), gen, complementary, focus_weight,
                      decision_weight, shifted_share)                                               # on the CPU
    blocks = dataclasses.replace(blocks, **{name: getattr(blocks, name).to(model.device)
                                            for name in ("clean", "noisy", "starts", "targets", "weights")})
    if on_blocks is not None:
        on_blocks(blocks.starts)
    logits, clean_h = model.bd_forward(blocks.clean, blocks.noisy, blocks.starts)        # (B, NB, C, V), (B, T, d)
    ce = F.cross_entropy(logits.flatten(0, 2), blocks.targets.flatten(), ignore_index=-100, reduction="none")
    # ELBO of masked diffusion: CE on masked tokens weighted 1/t (1 for complementary pairs),
    # averaged over block tokens
    loss = (ce * blocks.weights.flatten()).sum() / max(blocks.n_tokens, 1)
    if ar_weight:
        ar_targets = ar_batch(batch, ids["pad"])[1].to(model.device)
        loss = loss + ar_weight * next_token_loss(model.logits(clean_h), batch, ar_targets, focus_weight,
                                                  decision_weight)
    return loss, int((blocks.targets != -100).sum())


@torch.no_grad()
def validation_loss(model, examples, ids, twin, max_tokens, seed=0) -> float:
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for i, batch in enumerate(buckets(examples, max_tokens, random.Random(seed))):
        block = model.config.block_sizes[i % len(model.config.block_sizes)]
        loss, n_targets = loss_ar(model, batch, ids) if twin == "ar" else loss_bd(model, batch, ids, block, gen)
        total, count = total + loss.item() * n_targets, count + n_targets
    model.train()
    return total / max(count, 1)
