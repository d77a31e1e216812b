"""Sprout: a small block-diffusion LM whose history lives in a Gated DeltaNet (GDN) state.

One backbone, two streams:
- clean stream (commit mode): token-causal over the context. G layers run the gated delta
  rule S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T and keep S; A layers keep RoPE
  keys/values. The AR twin (`causal=True`) is this stream alone, trained on the next token.
- noisy stream (denoise mode): a block of C partly-masked tokens at positions p..p+C-1.
  A layers: the block attends to the clean prefix (< p) and bidirectionally to itself.
  G layers: a softmax over the block's own keys plus ONE history slot whose value is the
  read-out S_p^T q_i of the clean state before the block, and whose logit is
  bias_h + lambda_h * log(C) (the learnable block-size calibration). Denoise never writes S.
- logit_shift (for a twin adapted from AR weights): the logits for block token i come from
  noisy position i-1, and for i = 0 from the clean stream's last position (its next-token
  logits), so every prediction is made where the AR twin made it.

The same `_noisy` code serves training (many blocks per sequence, vectorised) and inference
(one block against the cache), so "training logits == prefill + denoise" is a real check.
"""

from __future__ import annotations

import math
import os

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import WeightRenaming

from dlm_kernels.block_softmax import block_softmax_with_history
from dlm_kernels.gated_delta import chunk_gated_delta_rule_with_intermediates, gated_delta_rule, gated_delta_step

from .cache import (
    AttentionContext,
    AttentionState,
    ChunkFeatures,
    ChunkPrefix,
    Context,
    DeltaContext,
    DeltaState,
    LayerContext,
    LayerState,
    SproutCache,
)
from .config import SproutConfig

GDN_CHUNK = 16  # chunk of the WY/UT form in the clean stream
# SPROUT_TRITON=0 keeps Sprout on the torch kernels on CUDA too, so validation during GPU training
# runs the code of the training steps (scripts/train_sprout_gpu.sh); by default the kernels use
# Triton on CUDA when no gradient is needed.
USE_TRITON = os.environ.get("SPROUT_TRITON") != "0"


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
        """q, k, v (B, NB, C, H, D) of noisy blocks -> heads' output (B, NB, C, H*D)."""
        B, NB, C = q.shape[:3]
        q, k, v = (t.reshape(B, NB * C, self.h, self.d).transpose(1, 2) for t in (q, k, v))
        keys, values = torch.cat([ctx.keys, k], 2), torch.cat([ctx.values, v], 2)   # (B, H, T+NB*C, D)
        mask = None
        if ctx.allowed is not None:
            to_clean = ctx.allowed.repeat_interleave(C, dim=1)                      # (B, NB*C, T)
            block_of = torch.arange(NB, device=q.device).repeat_interleave(C)
            to_noisy = (block_of[:, None] == block_of[None, :]).expand(B, -1, -1)   # same block only
            mask = torch.cat([to_clean, to_noisy], dim=2)[:, None]                   # (B, 1, NB*C, T+NB*C)
        o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        return o.transpose(1, 2).reshape(B, NB, C, -1)

    def clean_then_noisy(self, x: torch.Tensor, pos: torch.Tensor, n: int,
                         past: AttentionState | None) -> tuple[torch.Tensor, AttentionState]:
        """`clean` on rows [:n] of x (B, n+C, d), then `noisy` on rows [n:] as one block right
        after them, with one projection each way for both (the fused decoding pass)."""
        q, k, v = self._qkv(x, pos)                                         # (B, n+C, H, D)
        o_clean, state = self._clean_heads(q[:, :n], k[:, :n], v[:, :n], past)
        o_noisy = self._noisy_heads(q[:, None, n:], k[:, None, n:], v[:, None, n:], self.context(state))
        return self.out(torch.cat([o_clean, o_noisy[:, 0]], 1)), state


