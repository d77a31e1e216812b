"""Full-attention diffusion backends (LLaDA, Dream): every forward sees the prompt and the
whole canvas, attention is bidirectional everywhere, there is no cache, and commit is a no-op.

LLaDA predicts position i from hidden i (`logit_shift=False`). Dream was adapted from an AR
model and predicts position i from hidden i-1 (`logit_shift=True`): the logits for canvas
position 0 come from the last prompt position. The shift happens here, never in samplers.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.hf_calls import as_batch, call_model, format_mask, model_dtype
from engine.backends.hf_text import HFTextMixin

# How the all-true attention mask is handed to the model: not at all (the model is
# bidirectional by itself: LLaDA, Dream with no padding), or as an explicit 4-D mask.
ATTENTION_MODES = (None, "bool", "additive")


class FullAttentionBackend(HFTextMixin):
    """A masked diffusion LM that re-reads prompt + canvas on every forward."""

    kind = "diffusion"

    def __init__(
        self, model: torch.nn.Module, tokenizer: Any, *, name: str, mask_id: int, logit_shift: bool,
        device: torch.device, attention: str | None = None, max_length: int | None = None,
    ) -> None:
        if attention not in ATTENTION_MODES:
            raise BackendError(f"Unknown attention mode {attention!r} for '{name}'; use none, 'bool' or 'additive'.")
        self._init_diffusion(model, tokenizer, name, device, mask_id, logit_shift, max_length)
        self.attention = attention
        self._prompt: torch.Tensor | None = None   # (1, P)
        # the dtype of the last forward's logits before .float(): Dream's loop samples in it
        self.logits_dtype = model_dtype(model)

    # -- protocol ---------------------------------------------------------------------------

    def prefill(self, prompt_ids: torch.Tensor) -> None:
        """Remember the (1, P) prompt; nothing is cached, so nothing runs."""
        prompt_ids = as_batch(prompt_ids).to(self.device)
        if prompt_ids.shape[1] < 1 and self.logit_shift:
            raise BackendError(f"Model '{self.name}' predicts each token from the one before, so it needs a "
                               f"prompt of at least one token.")
        self._prompt = prompt_ids

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        """Logits (1, len(block), V) for the block, from one forward over prompt + canvas (1, P + L)."""
        if self._prompt is None:
            raise BackendError("denoise was called before prefill: start a generation with prefill(prompt_ids).")
        canvas = as_batch(canvas).to(self.device)
        start, stop, _ = block.indices(canvas.shape[1])
        x = torch.cat([self._prompt, canvas], dim=1)                 # (1, P + L)
        self._check_length(x.shape[1])
        kwargs: dict[str, Any] = {}
        if self.attention is not None:
            allowed = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=self.device)
            kwargs["attention_mask"] = format_mask(allowed, self.attention, model_dtype(self.model))
        logits, _ = call_model(self.model, x, **kwargs)               # (1, P + L, V)
        self.logits_dtype = logits.dtype
        p = self._prompt.shape[1]
        shift = 1 if self.logit_shift else 0                          # hidden i-1 predicts token i
        return logits[:, p + start - shift: p + stop - shift].float()  # (1, len(block), V)

    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        """No cache: the next forward re-reads the canvas anyway."""

