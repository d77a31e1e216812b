"""The losses of a training step: the AR twin's next-token loss, the BD twin's block-diffusion loss
over concat(x_t, x_0) with the clean stream's next-token loss beside it, and the held-out loss that
chooses checkpoints. The read-out losses they add are training/readout.py's."""

from __future__ import annotations

import contextlib
import dataclasses
import random

import torch
import torch.nn.functional as F

from sprout.modeling import SproutModel
from training.data import Example, ar_batch, ar_weights, bd_batch, buckets

# Which rows go through the output head in training: "targets" (the fast path) or "all", the
# way training ran before (bench/train.py times the two; tests/training checks they agree).
HEAD_ROWS = {"rows": "targets"}


@contextlib.contextmanager
def head_rows(rows: str):
    """Run the output head on `rows` ("targets" or "all") inside the block."""
    if rows not in ("targets", "all"):
        raise ValueError(f"head rows must be 'targets' or 'all', not {rows!r}.")
    before, HEAD_ROWS["rows"] = HEAD_ROWS["rows"], rows
    try:
        yield
    finally:
        HEAD_ROWS["rows"] = before


def targets_ce(model: SproutModel, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """CE of each target position: hidden (..., d), targets (...) with -100 where there is none
    -> (M,) for the M positions that have one, in row-major order. Only those rows go through the
    output head: about half of a BD batch's rows carry a target (models/README.md)."""
    has = targets != -100
    if HEAD_ROWS["rows"] == "all":
        logits = model.logits(hidden)[has]                                # (..., V) -> (M, V)
    else:
        logits = model.logits(hidden[has])                                # (M, V)
    return F.cross_entropy(logits.float(), targets[has], reduction="none")


def next_token_loss(model: SproutModel, hidden: torch.Tensor, batch: list[Example], targets: torch.Tensor,
                    focus_weight: float = 1.0, decision_weight: float = 1.0) -> torch.Tensor:
    """Mean CE over assistant targets (B, T) from the clean stream's hidden states (B, T, d),
    focus tokens counted focus_weight times and decision tokens decision_weight times."""
    ce = targets_ce(model, hidden, targets)
    if focus_weight != 1.0 or decision_weight != 1.0:
        weights = ar_weights(batch, targets.shape[1], focus_weight, decision_weight).to(ce.device)
        ce = ce * weights[targets != -100]
    return ce.sum() / max(ce.numel(), 1)


def loss_ar(model: SproutModel, batch: list[Example], ids: dict[str, int],
            focus_weight: float = 1.0, decision_weight: float = 1.0) -> tuple[torch.Tensor, int]:
    x, targets = (t.to(model.device) for t in ar_batch(batch, ids["pad"]))
    hidden, _ = model.clean(x)                                            # (B, T, d)
    n_targets = int((targets != -100).sum())
    return next_token_loss(model, hidden, batch, targets, focus_weight, decision_weight), n_targets


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
    noisy_h, clean_h = model.bd_hidden(blocks.clean, blocks.noisy, blocks.starts)   # (B, NB, C, d), (B, T, d)
    ce = targets_ce(model, noisy_h, blocks.targets)                                 # (M,) masked tokens
    # ELBO of masked diffusion: CE on masked tokens weighted 1/t (1 for complementary pairs),
    # averaged over block tokens
    loss = (ce * blocks.weights[blocks.targets != -100]).sum() / max(blocks.n_tokens, 1)
    if ar_weight:
        ar_targets = ar_batch(batch, ids["pad"])[1].to(model.device)
        loss = loss + ar_weight * next_token_loss(model, clean_h, batch, ar_targets, focus_weight,
                                                  decision_weight)
    return loss, int((blocks.targets != -100).sum())


@torch.no_grad()
def validation_loss(model, examples, ids, twin, max_tokens, seed=0) -> float:
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for i, batch in enumerate(buckets(examples, max_tokens, random.Random(seed), by_replies=twin == "bd")):
        block = model.config.block_sizes[i % len(model.config.block_sizes)]
        loss, n_targets = loss_ar(model, batch, ids) if twin == "ar" else loss_bd(model, batch, ids, block, gen)
        total, count = total + loss.item() * n_targets, count + n_targets
    model.train()
    return total / max(count, 1)
