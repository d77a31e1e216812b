"""The model side of the transformers backends: one `call_model` that hides the differences
between forward signatures (`cache=` in transformers 5, `past_key_values=` in remote code), the
KV cache helpers, and the 4-D mask formats."""

from __future__ import annotations

import copy
import inspect
import weakref
from collections.abc import Mapping
from typing import Any

import torch

from engine.backends.base import BackendError


def as_batch(ids: torch.Tensor) -> torch.Tensor:
    """(T,) or (1, T) ids -> (1, T) long."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids[None] if ids.dim() == 1 else ids


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    return next(model.parameters()).dtype


def format_mask(allowed: torch.Tensor, style: str, dtype: torch.dtype) -> torch.Tensor:
    """(Q, K) bool `allowed` -> a (1, 1, Q, K) mask in the form the model adds or selects with:
    `bool` (True = attend; SDPA-only models such as SDAR) or `additive` (0 / dtype min; works with
    both eager and SDPA attention in transformers, and with models that add the mask)."""
    allowed = allowed[None, None]                                   # (1, 1, Q, K)
    if style == "bool":
        return allowed
    if style == "additive":
        zero = torch.zeros((), dtype=dtype, device=allowed.device)
        return torch.where(allowed, zero, torch.finfo(dtype).min)
    raise BackendError(f"Unknown attention mask style {style!r}; use 'additive' or 'bool'.")


_PARAMS: weakref.WeakKeyDictionary[torch.nn.Module, frozenset[str]] = weakref.WeakKeyDictionary()


def _forward_params(model: torch.nn.Module) -> frozenset[str]:
    """The names model.forward takes, read once per model (inspect.signature costs about as
    much as the rest of a decode round's bookkeeping)."""
    params = _PARAMS.get(model)
    if params is None:
        params = _PARAMS[model] = frozenset(inspect.signature(model.forward).parameters)
    return params


def takes_cache(model: torch.nn.Module) -> bool:
    """Whether model.forward takes a cache (`cache` or `past_key_values`)."""
    return bool({"cache", "past_key_values"} & _forward_params(model))


def new_cache() -> Any:
    """An empty DynamicCache (layers appear as they are written)."""
    from transformers import DynamicCache

    return DynamicCache()


def cache_length(cache: Any) -> int:
    return int(cache.get_seq_length()) if cache is not None else 0


def call_model(model: torch.nn.Module, input_ids: torch.Tensor, *, cache: Any = None, last_only: bool = False,
               **kwargs: Any) -> tuple[torch.Tensor, Any]:
    """One forward: (1, T) ids -> (logits (1, T, V) in the model's dtype, the cache after the call).
    `cache` goes in as `cache` (transformers 5) or `past_key_values` (remote code for 4.x);
    `last_only` asks models that support it for the last position only (logits (1, 1, V)):
    a long prompt's full logits would not fit. Other kwargs pass through."""
    params = _forward_params(model)
    if cache is not None:
        kwargs["cache" if "cache" in params else "past_key_values"] = cache
        kwargs.setdefault("use_cache", True)
    if last_only and "logits_to_keep" in params:
        kwargs["logits_to_keep"] = 1
    with torch.inference_mode():
        out = model(input_ids=input_ids, **kwargs)
    logits = out["logits"] if isinstance(out, Mapping) else out[0]
    returned = None
    if isinstance(out, Mapping):
        keys = set(out.keys())
        returned = out["cache"] if "cache" in keys else out["past_key_values"] if "past_key_values" in keys else None
    if returned is not None and hasattr(returned, "get_seq_length"):
        cache = returned
    return logits, cache


def restore_cache(cache: Any, length: int, snapshot: Any = None) -> Any:
    """Undo whatever a read-only forward appended: crop back to `length`, or fall back to a
    deep copy taken before the call for caches that cannot crop."""
    extra = cache_length(cache) - length
    if extra == 0:
        return cache
    if hasattr(cache, "crop") and extra > 0:
        cache.crop(-extra)  # a negative count removes that many tokens (transformers 4.x and 5.x)
        return cache
    if snapshot is not None:
        return snapshot
    raise BackendError("The model's cache cannot be cropped, so denoising would corrupt it; "
                       "run this model with use_cache disabled.")


def snapshot_if_needed(cache: Any) -> Any:
    """A deep copy only for caches without `crop` (DynamicCache crops in place)."""
    return None if hasattr(cache, "crop") else copy.deepcopy(cache)
