"""Gated delta rule (Gated DeltaNet): recurrent reference, chunked WY/UT torch form, one-token step, dispatch.

Shapes follow flash-linear-attention: q, k [B, T, H, K]; v [B, T, H, V]; g, beta [B, T, H]; state [B, H, K, V].
For one head, with a_t = exp(g_t) (g_t <= 0 is the log decay) and b_t = beta_t in (0, 1):

    S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T        S in R^{K x V}
    o_t = scale * S_t^T q_t                                       scale = K ** -0.5 by default

Callers pass L2-normalised q and k; nothing here normalises them. States are float32 throughout.
"""

import math
from typing import NamedTuple

import torch

__all__ = [
    "ChunkedRun",
    "chunk_gated_delta_rule",
    "chunk_gated_delta_rule_with_intermediates",
    "gated_delta_rule",
    "gated_delta_rule_ref",
    "gated_delta_step",
]


def _check_shapes(q, k, v, g, beta, initial_state):
    if q.dim() != 4 or k.shape != q.shape:
        raise ValueError(f"q and k must both be (B, T, H, K); got q {tuple(q.shape)} and k {tuple(k.shape)}.")
    B, T, H, _ = q.shape
    if v.dim() != 4 or v.shape[:3] != (B, T, H):
        raise ValueError(f"v must be (B, T, H, V) with (B, T, H) = {(B, T, H)}; got {tuple(v.shape)}.")
    for name, x in (("g", g), ("beta", beta)):
        if x.shape != (B, T, H):
            raise ValueError(f"{name} must be (B, T, H) = {(B, T, H)}; got {tuple(x.shape)}.")
    if initial_state is not None and initial_state.shape != (B, H, q.shape[-1], v.shape[-1]):
        raise ValueError(
            f"initial_state must be (B, H, K, V) = {(B, H, q.shape[-1], v.shape[-1])}; "
            f"got {tuple(initial_state.shape)}."
        )


def _initial_state(initial_state, B, H, K, V, device):
    if initial_state is None:
        return torch.zeros(B, H, K, V, dtype=torch.float32, device=device)
    return initial_state.float()


def gated_delta_step(q, k, v, g, beta, state, scale=None):
    """One token of the recurrence. q, k (B, H, K); v (B, H, V); g, beta (B, H); state (B, H, K, V).

    Returns (o (B, H, V) in q's dtype, new_state (B, H, K, V) float32).
    """
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    qf, kf, vf = q.float(), k.float(), v.float()
    a = g.float().exp()[..., None, None]  # (B, H, 1, 1)
    b = beta.float()[..., None, None]
    S = state.float()
    kS = torch.einsum("bhk,bhkv->bhv", kf, S)  # k_t^T S_{t-1}, (B, H, V)
    # a (I - b k k^T) S + b k v^T  =  a S + b k (v - a k^T S)^T
    S = a * S + b * kf[..., :, None] * (vf - a[..., 0] * kS)[..., None, :]
    o = scale * torch.einsum("bhk,bhkv->bhv", qf, S)
    return o.to(q.dtype), S


def gated_delta_rule_ref(q, k, v, g, beta, scale=None, initial_state=None):
    """The recurrence as a plain loop over time, in float32. Returns (o (B, T, H, V), final_state (B, H, K, V))."""
    _check_shapes(q, k, v, g, beta, initial_state)
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K**-0.5 if scale is None else scale
    out_dtype = q.dtype
    q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
    S = _initial_state(initial_state, B, H, K, V, q.device)
    I = torch.eye(K, device=q.device)
    outputs = []
    for t in range(T):
        a_t = g[:, t].exp()[..., None, None]  # (B, H, 1, 1)
        b_t = beta[:, t][..., None, None]
        k_t, v_t, q_t = k[:, t], v[:, t], q[:, t]  # (B, H, K), (B, H, V), (B, H, K)
        S = a_t * (I - b_t * k_t[..., :, None] * k_t[..., None, :]) @ S + b_t * k_t[..., :, None] * v_t[..., None, :]
        outputs.append(scale * (S.transpose(-1, -2) @ q_t[..., None])[..., 0])  # S_t^T q_t, (B, H, V)
    o = torch.stack(outputs, dim=1) if outputs else v.new_zeros(B, 0, H, V)
    return o.to(out_dtype), S


