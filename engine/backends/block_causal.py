"""Block-causal diffusion backends (SDAR, Fast-dLLM v2, LLaDA2): the prompt and every
finished block live in a KV cache; the block being decoded attends to the whole cache and
bidirectionally to itself. `denoise` reads the cache and leaves it as it was (the forward's
appended keys are cropped off again); `commit` runs the finished block once and keeps its KV.

Attention, per position i of the sequence [prompt | block_1 | ... | block_b]:
    allowed(i, j) = j < segment_end(i)
where a prompt token is its own segment (causal prefill) and a block is one segment
(bidirectional inside, sees everything before). The cached path realises this with a causal
mask for prefill and an all-true (B, cache + B) mask for each block; `use_cache=False` is the
slow reference that recomputes the whole sequence with the full (T, T) mask every forward.

How a mask reaches the model (`mask_style`):
    "additive"   (1, 1, Q, K) float, 0 = attend, dtype-min = blocked. transformers models
                 (eager and SDPA) take it as given; LLaDA2 adds it.
    "bool"       (1, 1, Q, K) bool, True = attend (SDAR, which calls SDPA with it).
    "block_size" no mask; the model builds `q // bs >= kv // bs` from a `block_size` kwarg
                 (Fast-dLLM v2): block_size=1 is causal, block_size=cache+B is all-true.
`store_flag` names the kwarg with which a model is told to write its cache (SDAR: store_kv,
Fast-dLLM v2: update_past_key_values); without one the model writes on every forward and
denoise crops it back.

With `logit_shift` (Fast-dLLM v2) block position 0 is predicted by the last position of the
previous forward that wrote the cache (prefill or commit); those logits are kept for it.

Aligned blocks (`prefill(prompt, block_size=bs)`, as SDAR's and Fast-dLLM v2's own loops do):
blocks sit at absolute multiples of bs over [prompt | generation]. The prompt's whole blocks are
prefilled in one forward under the block-causal mask (bidirectional inside each block, as in
training), and its last P mod bs tokens (the "pending" tail) are not cached yet: they share the
first block with its masks, so every denoise and the commit of that block run tail + block.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.hf_calls import (
    as_batch,
    cache_length,
    call_model,
    format_mask,
    model_dtype,
    new_cache,
    restore_cache,
    snapshot_if_needed,
)
from engine.backends.hf_text import HFTextMixin

MASK_STYLES = ("additive", "bool", "block_size")


class BlockCausalBackend(HFTextMixin):
    """Block diffusion over a KV cache (or, with use_cache=False, its uncached reference)."""

    kind = "diffusion"

    def __init__(
        self, model: torch.nn.Module, tokenizer: Any, *, name: str, mask_id: int, logit_shift: bool,
        device: torch.device, mask_style: str = "additive", store_flag: str | None = None,
        use_cache: bool = True, max_length: int | None = None,
    ) -> None:
        if mask_style not in MASK_STYLES:
            raise BackendError(f"Unknown mask style {mask_style!r} for '{name}'; use one of {', '.join(MASK_STYLES)}.")
        if mask_style == "block_size" and not use_cache:
            raise BackendError(f"Model '{name}' builds its own block mask, so it cannot run without a cache.")
        self._init_diffusion(model, tokenizer, name, device, mask_id, logit_shift, max_length)
        self.mask_style = mask_style
        self.store_flag = store_flag
        self.use_cache = use_cache
        self._dtype = model_dtype(model)
        # the dtype of the last forward's logits before .float() (bf16, or float32 when the model
        # upcasts, as LLaDA2's does): the upstream loops sample in it (model_dtype_probs)
        self.logits_dtype = self._dtype
        self.cache: Any = None
        self._ids: torch.Tensor | None = None           # (1, C) prompt + committed blocks
        self._segment_end: list[int] = []               # per position of _ids: end of its segment
        self._prompt_len = 0
        self._pending: torch.Tensor | None = None       # (1, t) aligned prompt tail, not cached yet
        self._last_logits: torch.Tensor | None = None   # (1, 1, V) prediction for the next position
        self.supports_aligned_blocks = True

    # -- protocol ---------------------------------------------------------------------------

    def prefill(self, prompt_ids: torch.Tensor, block_size: int | None = None) -> None:
        """Start a generation: write the (1, P) prompt into a fresh cache, attended causally, or
        with `block_size` its whole aligned blocks block-causally (the tail waits, see above)."""
        prompt = as_batch(prompt_ids).to(self.device)
        p = prompt.shape[1]
        if p < 1:
            raise BackendError(f"Model '{self.name}' needs a prompt of at least one token.")
        self._check_length(p)
        whole = p // block_size * block_size if block_size else p
        self._ids, self._pending, self._prompt_len = prompt[:, :whole], prompt[:, whole:], p
        self._segment_end = ([(i // block_size + 1) * block_size for i in range(whole)] if block_size
                             else list(range(1, p + 1)))
        self._last_logits = None
        if not self.use_cache:
            return
        self.cache = new_cache()
        if whole == 0:
            return
        segment_end = torch.tensor(self._segment_end, device=self.device)
        allowed = torch.arange(whole, device=self.device)[None, :] < segment_end[:, None]   # (W, W)
        logits = self._cached_forward(self._ids, start=0, causal=True, store=True, last_only=True,
                                      allowed=allowed, chunk=block_size)           # (1, 1|W, V)
        self._last_logits = logits[:, -1:].float()

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        """Logits (1, len(block), V) for `block` of the (1, L) canvas; the cache is left unchanged."""
        x = self._with_pending(self._block_ids(canvas, block))                    # (1, t + B)
        if not self.use_cache:
            return self._reference_logits(x)
        start = cache_length(self.cache)
        snapshot = snapshot_if_needed(self.cache)
        logits = self._cached_forward(x, start=start, causal=False, store=False)   # (1, t + B, V)
        self.cache = restore_cache(self.cache, start, snapshot)
        return self._align(logits.float())

    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        """The block is final: run it once and keep its keys and values."""
        x = self._with_pending(self._block_ids(canvas, block))                    # (1, t + B)
        c, b = self._ids.shape[1], x.shape[1]
        if self.use_cache:
            logits = self._cached_forward(x, start=c, causal=False, store=True, last_only=True)
            self._last_logits = logits[:, -1:].float()                                  # (1, 1, V)
        self._ids = torch.cat([self._ids, x], dim=1)
        self._pending = self._ids[:, :0]
        self._segment_end += [c + b] * b

    @property
    def next_logits(self) -> torch.Tensor | None:
        """(1, V) logits for the position after everything cached (from prefill or the last
        commit), or None before anything was cached."""
        return None if self._last_logits is None else self._last_logits[:, -1]

    # -- internals --------------------------------------------------------------------------

    def _block_ids(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        """The block's ids (1, B), after checking it starts right after what is committed."""
        if self._ids is None:
            raise BackendError("denoise/commit was called before prefill: start a generation with prefill(prompt_ids).")
        canvas = as_batch(canvas).to(self.device)
        start, stop, _ = block.indices(canvas.shape[1])
        committed = self._ids.shape[1] + self._pending.shape[1] - self._prompt_len
        if start != committed:
            raise BackendError(f"Block starting at position {start} was given, but {committed} positions are "
                               f"committed: commit each finished block, in order, before the next one.")
        if stop <= start:
            raise BackendError(f"Block {start}:{stop} is empty.")
        self._check_length(self._prompt_len + stop)
        return canvas[:, start:stop]

    def _with_pending(self, x: torch.Tensor) -> torch.Tensor:
        """The aligned prompt tail (if any) in front of the block's ids."""
        return torch.cat([self._pending, x], dim=1) if self._pending.shape[1] else x

    def _cached_forward(self, x: torch.Tensor, *, start: int, causal: bool, store: bool,
                        last_only: bool = False, allowed: torch.Tensor | None = None,
                        chunk: int | None = None) -> torch.Tensor:
        """Run (1, B) ids at positions start..start+B against the cache -> logits (1, B, V)
        (or (1, 1, V) with last_only, where the model supports it), in the model's dtype.
        `allowed` (B, B) replaces the causal prefill mask (aligned prefill; `chunk` is its block
        size for models that build the mask themselves)."""
        b = x.shape[1]
        kwargs: dict[str, Any] = {"position_ids": torch.arange(start, start + b, device=self.device)[None]}
        if self.mask_style == "block_size":
            kwargs["block_size"] = (chunk or 1) if causal else start + b
        else:
            allowed_now = torch.ones(b, start + b, dtype=torch.bool, device=self.device)   # (B, C + B)
            if causal:
                allowed_now = torch.ones(b, b, dtype=torch.bool, device=self.device).tril()  # (P, P), empty cache
            allowed = allowed if allowed is not None else allowed_now
            kwargs["attention_mask"] = format_mask(allowed, self.mask_style, self._dtype)
        if self.store_flag:
            kwargs[self.store_flag] = store
        logits, self.cache = call_model(self.model, x, cache=self.cache, last_only=last_only, **kwargs)
        self.logits_dtype = logits.dtype
        return logits

    def _reference_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Slow reference: the whole sequence [committed | tail + block] from scratch, block-causal mask."""
        c, b, t = self._ids.shape[1], x.shape[1], self._pending.shape[1]
        seq = torch.cat([self._ids, x], dim=1)                                     # (1, T)
        seg_end = torch.tensor(self._segment_end + [c + b] * b, device=self.device)  # (T,)
        keys = torch.arange(c + b, device=self.device)
        allowed = keys[None, :] < seg_end[:, None]                                 # (T, T)
        logits, _ = call_model(
            self.model, seq, attention_mask=format_mask(allowed, self.mask_style, self._dtype),
            position_ids=keys[None], use_cache=False,
        )                                                                          # (1, T, V)
        self.logits_dtype = logits.dtype
        shift = 1 if self.logit_shift else 0
        return logits[:, c + t - shift: c + b - shift].float()                     # (1, B, V)

    def _align(self, logits: torch.Tensor) -> torch.Tensor:
        """(1, t + B, V) logits at tail + block positions -> logits predicting the B block positions."""
        t = self._pending.shape[1]
        if not self.logit_shift:
            return logits[:, t:]
        if t:
            return logits[:, t - 1: -1]
        return torch.cat([self._last_logits, logits[:, :-1]], dim=1)