class GatedDeltaLayer(nn.Module):
    def __init__(self, cfg: SproutConfig):
        super().__init__()
        self.h, self.d = cfg.num_heads, cfg.head_dim
        inner = cfg.num_heads * cfg.head_dim
        self.qkv = nn.Linear(cfg.hidden_size, 3 * inner, bias=False)
        self.conv = nn.Parameter(torch.zeros(3 * inner, cfg.conv_size))   # depthwise, causal
        self.decay = nn.Linear(cfg.hidden_size, cfg.num_heads, bias=False)  # alpha_t
        self.write = nn.Linear(cfg.hidden_size, cfg.num_heads, bias=False)  # beta_t (pre-sigmoid)
        self.gate = nn.Linear(cfg.hidden_size, inner, bias=False)          # z for the gated norm
        self.A_log = nn.Parameter(torch.log(torch.linspace(1.0, 16.0, cfg.num_heads)))
        self.dt_bias = nn.Parameter(torch.full((cfg.num_heads,), math.log(math.expm1(0.01))))
        self.out_norm = RMSNorm(cfg.head_dim, cfg.rms_norm_eps)
        self.out = nn.Linear(inner, cfg.hidden_size, bias=False)
        # denoise mode: per-head logit scale for L2-normed q.k, and the history slot's logit
        # bias_h + lambda_h * log(C): an unbiased slot would get ~1/(C+1) of the weight.
        self.block_logit_scale = nn.Parameter(torch.full((cfg.num_heads,), math.log(cfg.head_dim**0.5)))
        self.hist_bias = nn.Parameter(torch.zeros(cfg.num_heads))
        self.hist_lambda = nn.Parameter(torch.ones(cfg.num_heads))

    def _conv(self, mix: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
        """Causal depthwise conv. mix (..., n, ch), tail (..., conv-1, ch) -> (..., n, ch), SiLU.
        out_t = sum_j w_j * full_{t+j} over the conv window, written as shifted multiply-adds:
        for these sizes that is several times faster on CPU than F.conv1d (the reference in the
        tests), above all for the few-token inputs of decoding."""
        full = torch.cat([tail, mix], dim=-2)                     # (..., conv-1+n, ch)
        width, n = self.conv.shape[1], mix.shape[-2]
        out = full[..., 0:n, :] * self.conv[:, 0]
        for j in range(1, width):
            out = out + full[..., j:j + n, :] * self.conv[:, j]
        return F.silu(out)

    def _features(self, x: torch.Tensor, tail: torch.Tensor):
        mix = self.qkv(x)                                          # (..., n, 3*H*K) pre-conv
        *lead, n, _ = mix.shape
        q, k, v = self._conv(mix, tail).view(*lead, n, 3, self.h, self.d).unbind(-3)   # (..., n, H, K)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        g = -self.A_log.exp() * F.softplus(self.decay(x) + self.dt_bias)    # (..., n, H) log a_t
        beta = torch.sigmoid(self.write(x))
        return mix, q, k, v, g, beta

    def _output(self, o: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Gated RMSNorm: norm(o) * silu(z), per head. o (..., n, H, V)."""
        z = self.gate(x).view(o.shape)
        return self.out((self.out_norm(o) * F.silu(z)).flatten(-2))

    def empty_tail(self, lead: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        return like.new_zeros(*lead, self.conv.shape[1] - 1, self.conv.shape[0])

    def clean(self, x: torch.Tensor, pos: torch.Tensor, past: DeltaState | None,
              keep_features: bool = False) -> tuple[torch.Tensor, DeltaState]:
        """x (B, n, d). Causal gated delta rule from the past state (zeros if none); the
        positions are not read (the recurrence has no position encoding).
        keep_features (the BD training pass): also keep what `context` needs to read the state
        before any position: chunk start states, V', the in-chunk decays and k."""
        tail = past.tail if past is not None else self.empty_tail((x.shape[0],), x)
        o, state = self._clean_heads(*self._features(x, tail), tail, past, keep_features)
        return self._output(o, x), state

    def _clean_heads(self, mix, q, k, v, g, beta, tail: torch.Tensor, past: DeltaState | None,
                     keep_features: bool = False) -> tuple[torch.Tensor, DeltaState]:
        """The delta rule over n new clean tokens' features (B, n, ...) -> o (B, n, H, V) and the state."""
        n = q.shape[1]
        state = past.state if past is not None else None
        features = None
        if keep_features:
            run = chunk_gated_delta_rule_with_intermediates(q, k, v, g, beta, initial_state=state,
                                                            chunk_size=GDN_CHUNK)
            o, new_state = run.output, run.final_state
            features = ChunkFeatures(mix, k, run.chunk_states, run.v_new, run.gamma)
        elif n == 1 and state is not None:
            o, new_state = gated_delta_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], state)
            o = o[:, None]
        else:
            o, new_state = gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=GDN_CHUNK,
                                            use_triton=USE_TRITON)
        new_tail = torch.cat([tail, mix], dim=1)[:, -tail.shape[1]:]
        return o, DeltaState(new_state, new_tail, features)

    def context(self, state: DeltaState, starts: torch.Tensor | None = None) -> DeltaContext:
        """Training (`starts` (B, NB), from a keep_features pass): the state before each distinct
        block start and the pre-conv tail before each block. Decoding (None): one block right
        after the cache reads the cached state and tail."""
        if starts is None:
            return DeltaContext(state.state[:, None], state.tail[:, None])
        features = state.features
        if features is None:
            raise ValueError("A G layer's training context needs the clean pass run with keep_features=True.")
        distinct = starts[:, :repeat_period(starts)]
        return DeltaContext(chunk_start_state(features, state.state, distinct),
                            tail=gather_tails(features.mix, starts, self.conv.shape[1] - 1),
                            prefix=chunk_prefix(features, distinct))

    def _history(self, q: torch.Tensor, ctx: DeltaContext) -> torch.Tensor:
        """S_p^T q for every query of every block: q (B, NB, C, H, K) -> (B, NB, C, H, V).
        ctx.state is (B, U, H, K, V) with NB a multiple of U: block j reads state j mod U
        (complementary pairs share a start, so their states are gathered once). In training the
        state is the one at the start of p's chunk, brought forward with `ctx.prefix`."""
        S = ctx.state
        B, U = S.shape[:2]
        _, NB, C, H, K = q.shape
        qg = q.reshape(B, NB // U, U, C, H, K)
        out = torch.einsum("buhkv,bguchk->bguchv", S, qg)
        prefix = ctx.prefix
        if prefix is not None:
            out = out * prefix.decay[:, None, :, None, :, None]
            scores = torch.einsum("bulhk,bguchk->bguchl", prefix.keys, qg) * prefix.weights[:, None, :, None]
            out = out + torch.einsum("bguchl,bulhv->bguchv", scores, prefix.values)
        return out.reshape(B, NB, C, H, -1)

    def noisy(self, x: torch.Tensor, pos: torch.Tensor, ctx: DeltaContext) -> torch.Tensor:
        """x (B, NB, C, d) noisy blocks (positions not read); ctx: the state before each block
        and the tail (B, NB, conv-1, ch)."""
        _, q, k, v, _, _ = self._features(x, ctx.tail)             # (B, NB, C, H, K)
        return self._output(self._noisy_heads(q, k, v, ctx), x)

    def _noisy_heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: DeltaContext) -> torch.Tensor:
        """Noisy blocks' features (B, NB, C, H, K) -> o (B, NB, C, H, V): a softmax over the block
        and the history slot."""
        B, NB, C = q.shape[:3]
        scale = self.d**-0.5
        history = scale * self._history(q, ctx)                      # read-out S_p^T q_i
        flat = lambda t: t.reshape(B * NB, C, self.h, -1).transpose(1, 2)       # noqa: E731 (B*NB, H, C, D)
        q_scaled = q * self.block_logit_scale.exp()[:, None]
        hist_logit = (self.hist_bias + self.hist_lambda * math.log(C)).view(1, self.h, 1)
        o = block_softmax_with_history(flat(q_scaled), flat(k), flat(v), flat(history), hist_logit, scale=1.0,
                                       use_triton=USE_TRITON)
        return o.transpose(1, 2).reshape(B, NB, C, self.h, self.d)

    def clean_then_noisy(self, x: torch.Tensor, pos: torch.Tensor, n: int,
                         past: DeltaState | None) -> tuple[torch.Tensor, DeltaState]:
        """`clean` on rows [:n] of x (B, n+C, d), then `noisy` on rows [n:] as one block right
        after them. One conv runs over both: a noisy row's window then covers the clean rows'
        projections before it, which is the tail the block would read from the new state."""
        tail = past.tail if past is not None else self.empty_tail((x.shape[0],), x)
        mix, q, k, v, g, beta = self._features(x, tail)             # (B, n+C, ...)
        o_clean, state = self._clean_heads(mix[:, :n], q[:, :n], k[:, :n], v[:, :n], g[:, :n], beta[:, :n],
                                           tail, past)
        o_noisy = self._noisy_heads(q[:, None, n:], k[:, None, n:], v[:, None, n:], self.context(state))
        return self._output(torch.cat([o_clean, o_noisy[:, 0]], 1), x), state


