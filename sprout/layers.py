"""Sprout's parts that a transformer has: RMSNorm, the SwiGLU MLP, rotary positions, and the A
(attention) layer: RoPE attention over the clean prefix, causal in the clean stream and, for a
noisy block, bidirectional inside the block (sprout/modeling.py puts the layers together)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .cache import (
    AttentionContext,
    AttentionState,
)
from .config import SproutConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def rope(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary embedding. x (..., T, H, D), pos (..., T) absolute positions (rotate-half form)."""
    half = x.shape[-1] // 2
    freq = theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    ang = pos.to(torch.float32)[..., None] * freq                       # (..., T, D/2)
    cos, sin = ang.cos()[..., None, :].to(x.dtype), ang.sin()[..., None, :].to(x.dtype)  # (..., T, 1, D/2)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class AttentionLayer(nn.Module):
    def __init__(self, cfg: SproutConfig):
        super().__init__()
        self.h, self.d, self.theta = cfg.num_heads, cfg.head_dim, cfg.rope_theta
        inner = cfg.num_heads * cfg.head_dim
        self.qkv = nn.Linear(cfg.hidden_size, 3 * inner, bias=False)
        self.out = nn.Linear(inner, cfg.hidden_size, bias=False)
        # the noisy blocks' attention in training: "blocks" (`_blocks_attention`), or "dense",
        # the masked form training used before (bench/train.py times the two)
        self.train_attention = "blocks"

    def _qkv(self, x: torch.Tensor, pos: torch.Tensor):
        *lead, T, _ = x.shape
        q, k, v = self.qkv(x).view(*lead, T, 3, self.h, self.d).unbind(-3)   # (..., T, H, D)
        return rope(q, pos, self.theta), rope(k, pos, self.theta), v

    def clean(self, x: torch.Tensor, pos: torch.Tensor, past: AttentionState | None,
              keep_features: bool = False) -> tuple[torch.Tensor, AttentionState]:
        """x (B, n, d) new clean tokens at `pos` (B, n); causal over the past + new tokens.
        (Its keys and values are all the BD training pass needs: keep_features changes nothing.)"""
        o, state = self._clean_heads(*self._qkv(x, pos), past)
        return self.out(o), state

    def _clean_heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     past: AttentionState | None) -> tuple[torch.Tensor, AttentionState]:
        """q, k, v (B, n, H, D) of new clean tokens -> heads' output (B, n, H*D) and the state."""
        B, n = q.shape[:2]
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                     # (B, H, n, D)
        if past is not None:
            k, v = torch.cat([past.keys, k], 2), torch.cat([past.values, v], 2)
        before = k.shape[2] - n
        mask = torch.ones(n, before + n, dtype=torch.bool, device=q.device).tril(before)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)         # (B, H, n, D)
        return o.transpose(1, 2).reshape(B, n, -1), AttentionState(k, v)

    def context(self, state: AttentionState, starts: torch.Tensor | None = None) -> AttentionContext:
        """Training (`starts` (B, NB)): each block sees the clean positions before its start.
        Decoding (None): one block right after the cache sees all of it."""
        allowed = None
        if starts is not None:
            allowed = torch.arange(state.keys.shape[2], device=starts.device) < starts[..., None]   # (B, NB, T)
        return AttentionContext(state.keys, state.values, allowed)

    def noisy(self, x: torch.Tensor, pos: torch.Tensor, ctx: AttentionContext) -> torch.Tensor:
        """x (B, NB, C, d) noisy blocks at `pos` (B, NB, C)."""
        return self.out(self._noisy_heads(*self._qkv(x, pos), ctx))

    def _noisy_heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: AttentionContext) -> torch.Tensor:
        """q, k, v (B, NB, C, H, D) of noisy blocks -> heads' output (B, NB, C, H*D). Training
        (several blocks, `ctx.allowed` set) takes `_blocks_attention`; decoding's one block
        attends to the whole cache and itself in one SDPA call."""
        if ctx.allowed is not None:
            return (blocks_attention_dense if self.train_attention == "dense" else _blocks_attention)(q, k, v, ctx)
        B, NB, C = q.shape[:3]
        q, k, v = (t.reshape(B, NB * C, self.h, self.d).transpose(1, 2) for t in (q, k, v))
        keys, values = torch.cat([ctx.keys, k], 2), torch.cat([ctx.values, v], 2)   # (B, H, T+C, D)
        o = F.scaled_dot_product_attention(q, keys, values)
        return o.transpose(1, 2).reshape(B, NB, C, -1)

    def clean_then_noisy(self, x: torch.Tensor, pos: torch.Tensor, n: int,
                         past: AttentionState | None) -> tuple[torch.Tensor, AttentionState]:
        """`clean` on rows [:n] of x (B, n+C, d), then `noisy` on rows [n:] as one block right
        after them, with one projection each way for both (the fused decoding pass)."""
        q, k, v = self._qkv(x, pos)                                         # (B, n+C, H, D)
        o_clean, state = self._clean_heads(q[:, :n], k[:, :n], v[:, :n], past)
        o_noisy = self._noisy_heads(q[:, None, n:], k[:, None, n:], v[:, None, n:], self.context(state))
        return self.out(torch.cat([o_clean, o_noisy[:, 0]], 1)), state