class ChunkedRun(NamedTuple):
    """Everything the chunked form computes, in (B, T, ...) layout: the output in q's dtype, and
    float32 final state (B, H, K, V), the state BEFORE each chunk (B, N, H, K, V), N = ceil(T / C),
    V' (B, T, H, V) and the in-chunk cumulative log decay Gamma (B, T, H)."""

    output: torch.Tensor
    final_state: torch.Tensor
    chunk_states: torch.Tensor
    v_new: torch.Tensor
    gamma: torch.Tensor


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16):
    """Chunked (WY / UT transform) form of the gated delta rule; plain torch, differentiable by autograd.

    Returns (o (B, T, H, V) in q's dtype, final_state (B, H, K, V) float32). The maths is in `_chunked`;
    `chunk_gated_delta_rule_with_intermediates` also returns what it computes on the way.
    """
    o, final_state, *_ = _chunked(q, k, v, g, beta, scale, initial_state, chunk_size)
    return _from_chunks(o, q.shape[1]).to(q.dtype), final_state


def chunk_gated_delta_rule_with_intermediates(q, k, v, g, beta, scale=None, initial_state=None,
                                              chunk_size=16) -> ChunkedRun:
    """`chunk_gated_delta_rule` plus the state before each chunk, V' and Gamma (see `ChunkedRun`).
    With them the state after the first r tokens of chunk n follows without running the recurrence:

        S_(n, r) = e^{Gamma_r} S_n + sum_{s <= r} e^{Gamma_r - Gamma_s} k_s v'_s^T

    which is how block diffusion reads the state at a block start inside a chunk.
    """
    T = q.shape[1]
    o, final_state, states_before, v_new, gamma = _chunked(q, k, v, g, beta, scale, initial_state, chunk_size)
    return ChunkedRun(_from_chunks(o, T).to(q.dtype), final_state, states_before.transpose(0, 1),
                      _from_chunks(v_new, T), _from_chunks(gamma[..., None], T)[..., 0])


def _from_chunks(x, T):
    """(N, B, H, C, D) -> (B, T, H, D): undo the chunk layout and the time padding."""
    N, B, H, C, D = x.shape
    return x.permute(1, 0, 3, 2, 4).reshape(B, N * C, H, D)[:, :T]