def _chunk_of(starts: torch.Tensor, num_states: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For block starts p (B, U): the GDN chunk n = p // L holding p (at most the last state:
    p == T reads the final state) and r = p mod L, the chunk's tokens before p."""
    n = torch.div(starts, GDN_CHUNK, rounding_mode="floor").clamp(max=num_states - 1)
    return n, starts - n * GDN_CHUNK


def chunk_start_state(features: ChunkFeatures, final_state: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """The clean state before the chunk of each block start p (B, U) -> (B, U, H, K, V)."""
    all_states = torch.cat([features.chunk_states, final_state[:, None]], dim=1)   # p == T reads the final state
    B, U = starts.shape
    n, _ = _chunk_of(starts, all_states.shape[1])
    return torch.gather(all_states, 1, n.view(B, U, 1, 1, 1).expand(-1, -1, *all_states.shape[2:]))


def chunk_prefix(features: ChunkFeatures, starts: torch.Tensor) -> ChunkPrefix:
    """What brings the chunk-start state to each block start p (B, U): the chunk's first
    r = p mod L tokens (keys, V', decay weights e^{G_r - G_s}, zero for s >= r), with the
    total decay e^{G_r} of those r."""
    k, v_new, gamma = features.keys, features.v_new, features.gamma
    B, U = starts.shape
    T = k.shape[1]
    n, r = _chunk_of(starts, features.chunk_states.shape[1] + 1)

    def at(t: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:   # t (B, T, ...), pos (B, U, m) -> (B, U, m, ...)
        got = torch.gather(t, 1, pos.clamp(0, T - 1).view(B, -1, *([1] * (t.dim() - 2))).expand(
            -1, -1, *t.shape[2:]))
        return got.view(B, U, pos.shape[-1], *t.shape[2:])

    offsets = torch.arange(GDN_CHUNK, device=starts.device)
    prefix = (n * GDN_CHUNK)[..., None] + offsets                             # (B, U, L)
    g_last = at(gamma, (starts - 1)[..., None])[:, :, 0]                      # G_r, (B, U, H)
    inside = (offsets < r[..., None])[..., None]                              # (B, U, L, 1)
    has_prefix = (r > 0)[..., None]
    # mask before exp: outside the prefix the difference may be positive and overflow
    diff = (g_last[:, :, None] - at(gamma, prefix)).masked_fill(~inside, float("-inf"))
    return ChunkPrefix(decay=torch.where(has_prefix, g_last.exp(), torch.ones_like(g_last)),
                       keys=at(k, prefix), values=at(v_new, prefix),
                       weights=diff.exp().permute(0, 1, 3, 2))               # (B, U, H, L)


def repeat_period(starts: torch.Tensor) -> int:
    """U such that the blocks repeat with period U along dim 1 (complementary pairs: NB/2)."""
    NB = starts.shape[1]
    half = NB // 2
    return half if NB % 2 == 0 and half and torch.equal(starts[:, :half], starts[:, half:]) else NB


def gather_tails(mix: torch.Tensor, starts: torch.Tensor, width: int) -> torch.Tensor:
    """Pre-conv projections at positions p-width..p-1 (zeros before 0). mix (B, T, ch) -> (B, NB, width, ch)."""
    B, NB = starts.shape
    pos = starts[..., None] + torch.arange(-width, 0, device=starts.device)     # (B, NB, width)
    got = torch.gather(mix, 1, pos.clamp(min=0).view(B, -1, 1).expand(-1, -1, mix.shape[-1]))
    return got.view(B, NB, width, -1) * (pos >= 0)[..., None]


class SproutBlock(nn.Module):
    """One layer: norm, mixer (a G or an A layer), residual, norm, SwiGLU MLP, residual. Both
    mixers take the same arguments in both streams, so the block does not ask which it has."""

    def __init__(self, config: SproutConfig, kind: str):
        super().__init__()
        self.norm1 = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mixer = GatedDeltaLayer(config) if kind == "G" else AttentionLayer(config)
        self.norm2 = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = SwiGLU(config.hidden_size, config.intermediate_size)

    def clean(self, x: torch.Tensor, pos: torch.Tensor, past: LayerState | None,
              keep_features: bool = False) -> tuple[torch.Tensor, LayerState]:
        """x (B, n, d) clean tokens at `pos` (B, n) after `past` -> (B, n, d) and the new state."""
        y, state = self.mixer.clean(self.norm1(x), pos, past, keep_features)
        x = x + y
        return x + self.mlp(self.norm2(x)), state

    def noisy(self, x: torch.Tensor, pos: torch.Tensor, ctx: LayerContext) -> torch.Tensor:
        """x (B, NB, C, d) noisy blocks at `pos` (B, NB, C), reading the clean stream through `ctx`."""
        x = x + self.mixer.noisy(self.norm1(x), pos, ctx)
        return x + self.mlp(self.norm2(x))

    def clean_then_noisy(self, x: torch.Tensor, pos: torch.Tensor, n: int,
                         past: LayerState | None) -> tuple[torch.Tensor, LayerState]:
        """`clean` on rows [:n] of x (B, n+C, d) and `noisy` on rows [n:] (one block right after
        them) in one pass: the norms and the MLP are row-wise, so they run once over both."""
        y, state = self.mixer.clean_then_noisy(self.norm1(x), pos, n, past)
        x = x + y
        return x + self.mlp(self.norm2(x)), state


class SproutModel(PreTrainedModel):
    config_class = SproutConfig
    base_model_prefix = "sprout"
    _no_split_modules = ["SproutBlock"]

    def __init__(self, config: SproutConfig):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList(SproutBlock(config, kind) for kind in config.layer_pattern)
        self.final_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.register_load_state_dict_pre_hook(_rename_flat_keys)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, GatedDeltaLayer):
            nn.init.normal_(module.conv, std=0.5 / module.conv.shape[1] ** 0.5)
            with torch.no_grad():
                module.conv[:, -1] += 1.0   # start near identity: the current token passes through

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.final_norm(h), self.embed.weight)   # tied embeddings

    # ---- clean stream -------------------------------------------------------------------
    def clean(self, ids: torch.Tensor, cache: SproutCache | None = None,
              keep_features: bool = False) -> tuple[torch.Tensor, SproutCache]:
        """ids (B, n) appended after `cache` (None = empty context).
        Returns hidden (B, n, d) and the new cache (without next_logits)."""
        B, n = ids.shape
        start = cache.length if cache is not None else 0
        pos = (start + torch.arange(n, device=ids.device)).expand(B, n)
        x, states = self.embed(ids), []
        for i, block in enumerate(self.blocks):
            x, state = block.clean(x, pos, cache.layers[i] if cache is not None else None, keep_features)
            states.append(state)
        return x, SproutCache(tuple(states), start + n)

    def forward(self, input_ids: torch.Tensor, **_) -> torch.Tensor:
        """Causal logits (B, T, V): the AR twin's training pass (and the clean stream of BD)."""
        h, _ = self.clean(input_ids)
        return self.logits(h)

    # ---- noisy stream -------------------------------------------------------------------
    def _noisy(self, ids: torch.Tensor, starts: torch.Tensor, ctx: Context) -> torch.Tensor:
        """ids (B, NB, C) noisy blocks starting at `starts` (B, NB) -> logits (B, NB, C, V)."""
        C = ids.shape[-1]
        pos = starts[..., None] + torch.arange(C, device=ids.device)       # (B, NB, C)
        x = self.embed(ids)
        for block, layer_ctx in zip(self.blocks, ctx.layers):
            x = block.noisy(x, pos, layer_ctx)
        return self.logits(x)

    def bd_logits(self, clean_ids: torch.Tensor, noisy_ids: torch.Tensor, starts: torch.Tensor):
        """The vectorised BD training pass. clean_ids (B, T); noisy_ids (B, NB, C) with block j
        at positions starts[:, j] + [0, C). Returns noisy logits (B, NB, C, V)."""
        return self.bd_forward(clean_ids, noisy_ids, starts)[0]

    def bd_forward(self, clean_ids: torch.Tensor, noisy_ids: torch.Tensor, starts: torch.Tensor):
        """bd_logits plus the clean stream's hidden states (B, T, d), which are the AR twin's
        pass over the same ids (so a next-token loss on them costs only the output head)."""
        clean_h, cache = self.clean(clean_ids, keep_features=True)
        ctx = Context(tuple(block.mixer.context(state, starts) for block, state in zip(self.blocks, cache.layers)))
        logits = self._noisy(noisy_ids, starts, ctx)
        if self.config.logit_shift:
            before = torch.gather(clean_h, 1, (starts - 1).clamp(min=0)[..., None].expand(-1, -1, clean_h.shape[-1]))
            logits = shift_block_logits(self.logits(before), logits)   # (B, NB, V) first tokens
        return logits, clean_h

    # ---- inference: prefill / denoise / commit ------------------------------------------
    def prefill(self, ids: torch.Tensor) -> tuple[SproutCache, torch.Tensor]:
        """ids (B, P) -> (cache, logits of the last position (B, V))."""
        h, cache = self.clean(ids)
        last = self.logits(h[:, -1])
        return cache.with_next_logits(last), last

    def commit(self, ids: torch.Tensor, cache: SproutCache) -> tuple[SproutCache, torch.Tensor]:
        """Append finished tokens (B, n) -> (new cache, logits (B, n, V)). The cache passed in
        is not modified, so callers may keep it."""
        h, new_cache = self.clean(ids, cache)
        logits = self.logits(h)
        return new_cache.with_next_logits(logits[:, -1]), logits

    def denoise(self, block_ids: torch.Tensor, cache: SproutCache) -> torch.Tensor:
        """Logits (B, C, V) for a noisy block right after the cached context. Reads only."""
        B = block_ids.shape[0]
        ctx = Context(tuple(block.mixer.context(state) for block, state in zip(self.blocks, cache.layers)))
        starts = torch.full((B, 1), cache.length, dtype=torch.long, device=block_ids.device)
        logits = self._noisy(block_ids[:, None], starts, ctx)
        if self.config.logit_shift:
            logits = shift_block_logits(cache.next_logits[:, None], logits)
        return logits[:, 0]

    def commit_then_denoise(self, ids: torch.Tensor, block_ids: torch.Tensor,
                            cache: SproutCache | None) -> tuple[SproutCache, torch.Tensor]:
        """`commit(ids, cache)` and then `denoise(block_ids, <its cache>)` in one pass over the
        n + C rows (ids (B, n), block_ids (B, C)) -> (the commit's cache, logits (B, C, V)).
        Equal to the two calls up to float rounding; it saves a forward's fixed costs (a matmul
        per weight instead of two, one walk over the layers), which on a CPU are most of a
        16-token forward. The commit's own logits are not computed, only the last position's
        (the cache's next_logits)."""
        n = ids.shape[1]
        B, C = block_ids.shape
        start = cache.length if cache is not None else 0                   # None: `prefill(ids)` then denoise
        pos = (start + torch.arange(n + C, device=ids.device)).expand(B, -1)
        x, states = self.embed(torch.cat([ids, block_ids], 1)), []
        for i, block in enumerate(self.blocks):
            x, state = block.clean_then_noisy(x, pos, n, cache.layers[i] if cache is not None else None)
            states.append(state)
        last = self.logits(x[:, n - 1])                                     # (B, V)
        logits = self.logits(x[:, None, n:])                                # (B, 1, C, V)
        if self.config.logit_shift:
            logits = shift_block_logits(last[:, None], logits)
        return SproutCache(tuple(states), start + n).with_next_logits(last), logits[:, 0]


