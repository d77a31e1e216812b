"""Fast-dLLM v1's prefix and dual caches for a full-attention masked LM, as one key/value store.

Followed: NVlabs/Fast-dLLM `llada/generate.py` (`generate_with_prefix_cache`,
`generate_with_dual_cache`) and `llada/model/modeling_llada.py` (`replace_position`), commit
24cc59e75f20a6384bae8c905965bb090b96388e. The slow references are reference/fast_dllm_cache.py.

At a block's first forward the model runs over the whole sequence [prompt | canvas] (T positions)
and `WindowCache` records every layer's keys and values, (1, H_kv, T, D) each. Every later forward
of that block feeds only a window of positions, [start, stop):
    prefix: start = block start, stop = T      (the block and everything after it)
    dual:   start = block start, stop = block end
and each layer attends over the recorded keys and values with the window's rows replaced by the
fresh ones, written in place (as Fast-dLLM's `replace_position` does): rows outside the window
stay as the block's first forward left them. A logit-shifted model (Dream) predicts position i
from hidden i - 1, so its window starts one position earlier.

Why the cached loops differ from the no-cache loop: attention is bidirectional, so the keys and
values of a position depend on every token of the sequence. After the block's first round some
of its masks became tokens; a fresh forward would give every position new keys and values, but the
cache keeps the prefix's (and with dual, the suffix's) from the block start. The first round of
each block is the full forward, equal to the no-cache loop's; from the second round on the logits
differ, by how much those stale rows would have moved. At the next block start everything is
recomputed, so the cache then equals a fresh computation (tests/reference/test_upstream_fast_dllm_cache.py checks both).

How the keys and values are reached: through transformers' cache interface. A transformers-style
attention layer calls `cache.update(key_states, value_states, layer_idx, ...)` with its rotated
keys and attends over what it returns; our tiny Qwen2 stand-ins do, and so does any model written
that way. LLaDA's own remote code on the hub keeps no cache at all (it refuses `past_key_values`),
and Fast-dLLM ships a modified modeling file for it whose attention takes `past_key_values` tuples
and `replace_position` instead: a real LLaDA checkpoint needs a model whose attention calls
`update` as above. A model that never calls it is refused with a sentence (`check_recorded`).
"""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError

WINDOWED_MODES = ("prefix", "dual")


class WindowCache:
    """Per-layer keys and values of the whole sequence; `window` None records a full forward,
    `window = (start, stop)` makes the next forward feed those positions only."""

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = []      # per layer (1, H_kv, T, D), rotated as the model stores them
        self.values: list[torch.Tensor] = []
        self.window: tuple[int, int] | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """What a layer attends over: the recorded rows with the window's replaced by the fresh
        (1, H_kv, stop - start, D) ones; while recording, the fresh rows themselves."""
        if self.window is None:
            if layer_idx == len(self.keys):
                self.keys.append(key_states)
                self.values.append(value_states)
            else:
                self.keys[layer_idx], self.values[layer_idx] = key_states, value_states
            return key_states, value_states
        start, stop = self.window
        if stop - start != key_states.shape[2]:
            raise BackendError(f"The cache expected keys for positions {start}:{stop}, got {key_states.shape[2]} rows.")
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        keys[:, :, start:stop] = key_states
        values[:, :, start:stop] = value_states
        return keys, values

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return int(self.keys[layer_idx].shape[2]) if len(self.keys) > layer_idx else 0

    def check_recorded(self, layers: int | None, name: str) -> None:
        """After a recording forward: every layer handed its keys and values over, else refuse."""
        if not self.keys or (layers is not None and len(self.keys) != layers):
            raise BackendError(f"{name} did not hand its attention keys and values to the cache (its attention "
                               f"never calls cache.update), so it cannot decode with a prefix or dual cache: "
                               f"set cache to none.")


def window_of(mode: str, block: slice, prompt_length: int, total: int, shift: int) -> tuple[int, int]:
    """The positions of [prompt | canvas] a cached forward feeds for canvas `block`: from the
    block start (one earlier for a shifted model) to the sequence end (prefix) or block end (dual)."""
    start = prompt_length + block.start - shift
    return start, (total if mode == "prefix" else prompt_length + block.stop)
