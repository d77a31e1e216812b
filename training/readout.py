"""Shop read-outs: auxiliary training losses that ask the residual stream to name what the row
choice needs (a colour, whether a row matches) where it needs it.

Why: to copy the right product id out of a search result, a copy head must match the colour
asked for (its query) against each row's colour (its keys). A row reads
`{"color":"grey","size":"M","id":"P5K9",...}`: the size is 5 tokens before the id's first digit,
the colour 9. Linear read-outs of the twins found the size carried at both ends and the colour
much less (models/README.md), and their wrong picks are rows of the right size and another
colour (training.probe). The plain loss reaches these features only through one copied token
per call, so more epochs of it do not grow them; these losses ask for them directly.

Two sets of linear heads, one head per layer input from layer 1 to the last layer's:
- rows: the clean stream at each search row's id token -> that row's colour
  (`Example.row_colours`);
- wanted: the clean stream, and for the BD twin every noisy block position, at each copied id
  token -> the colour of the row it was copied from (`Example.wanted_colours`), masked or not:
  what is asked for is a property of the context.
A third set (`match_loss`) reads at each search row's id token whether the row is what the
search asked for, colour and size both (`Example.row_matches`). Why: Sprout-BD answered
"not available" over a matching row, so whether a row matches is asked for where the row is
(it lifted the row choice, not the add / "not available" choice, which took the decision
weight, training.data.DECISION; models/README.md).
The heads are training-only and are not saved with the model; they are in the run's state so a
run resumes exactly.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from training.data import Example
from world.entities import COLORS


class ShopReadout(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.layers = list(range(1, len(model.blocks)))      # inputs of layers 1 .. L-1
        d = model.config.hidden_size
        self.heads = nn.ModuleList(nn.Linear(d, len(COLORS)) for _ in self.layers)          # rows
        self.wanted_heads = nn.ModuleList(nn.Linear(d, len(COLORS)) for _ in self.layers)   # asked for
        self.match_heads = nn.ModuleList(nn.Linear(d, 2) for _ in self.layers)              # row matches
        self._clean: dict[int, torch.Tensor] = {}
        self._noisy: dict[int, torch.Tensor] = {}
        self._starts: torch.Tensor | None = None

    @contextmanager
    def capture(self, model: nn.Module):
        """While open, keep each chosen layer's input: clean stream (B, T, d), noisy stream
        (B, NB, C, d) (whose block starts `see_blocks` is given)."""
        def keep(i):
            def hook(_module, inputs):
                (self._clean if inputs[0].dim() == 3 else self._noisy)[i] = inputs[0]
            return hook
        handles = [model.blocks[i].norm1.register_forward_pre_hook(keep(i)) for i in self.layers]
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()
            self._clean.clear()
            self._noisy.clear()
            self._starts = None

    def see_blocks(self, starts: torch.Tensor) -> None:
        """The noisy blocks' start positions (B, NB) of the batch being run."""
        self._starts = starts

    def _noisy_targets(self, batch: list[Example]) -> list[tuple[int, int, int, int]]:
        """(row, block, offset, colour) for every noisy block position on a copied id."""
        if self._starts is None or not self._noisy:
            return []
        C = next(iter(self._noisy.values())).shape[2]
        out = []
        for b, ex in enumerate(batch):
            wanted = dict(ex.wanted_colours)
            if not wanted:
                continue
            for j, start in enumerate(self._starts[b].tolist()):
                out.extend((b, j, p - start, wanted[p]) for p in range(start, start + C) if p in wanted)
        return out

    def _clean_terms(self, batch: list[Example], field: str, heads: nn.ModuleList) -> list[torch.Tensor]:
        """One cross-entropy per head over the clean stream at the (position, class) marks of
        `field`; none when the batch has no marks or nothing was captured."""
        marks = [(b, p, c) for b, ex in enumerate(batch) for p, c in getattr(ex, field)]
        if not marks or not self._clean:
            return []
        device = next(iter(self._clean.values())).device
        b, p, c = (torch.tensor(v, device=device) for v in zip(*marks))
        return [F.cross_entropy(head(self._clean[i][b, p]), c) for i, head in zip(self.layers, heads)]

    def loss(self, batch: list[Example]) -> torch.Tensor:
        """The colour losses: mean cross-entropy over the heads and positions that have targets;
        zero when none."""
        terms = self._clean_terms(batch, "row_colours", self.heads)
        terms += self._clean_terms(batch, "wanted_colours", self.wanted_heads)
        noisy = self._noisy_targets(batch)
        if noisy:
            device = next(iter(self._noisy.values())).device
            b, j, o, c = (torch.tensor(v, device=device) for v in zip(*noisy))
            terms += [F.cross_entropy(head(self._noisy[i][b, j, o]), c)
                      for i, head in zip(self.layers, self.wanted_heads)]
        return torch.stack(terms).mean() if terms else torch.zeros(())

    def match_loss(self, batch: list[Example]) -> torch.Tensor:
        """Mean cross-entropy of 'this row is what was asked' at the rows' id tokens (clean
        stream), over the heads; zero when no row is marked."""
        terms = self._clean_terms(batch, "row_matches", self.match_heads)
        return torch.stack(terms).mean() if terms else torch.zeros(())