def shift_block_logits(first: torch.Tensor, noisy: torch.Tensor) -> torch.Tensor:
    """first (B, NB, V) for each block's token 0; noisy (B, NB, C, V) position outputs.
    Token i >= 1 takes the output of position i-1; the last position's output is not used."""
    return torch.cat([first[:, :, None], noisy[:, :, :-1]], dim=2)


# Checkpoints name the layer parts in four flat lists (mixers.i, norms1.i, norms2.i, mlps.i),
# the layout the shipped weights were saved in; the model holds them as blocks.i.{mixer, norm1,
# norm2, mlp}. transformers renames on load (and back on save, so saved folders keep the shipped
# layout); the pre-hook does the same for a plain load_state_dict (training checkpoints).
_FLAT_PARTS = {"mixers": "mixer", "norms1": "norm1", "norms2": "norm2", "mlps": "mlp"}


def _rename_flat_keys(module: nn.Module, state_dict: dict, prefix: str, *_) -> None:
    for key in [k for k in state_dict if k.startswith(prefix)]:
        part, _, rest = key[len(prefix):].partition(".")
        if part in _FLAT_PARTS:
            index, _, name = rest.partition(".")
            state_dict[f"{prefix}blocks.{index}.{_FLAT_PARTS[part]}.{name}"] = state_dict.pop(key)


register_checkpoint_conversion_mapping("SproutModel", [
    WeightRenaming(source_patterns=rf"^{flat}\.(\d+)\.", target_patterns=rf"blocks.\1.{part}.")
    for flat, part in _FLAT_PARTS.items()], overwrite=True)

AutoConfig.register("sprout", SproutConfig, exist_ok=True)
AutoModel.register(SproutConfig, SproutModel, exist_ok=True)
