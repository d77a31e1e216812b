"""Sprout's G layer: the gated delta rule over the clean stream, S_t = a_t (I - b_t k_t k_t^T) S_{t-1}
+ b_t k_t v_t^T, kept as the layer's state (chunked WY/UT form for many tokens, one step for one),
and for a noisy block a softmax over the block's own keys plus one history slot read out of the
state before the block, with logit bias_h + lambda_h * log(C) (sprout/modeling.py, the model)."""

from __future__ import annotations

import math
import os

import torch
import torch.nn.functional as F
from torch import nn

from dlm_kernels.block_softmax import block_softmax_with_history
from dlm_kernels.gated_delta import chunk_gated_delta_rule_with_intermediates, gated_delta_rule, gated_delta_step

from .cache import (
    ChunkFeatures,
    ChunkPrefix,
    DeltaContext,
    DeltaState,
)
from .config import SproutConfig
from .layers import RMSNorm

GDN_CHUNK = 16  # chunk of the WY/UT form in the clean stream
# SPROUT_TRITON=0 keeps Sprout on the torch kernels on CUDA too, so validation during GPU training
# runs the code of the training steps (scripts/train_sprout_gpu.sh); by default the kernels use
# Triton on CUDA when no gradient is needed.
USE_TRITON = os.environ.get("SPROUT_TRITON") != "0"


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
        # the conv in training: "depthwise" (one convolution), or "shifted", the form decoding uses
        # (bench/train.py times the two)
        self.train_conv = "depthwise"

    def _conv(self, mix: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
        """Causal depthwise conv with SiLU: mix (..., n, ch) after tail (..., conv-1, ch) -> (..., n, ch).
        Training takes `conv_depthwise` (one kernel, forward and backward); decoding, whose inputs
        are a few tokens, takes `conv_shifted`. The two agree (tests/sprout)."""
        full = torch.cat([tail, mix], dim=-2)                     # (..., conv-1+n, ch)
        training = self.training and torch.is_grad_enabled() and self.train_conv == "depthwise"
        return F.silu((conv_depthwise if training else conv_shifted)(full, self.conv))
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


def conv_shifted(full: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """out_t = sum_j w_j * full_{t+j}: full (..., n+width-1, ch), weight (ch, width) -> (..., n, ch).
    Written as `width` shifted multiply-adds, several times faster than F.conv1d on CPU for the
    few-token inputs of decoding. In backward each shifted slice gets a zero-filled gradient of
    the whole of `full`, which made a quarter of a BD training step (models/README.md)."""
    width = weight.shape[1]
    n = full.shape[-2] - width + 1
    out = full[..., 0:n, :] * weight[:, 0]
    for j in range(1, width):
        out = out + full[..., j:j + n, :] * weight[:, j]
    return out


def conv_depthwise(full: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The same sum as `conv_shifted` as one depthwise convolution (a cross-correlation, so the
    taps keep their order): its backward is one kernel per input, with no per-tap buffers.
    (..., L, ch) contiguous already is the channels-last (NHWC) layout of an (N, ch, 1, L) image,
    so the conv runs as conv2d on that view with no copy; oneDNN's depthwise kernels were 2-3x
    faster there than conv1d's channels-first ones, forward and backward, in fp32 on an Intel
    Xeon. It runs in fp32 even under bf16 autocast: with bf16 operands the same conv was 2x
    slower on that AMX CPU (models/README.md, "The training campaign")."""
    *lead, length, ch = full.shape
    width = weight.shape[1]
    dtype = torch.promote_types(full.dtype, torch.float32)           # fp32, or fp64 in the tests
    with torch.autocast(full.device.type, enabled=False):
        x = full.to(dtype).reshape(-1, length, ch).transpose(1, 2).unsqueeze(2)    # (N, ch, 1, L)
        w = weight.to(dtype)[:, None, None, :].contiguous(memory_format=torch.channels_last)
        out = F.conv2d(x, w, groups=ch)                                           # (N, ch, 1, n)
    return out.squeeze(2).transpose(1, 2).reshape(*lead, length - width + 1, ch).to(full.dtype)


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