def _chunked(q, k, v, g, beta, scale, initial_state, chunk_size):
    """The chunked form in chunk layout: o and V' (N, B, H, C, V), final state (B, H, K, V), the
    states before each chunk (N, B, H, K, V), Gamma (N, B, H, C); all float32.

    Within a chunk of C tokens (rows r, s = 1..C), with state S at the chunk start and
    Gamma_r = g_1 + ... + g_r (cumulative log decay inside the chunk), unrolling the recurrence as
    S_r = a_r S_{r-1} + k_r u_r^T gives u_r = b_r (v_r - a_r S_{r-1}^T k_r), which is the triangular system

        (I + A) U = b * V - (b * e^Gamma * K) S,     A_rs = b_r e^{Gamma_r - Gamma_s} k_r^T k_s  (r > s, else 0)

    so with T = (I + A)^{-1} (unit lower triangular; solved, never inverted):

        W = T (b * e^Gamma * K),   U = T (b * V),   V' = U - W S
        O = scale * [ (Q * e^Gamma) S + tril(Q K^T * D) V' ],   D_rs = e^{Gamma_r - Gamma_s}  (r >= s)
        S_next = e^{Gamma_C} S + (K * e^{Gamma_C - Gamma})^T V'

    W, U and tril(Q K^T * D) depend on no state, so they are computed for all chunks at once; only the
    three state lines loop over chunks. Every exponent is <= 0, so nothing overflows.
    T need not be a multiple of C: the tail is padded with g = 0, beta = 0, k = 0, an identity step.
    """
    _check_shapes(q, k, v, g, beta, initial_state)
    B, T, H, K = q.shape
    V = v.shape[-1]
    C = int(chunk_size)
    if C < 1:
        raise ValueError(f"chunk_size must be a positive integer; got {chunk_size}.")
    scale = K**-0.5 if scale is None else scale
    N = math.ceil(T / C)
    pad = N * C - T

    def to_chunks(x):  # (B, T, H, ...) -> (N, B, H, C, ...) contiguous float32, zero-padded in time
        x = x.float()
        if pad:
            x = torch.cat([x, x.new_zeros(B, pad, *x.shape[2:])], dim=1)
        x = x.reshape(B, N, C, H, *x.shape[3:])
        return x.permute(1, 0, 3, 2, *range(4, x.dim())).contiguous()

    q, k, v, g, beta = (to_chunks(x) for x in (q, k, v, g, beta))  # (N, B, H, C, K|V) and (N, B, H, C)
    gamma = g.cumsum(-1)  # (N, B, H, C)
    gamma_last = gamma[..., -1:]  # (N, B, H, 1); pads have g = 0 so this is the last real token's value

    rows = torch.arange(C, device=q.device)
    strict = rows[:, None] > rows[None, :]
    causal = rows[:, None] >= rows[None, :]
    diff = gamma[..., :, None] - gamma[..., None, :]  # Gamma_r - Gamma_s, (N, B, H, C, C)
    # mask before exp: the upper triangle would overflow and poison gradients through where()
    decay_strict = diff.masked_fill(~strict, float("-inf")).exp()
    decay_causal = diff.masked_fill(~causal, float("-inf")).exp()

    b = beta[..., None]  # (N, B, H, C, 1)
    I = torch.eye(C, device=q.device)
    A = b * decay_strict * (k @ k.transpose(-1, -2))  # (N, B, H, C, C)
    T_inv = torch.linalg.solve_triangular(I + A, I.expand_as(A), upper=False, unitriangular=True)  # (I + A)^-1
    U = T_inv @ (b * v)  # (N, B, H, C, V)
    W = T_inv @ (b * gamma[..., None].exp() * k)  # (N, B, H, C, K)
    k_to_end = (k * (gamma_last - gamma)[..., None].exp()).transpose(-1, -2)  # (N, B, H, K, C)
    end_decay = gamma_last[..., None].exp()  # (N, B, H, 1, 1)

    # the only sequential part: the state before each chunk, and V' = U - W S for each chunk
    S = _initial_state(initial_state, B, H, K, V, q.device)
    states, v_news = [], []
    # unbind once: indexing U[n] per chunk would make autograd build a full-size zero
    # gradient for every chunk (quadratic in the number of chunks)
    for U_n, W_n, decay_n, k_end_n in zip(U.unbind(0), W.unbind(0), end_decay.unbind(0), k_to_end.unbind(0)):
        states.append(S)
        v_news.append(U_n - W_n @ S)  # (B, H, C, V)
        S = decay_n * S + k_end_n @ v_news[-1]
    if N == 0:
        empty = S.new_zeros(0, B, H, C, V)
        return empty, S, S.new_zeros(0, B, H, K, V), empty, S.new_zeros(0, B, H, C)
    states_before = torch.stack(states)  # (N, B, H, K, V)

    q_decayed = q * (gamma[..., None].exp() * scale)  # (N, B, H, C, K)
    attn = (q @ k.transpose(-1, -2)) * (decay_causal * scale)  # (N, B, H, C, C)
    v_new = torch.stack(v_news)  # (N, B, H, C, V)
    o = q_decayed @ states_before + attn @ v_new  # (N, B, H, C, V)
    return o, S, states_before, v_new, gamma


def _triton_usable(tensors, initial_state):
    """The Triton forward runs on CUDA tensors when triton imports and nothing needs a gradient."""
    if not all(t.is_cuda for t in tensors):
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in [*tensors, initial_state] if t is not None):
        return False
    try:
        from dlm_kernels import triton_gdn  # noqa: F401  (lazy: CPU-only installs need no triton)
    except ImportError:
        return False
    return True


def gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16, use_triton=True):
    """Dispatch -> (o, final_state): the Triton chunked forward on CUDA when no gradient is needed
    (unless use_triton is False), the chunked torch form otherwise."""
    if use_triton and _triton_usable((q, k, v, g, beta), initial_state):
        from dlm_kernels.triton_gdn import chunk_gated_delta_rule_triton, triton_supports

        if triton_supports(q, v, chunk_size):
            return chunk_gated_delta_rule_triton(q, k, v, g, beta, scale, initial_state, chunk_size)
    return chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state, chunk_size)
