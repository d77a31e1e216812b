"""What Sprout keeps between calls, as types: the clean stream's per-layer state (the cache of
prefill / commit) and what the noisy stream reads of it (the context of denoise and of the BD
training pass). One entry per layer, in layer order; a layer's mixer makes and reads its own
kind (sprout/modeling.py).

Shapes: B batch, T cached tokens, H heads, D = K = V head dim, ch = 3 * H * D pre-conv
channels, NB blocks per row, C block size, U distinct block starts (NB or NB / 2, see
`delta_layer.repeat_period`), L the GDN chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch


@dataclass(frozen=True)
class AttentionState:
    """An A layer's clean keys and values (B, H, T, D), RoPE applied."""

    keys: torch.Tensor
    values: torch.Tensor


@dataclass(frozen=True)
class ChunkFeatures:
    """What the BD training pass keeps of a G layer's chunked clean pass to read the state
    before any position (dlm_kernels.gated_delta.chunk_gated_delta_rule_with_intermediates):
    pre-conv projections `mix` (B, T, ch), normalised `keys` (B, T, H, K), the state before
    each chunk (B, N, H, K, V), V' (B, T, H, V) and the in-chunk cumulative log decay (B, T, H)."""

    mix: torch.Tensor
    keys: torch.Tensor
    chunk_states: torch.Tensor
    v_new: torch.Tensor
    gamma: torch.Tensor


@dataclass(frozen=True)
class DeltaState:
    """A G layer's memory after the clean tokens: the state S (B, H, K, V), float32, and the
    last conv-1 pre-conv projections `tail` (B, conv-1, ch) that the next token's conv reads.
    `features` only in the BD training pass."""

    state: torch.Tensor
    tail: torch.Tensor
    features: ChunkFeatures | None = None


LayerState = AttentionState | DeltaState


@dataclass(frozen=True)
class SproutCache:
    """The clean context: one state per layer, the number of tokens in it, and the logits for
    the token after it (B, V), which a shifted block's first token reads (`logit_shift`).
    Immutable: commit returns a new cache, so a caller may keep the old one."""

    layers: tuple[LayerState, ...]
    length: int
    next_logits: torch.Tensor | None = None

    def with_next_logits(self, logits: torch.Tensor) -> SproutCache:
        return replace(self, next_logits=logits)


@dataclass(frozen=True)
class AttentionContext:
    """What an A layer's noisy blocks attend to: the clean keys / values (B, H, T, D) and
    `allowed` (B, NB, T) = clean position < block start; None when decoding one block right
    after the cache, which may see all of it."""

    keys: torch.Tensor
    values: torch.Tensor
    allowed: torch.Tensor | None


@dataclass(frozen=True)
class ChunkPrefix:
    """Training: the state at a block start p inside GDN chunk n is the state before the chunk
    brought forward over the chunk's first r = p mod L tokens,
        S_p^T q = e^{G_r} S_n^T q + sum_{s < r} e^{G_r - G_s} (k_s . q) v'_s
    `decay` e^{G_r} (B, U, H); `keys` (B, U, L, H, K) and `values` V' (B, U, L, H, V) of those
    tokens; `weights` e^{G_r - G_s} (B, U, H, L), zero for s >= r."""

    decay: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    weights: torch.Tensor


@dataclass(frozen=True)
class DeltaContext:
    """What a G layer's noisy blocks read: the clean state before each distinct block start
    (B, U, H, K, V), the pre-conv projections before each block (B, NB, conv-1, ch), and, in
    training, the chunk prefix that brings a chunk-start state to the block start."""

    state: torch.Tensor
    tail: torch.Tensor
    prefix: ChunkPrefix | None = None


LayerContext = AttentionContext | DeltaContext


@dataclass(frozen=True)
class Context:
    """What the noisy stream reads of the clean stream, one entry per layer."""

    layers: tuple[LayerContext, ...]