def _blocks_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: AttentionContext) -> torch.Tensor:
    """Each noisy block attends to the clean positions before its start and to its own C tokens:
    q, k, v (B, NB, C, H, D) -> (B, NB, C, H*D). One softmax over both sets of logits, but the
    block part is computed per block, (C x C), not as a dense (NB*C x NB*C) product of which
    all but one diagonal block is masked: at NB = 36 that cut an A layer's noisy attention, forward
    and backward, from 1.35 to 0.77 CPU-s on one thread (models/README.md). The dense masked
    form, `blocks_attention_dense`, is the reference (tests/sprout)."""
    B, NB, C, H, D = q.shape
    T = ctx.keys.shape[2]
    q = q * D**-0.5                      # the scale on the queries (D wide), not on the logits (T wide)
    q_rows = q.reshape(B, NB * C, H, D).transpose(1, 2)                        # (B, H, NB*C, D)
    to_clean = q_rows @ ctx.keys.transpose(-1, -2)                             # (B, H, NB*C, T)
    to_clean = to_clean.masked_fill(~ctx.allowed.repeat_interleave(C, dim=1)[:, None], float("-inf"))
    qb, kb, vb = (t.permute(0, 1, 3, 2, 4) for t in (q, k, v))                # (B, NB, H, C, D)
    to_block = (qb @ kb.transpose(-1, -2)).transpose(1, 2).reshape(B, H, NB * C, C)
    p = torch.softmax(torch.cat([to_clean, to_block], -1), -1)                 # (B, H, NB*C, T+C)
    from_block = p[..., T:].reshape(B, H, NB, C, C).transpose(1, 2) @ vb       # (B, NB, H, C, D)
    o = p[..., :T] @ ctx.values + from_block.transpose(1, 2).reshape(B, H, NB * C, D)
    return o.transpose(1, 2).reshape(B, NB, C, H * D)


def blocks_attention_dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: AttentionContext) -> torch.Tensor:
    """`_blocks_attention` as one SDPA call over the clean keys and every block's keys, with a
    mask that keeps each block's own: the form training used before, the reference in the tests."""
    B, NB, C, H, D = q.shape
    q, k, v = (t.reshape(B, NB * C, H, D).transpose(1, 2) for t in (q, k, v))
    keys, values = torch.cat([ctx.keys, k], 2), torch.cat([ctx.values, v], 2)   # (B, H, T+NB*C, D)
    to_clean = ctx.allowed.repeat_interleave(C, dim=1)                          # (B, NB*C, T)
    block_of = torch.arange(NB, device=q.device).repeat_interleave(C)
    to_noisy = (block_of[:, None] == block_of[None, :]).expand(B, -1, -1)       # same block only
    mask = torch.cat([to_clean, to_noisy], dim=2)[:, None]                      # (B, 1, NB*C, T+NB*C)
    o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
    return o.transpose(1, 2).reshape(B, NB, C, -1)
