"""Gated delta rule (Gated DeltaNet): recurrent reference, chunked WY/UT torch form, one-token step, dispatch.

Shapes follow flash-linear-attention: q, k [B, T, H, K]; v [B, T, H, V]; g, beta [B, T, H]; state [B, H, K, V].
For one head, with a_t = exp(g_t) (g_t <= 0 is the log decay) and b_t = beta_t in (0, 1):

    S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T        S in R^{K x V}
    o_t = scale * S_t^T q_t                                       scale = K ** -0.5 by default

Callers pass L2-normalised q and k; nothing here normalises them. States are float32 throughout.
"""

import math
import os

import torch

__all__ = [
    "chunk_gated_delta_rule",
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


def chunk_gated_delta_rule(
    q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16, output_chunk_states=False,
    output_chunk_values=False,
):
    """Chunked (WY / UT transform) form of the gated delta rule; plain torch, differentiable by autograd.

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

    Returns (o (B, T, H, V) in q's dtype, final_state (B, H, K, V) float32), plus, when
    output_chunk_states, chunk_states (B, N, H, K, V) float32 = the state BEFORE each chunk, N = ceil(T / C).
    With output_chunk_values (implies chunk_states) also V' (B, T, H, V) and Gamma (B, T, H), float32:
    the state after the first r tokens of chunk n is then, without running the recurrence,

        S_(n, r) = e^{Gamma_r} S_n + sum_{s <= r} e^{Gamma_r - Gamma_s} k_s v'_s^T

    which is how block diffusion reads the state at a block start inside a chunk.
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

    out_dtype = q.dtype
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
        o = torch.zeros(B, 0, H, V, dtype=out_dtype, device=q.device)
        if output_chunk_values:
            return o, S, S.new_zeros(B, 0, H, K, V), S.new_zeros(B, 0, H, V), S.new_zeros(B, 0, H)
        return (o, S, S.new_zeros(B, 0, H, K, V)) if output_chunk_states else (o, S)
    states_before = torch.stack(states)  # (N, B, H, K, V)

    q_decayed = q * (gamma[..., None].exp() * scale)  # (N, B, H, C, K)
    attn = (q @ k.transpose(-1, -2)) * (decay_causal * scale)  # (N, B, H, C, C)
    v_new = torch.stack(v_news)  # (N, B, H, C, V)
    o = q_decayed @ states_before + attn @ v_new  # (N, B, H, C, V)
    o = o.permute(1, 0, 3, 2, 4).reshape(B, N * C, H, V)[:, :T].to(out_dtype)  # (B, T, H, V)
    if not (output_chunk_states or output_chunk_values):
        return o, S
    if not output_chunk_values:
        return o, S, states_before.transpose(0, 1)  # (B, N, H, K, V)
    v_new_t = v_new.permute(1, 0, 3, 2, 4).reshape(B, N * C, H, V)[:, :T]
    gamma_t = gamma.permute(1, 0, 3, 2).reshape(B, N * C, H)[:, :T]
    return o, S, states_before.transpose(0, 1), v_new_t, gamma_t


def _triton_usable(tensors, initial_state):
    """The Triton forward runs on CUDA tensors when triton imports and nothing needs a gradient."""
    if not all(t.is_cuda for t in tensors) or os.environ.get("SPROUT_TRITON") == "0":
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in [*tensors, initial_state] if t is not None):
        return False
    try:
        from kernels import triton_gdn  # noqa: F401  (lazy: CPU-only installs need no triton)
    except ImportError:
        return False
    return True


def gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16, output_chunk_states=False):
    """Dispatch: the Triton chunked forward on CUDA when no gradient is needed, the chunked torch form otherwise."""
    if _triton_usable((q, k, v, g, beta), initial_state):
        from kernels.triton_gdn import chunk_gated_delta_rule_triton, triton_supports

        if triton_supports(q, v, chunk_size):
            return chunk_gated_delta_rule_triton(
                q, k, v, g, beta, scale, initial_state, chunk_size, output_chunk_states
            )
    return chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state, chunk_size, output_chunk_states)
