"""Grow a trained Sprout: append layers, or widen the G layers' short conv; both start as the identity.

The new layers' output projections (the mixer's `out`, the MLP's `down`) are zero, so each
adds nothing to the residual stream: the grown model's logits equal the original's in every
mode (clean, denoise, commit) until training moves them. Their other weights get the usual
random init, so the first step's gradient on `out` / `down` is not zero.

Why: choosing a search row by its colour and then copying its id takes more hops than two
attention layers give easily, and a decision the model gets wrong on training transcripts as
often as on fresh ones is underfit, not memorised. An appended attention layer is one more hop
without retraining from scratch. What growing measured: models/README.md.
"""

from __future__ import annotations

import torch

from sprout.modeling import SproutModel


def grow(model: SproutModel, extra: str) -> SproutModel:
    """A new model with layer_pattern + `extra` (G / A letters), the old layers' weights copied."""
    if not extra or set(extra) - {"G", "A"}:
        raise ValueError(f"Layers to append must be a string of G and A, got {extra!r}.")
    config = model.config.__class__(**{**model.config.to_dict(), "layer_pattern": model.config.layer_pattern + extra})
    grown = SproutModel(config).to(device=model.device, dtype=next(model.parameters()).dtype)
    missing, unexpected = grown.load_state_dict(model.state_dict(), strict=False)
    first_new = len(model.config.layer_pattern)
    new_layers = tuple(f"blocks.{i}." for i in range(first_new, len(config.layer_pattern)))
    unfilled = [k for k in missing if not k.startswith(new_layers)]
    if unexpected or unfilled:
        raise ValueError(f"The weights do not fit the grown model: unexpected {unexpected}, unfilled {unfilled}.")
    with torch.no_grad():
        for i in range(first_new, len(config.layer_pattern)):
            grown.blocks[i].mixer.out.weight.zero_()
            grown.blocks[i].mlp.down.weight.zero_()
    return grown


def widen_conv(model: SproutModel, width: int) -> SproutModel:
    """A new model whose G layers' causal conv spans `width` tokens, the old taps copied to the
    newest positions and the added (older) taps zero: out_t = sum_j w_j x_{t-width+1+j}, so
    zero taps on the oldest inputs leave every output as it was.

    Why: a search row reads `{"color":"grey","size":"M","id":"P5K9",...}`. The size is 5 tokens
    before the id's first digit and the colour 9. With width >= 10 the q / k / v of the id's
    digits see the row's colour directly, instead of through the recurrence alone (the wider
    conv alone did not move the choice, the colour read-out did: models/README.md)."""
    old = model.config.conv_size
    if width <= old:
        raise ValueError(f"The conv can only be widened: it spans {old} tokens, asked for {width}.")
    config = model.config.__class__(**{**model.config.to_dict(), "conv_size": width})
    wide = SproutModel(config).to(device=model.device, dtype=next(model.parameters()).dtype)
    state = model.state_dict()
    for name, tensor in list(state.items()):
        if name.endswith(".conv"):
            state[name] = torch.cat([tensor.new_zeros(tensor.shape[0], width - old), tensor], dim=1)
    wide.load_state_dict(state, strict=True)
    return wide
