"""Row-colour read-out: an auxiliary training loss that asks the residual stream at a search
row's id tokens to name that row's colour.

Why: to copy the right product id, a copy head must tell apart rows of one size by colour. A
row reads `{"color":"grey","size":"M","id":"P5K9",...}`: the size is 5 tokens before the id's
first digit, the colour 9. A linear read-out of the shipped AR twin's hidden states at the id
tokens finds the size 99-100 % of the time after the first layer, and the colour only 71 % (at
`P`) and 36 % (at the first digit; chance is 1/8 plus the colour prior). Its wrong picks are all
rows of the right size and another colour (engine.sprout.probe). More epochs of the plain loss
did not grow the feature, since the loss reaches it only through one copied token per call;
this loss asks for it directly, at every row.

A linear head per layer input (after the first layer, up to the last layer's input) predicts
the colour from the clean stream's hidden state at each id token (`Example.row_colours`). The
heads are training-only and are not saved with the model; they are in the run's state so a
run resumes exactly.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from engine.sprout.data import Example
from engine.world.entities import COLORS


class RowColourReadout(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.layers = list(range(1, len(model.mixers)))      # inputs of layers 1 .. L-1
        self.heads = nn.ModuleList(nn.Linear(model.config.hidden_size, len(COLORS)) for _ in self.layers)
        self._captured: dict[int, torch.Tensor] = {}

    @contextmanager
    def capture(self, model: nn.Module):
        """While open, keep each chosen layer's input from the clean stream (B, T, d); the noisy
        stream's inputs are (B, NB, C, d) and are not kept."""
        def keep(i):
            def hook(_module, inputs):
                if inputs[0].dim() == 3:
                    self._captured[i] = inputs[0]
            return hook
        handles = [model.norms1[i].register_forward_pre_hook(keep(i)) for i in self.layers]
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()
            self._captured.clear()

    def loss(self, batch: list[Example]) -> torch.Tensor:
        """Mean cross-entropy of the colour over every row id token of the batch and every head;
        zero when the batch has no search rows."""
        rows = [(b, p, c) for b, ex in enumerate(batch) for p, c in ex.row_colours]
        if not rows or not self._captured:
            return torch.zeros(())
        device = next(iter(self._captured.values())).device
        b, p, c = (torch.tensor(v, device=device) for v in zip(*rows))
        losses = [F.cross_entropy(head(self._captured[i][b, p]), c) for i, head in zip(self.layers, self.heads)]
        return torch.stack(losses).mean()
