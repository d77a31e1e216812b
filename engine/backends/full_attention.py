"""Full-attention diffusion backends (LLaDA, Dream): attention is bidirectional everywhere and
commit is a no-op. With cache "none" (the reference) every forward sees the prompt and the whole
canvas. With Fast-dLLM v1's "prefix" or "dual" cache (engine/backends/kv_window.py) a block's first
forward runs the whole sequence and keeps every layer's keys and values; its later forwards feed
the block and the suffix (prefix) or the block alone (dual) against them.

LLaDA predicts position i from hidden i (`logit_shift=False`). Dream was adapted from an AR
model and predicts position i from hidden i-1 (`logit_shift=True`): the logits for canvas
position 0 come from the last prompt position. The shift happens here, never in samplers.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.hf_calls import as_batch, call_model, format_mask, model_dtype, takes_cache
from engine.backends.hf_text import HFTextMixin
from engine.backends.kv_window import WINDOWED_MODES, WindowCache, window_of

# How the all-true attention mask is handed to the model: not at all (the model is
# bidirectional by itself: LLaDA, Dream with no padding), or as an explicit 4-D mask.
ATTENTION_MODES = (None, "bool", "additive")


class FullAttentionBackend(HFTextMixin):
    """A masked diffusion LM that re-reads prompt + canvas on every forward, or, with a cache,
    only the block's window of it after the block's first forward."""

    kind = "diffusion"
    windowed_cache = True

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
        self.cache_mode = "none"
        self.kv: WindowCache | None = None         # the keys and values of the block's first forward
        self._cached_block: tuple[int, int] | None = None   # the canvas block they were recorded for
        self.positions_computed = 0                # query positions fed to the model since prefill

    @property
    def cache_modes(self) -> tuple[str, ...]:
        """The cache modes this model can run: all of them when its forward takes a cache."""
        return ("none", *WINDOWED_MODES) if takes_cache(self.model) else ("none",)

    # -- protocol ---------------------------------------------------------------------------

    def prefill(self, prompt_ids: torch.Tensor, cache: str = "none") -> None:
        """Remember the (1, P) prompt and the cache mode; nothing runs until the first denoise."""
        prompt_ids = as_batch(prompt_ids).to(self.device)
        if prompt_ids.shape[1] < 1 and self.logit_shift:
            raise BackendError(f"Model '{self.name}' predicts each token from the one before, so it needs a "
                               f"prompt of at least one token.")
        if cache not in self.cache_modes:
            raise BackendError(f"Model '{self.name}' cannot decode with the {cache} cache: its forward takes "
                               f"no cache. Set cache to none.")
        self._prompt = prompt_ids
        self.cache_mode, self.kv, self._cached_block = cache, None, None
        self.positions_computed = 0

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        """Logits (1, len(block), V) for the block, from one forward over prompt + canvas (1, P + L);
        with a cache, over its window of it after the block's first forward (kv_window.py)."""
        if self._prompt is None:
            raise BackendError("denoise was called before prefill: start a generation with prefill(prompt_ids).")
        canvas = as_batch(canvas).to(self.device)
        start, stop, _ = block.indices(canvas.shape[1])
        x = torch.cat([self._prompt, canvas], dim=1)                 # (1, P + L)
        self._check_length(x.shape[1])
        p = self._prompt.shape[1]
        shift = 1 if self.logit_shift else 0                          # hidden i-1 predicts token i
        if self.cache_mode == "none":
            logits = self._forward(x)                                 # (1, P + L, V)
            return logits[:, p + start - shift: p + stop - shift].float()  # (1, len(block), V)
        if self._cached_block != (start, stop):                       # the block's first forward: record
            self.kv = WindowCache()
            try:
                logits = self._forward(x, cache=self.kv)              # (1, P + L, V)
            except Exception as exc:  # noqa: BLE001 - remote code refuses a cache its own way (LLaDA's asserts)
                raise BackendError(f"{self.name} refused the {self.cache_mode} cache ({type(exc).__name__}): its "
                                   f"code keeps no keys and values for reuse. Set cache to none.") from exc
            self.kv.check_recorded(getattr(getattr(self.model, "config", None), "num_hidden_layers", None), self.name)
            self._cached_block = (start, stop)
            return logits[:, p + start - shift: p + stop - shift].float()
        lo, hi = window_of(self.cache_mode, slice(start, stop), p, x.shape[1], shift)
        self.kv.window = (lo, hi)
        try:
            logits = self._forward(x[:, lo:hi], cache=self.kv, start=lo)   # (1, hi - lo, V)
        finally:
            self.kv.window = None
        return logits[:, :stop - start].float()                      # rows lo.. predict block start..

    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        """Nothing to write: the next block's first forward re-reads the canvas (and, with a
        cache, records its keys and values afresh)."""
        self._cached_block = None

    # -- internals --------------------------------------------------------------------------

    def _forward(self, x: torch.Tensor, cache: WindowCache | None = None, start: int = 0) -> torch.Tensor:
        """Logits (1, Q, V) in the model's dtype for the (1, Q) ids `x` at positions start..start+Q,
        attending to every position (the cache's recorded ones, with a cache)."""
        kwargs: dict[str, Any] = {}
        q = x.shape[1]
        keys = q if cache is None or cache.window is None else cache.get_seq_length()
        # An explicit all-true mask: with a cache, a model must not build its own (causal) one.
        style = self.attention or ("additive" if cache is not None else None)
        if style is not None:
            allowed = torch.ones(q, keys, dtype=torch.bool, device=self.device)   # (Q, K)
            kwargs["attention_mask"] = format_mask(allowed, style, model_dtype(self.model))
        if cache is not None:
            kwargs["position_ids"] = torch.arange(start, start + q, device=self.device)[None]
        logits, _ = call_model(self.model, x, cache=cache, **kwargs)
        self.logits_dtype = logits.dtype
        self.positions_computed += q
        return logits

