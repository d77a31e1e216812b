"""Triton forward kernel for the chunked gated delta rule; twin of dlm_kernels.gated_delta.chunk_gated_delta_rule.

One program owns one (batch, head) and one block of BV value columns: the columns of S (K x V) evolve
independently, because (I - b k k^T) acts on the key side only. The program walks the chunks in order with
its slice of S in registers. Per chunk of C tokens (rows r, s; Gamma = cumulative log decay in the chunk):

    A_rs  = b_r e^{Gamma_r - Gamma_s} k_r^T k_s               (r > s, else 0)
    (I + A) V' = b * (V - e^Gamma * (K S))                     forward substitution, row by row
    O     = scale * [ (Q * e^Gamma) S + tril(Q K^T * e^{Gamma_r - Gamma_s}) V' ]
    S    <- e^{Gamma_C} S + (K * e^{Gamma_C - Gamma})^T V'

V' = U - W S of the WY/UT form, solved directly for this state instead of building W and U.
Compiled tl.dot needs every dimension >= 16, so the chunk and head dims are padded to powers of two >= 16;
padded rows carry k = v = q = 0, g = 0, beta = 0 (an identity step) and padded columns are masked on store.
Forward only: training on GPU goes through the torch form and autograd.
"""

import torch
import triton
import triton.language as tl

__all__ = ["chunk_gated_delta_rule_triton", "chunk_gated_delta_rule_triton_with_chunk_states", "triton_supports"]

# with these bounds a program needs <= ~74 KB of shared memory (checked by compiling for sm_90)
MAX_HEAD_DIM = 128
MAX_CHUNK = 64


def _pow2_at_least_16(n: int) -> int:
    return max(16, triton.next_power_of_2(int(n)))


def triton_supports(q: torch.Tensor, v: torch.Tensor, chunk_size: int) -> bool:
    """Shapes the kernel handles; the dispatcher falls back to torch otherwise."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    chunks = -(-T // max(1, chunk_size))
    fits_int32 = max(B * T * H * max(K, V), B * (chunks + 1) * H * K * V) < 2**31  # kernel offsets are int32
    return K <= MAX_HEAD_DIM and V <= MAX_HEAD_DIM and 1 <= chunk_size <= MAX_CHUNK and fits_int32


@triton.jit
def _chunk_gdn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr,  # q, k (B, T, H, K); v (B, T, H, V); g, beta (B, T, H)
    h0_ptr, o_ptr, ht_ptr, hc_ptr,  # h0, ht (B, H, K, V) fp32; o (B, T, H, V) fp32; hc (B, N, H, K, V) fp32
    scale, T, H, K, V,
    CHUNK: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    HAS_INITIAL_STATE: tl.constexpr, STORE_CHUNK_STATES: tl.constexpr, PRECISION: tl.constexpr,
):
    pid_v = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    N = tl.cdiv(T, CHUNK)

    rows = tl.arange(0, BC)  # token index inside the (padded) chunk
    cols_k = tl.arange(0, BK)
    cols_v = pid_v * BV + tl.arange(0, BV)
    mask_k = cols_k < K
    mask_v = cols_v < V
    state_offsets = cols_k[:, None] * V + cols_v[None, :]  # (BK, BV) inside one (K, V) state
    state_mask = mask_k[:, None] & mask_v[None, :]

    if HAS_INITIAL_STATE:
        S = tl.load(h0_ptr + pid_bh * K * V + state_offsets, mask=state_mask, other=0.0).to(tl.float32)
    else:
        S = tl.zeros((BK, BV), dtype=tl.float32)

    strict = rows[:, None] > rows[None, :]
    causal = rows[:, None] >= rows[None, :]
    for n in range(0, N):
        if STORE_CHUNK_STATES:  # the state BEFORE chunk n
            tl.store(hc_ptr + ((b * N + n) * H + h) * K * V + state_offsets, S, mask=state_mask)

        t = n * CHUNK + rows  # (BC,) absolute time
        mask_t = (rows < CHUNK) & (t < T)
        tok = (b * T + t) * H + h  # row index into the (B, T, H) layout
        qk_mask = mask_t[:, None] & mask_k[None, :]
        q = tl.load(q_ptr + tok[:, None] * K + cols_k[None, :], mask=qk_mask, other=0.0).to(tl.float32)
        k = tl.load(k_ptr + tok[:, None] * K + cols_k[None, :], mask=qk_mask, other=0.0).to(tl.float32)
        v_mask = mask_t[:, None] & mask_v[None, :]
        v = tl.load(v_ptr + tok[:, None] * V + cols_v[None, :], mask=v_mask, other=0.0).to(tl.float32)
        g = tl.load(g_ptr + tok, mask=mask_t, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + tok, mask=mask_t, other=0.0).to(tl.float32)

        gamma = tl.cumsum(g, axis=0)  # (BC,)
        gamma_last = tl.sum(g, axis=0)  # padded rows have g = 0
        diff = gamma[:, None] - gamma[None, :]  # (BC, BC)

        kk = tl.dot(k, tl.trans(k), input_precision=PRECISION)  # (BC, BC)
        A = tl.where(strict, beta[:, None] * tl.exp(tl.where(strict, diff, 0.0)) * kk, 0.0)

        # right-hand side b * (V - e^Gamma * K S), then forward substitution through unit-lower (I + A)
        ks = tl.dot(k, S, input_precision=PRECISION)  # (BC, BV)
        x = beta[:, None] * (v - tl.exp(gamma)[:, None] * ks)
        for i in range(1, CHUNK):
            a_row = tl.sum(tl.where(rows[:, None] == i, A, 0.0), axis=0)  # A[i, :], zero for s >= i
            x_row = tl.sum(tl.where(rows[:, None] == i, x, 0.0), axis=0)  # (BV,)
            x_row = x_row - tl.sum(a_row[:, None] * x, axis=0)  # rows s < i of x are final already
            x = tl.where(rows[:, None] == i, x_row[None, :], x)

        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION)
        attn = tl.where(causal, qk * tl.exp(tl.where(causal, diff, 0.0)), 0.0)
        q_decayed = q * tl.exp(gamma)[:, None]
        o = scale * (tl.dot(q_decayed, S, input_precision=PRECISION) + tl.dot(attn, x, input_precision=PRECISION))
        tl.store(o_ptr + tok[:, None] * V + cols_v[None, :], o, mask=v_mask)

        k_to_end = k * tl.exp(gamma_last - gamma)[:, None]  # (BC, BK)
        S = tl.exp(gamma_last) * S + tl.dot(tl.trans(k_to_end), x, input_precision=PRECISION)

    tl.store(ht_ptr + pid_bh * K * V + state_offsets, S, mask=state_mask)


def chunk_gated_delta_rule_triton(q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16):
    """Same signature and results as dlm_kernels.gated_delta.chunk_gated_delta_rule, (o, final_state);
    forward only (no autograd).

    Math in fp32 (loads are upcast); tl.dot uses IEEE fp32 for fp32 inputs and TF32 for lower-precision inputs.
    """
    o, final_state, _ = _launch(q, k, v, g, beta, scale, initial_state, chunk_size, store_chunk_states=False)
    return o, final_state


def chunk_gated_delta_rule_triton_with_chunk_states(q, k, v, g, beta, scale=None, initial_state=None, chunk_size=16):
    """(o, final_state, chunk_states (B, N, H, K, V) float32 = the state BEFORE each chunk), as
    dlm_kernels.gated_delta.chunk_gated_delta_rule_with_intermediates gives them."""
    return _launch(q, k, v, g, beta, scale, initial_state, chunk_size, store_chunk_states=True)


def _launch(q, k, v, g, beta, scale, initial_state, chunk_size, store_chunk_states):
    B, T, H, K = q.shape
    V = v.shape[-1]
    if not triton_supports(q, v, chunk_size):
        raise ValueError(
            f"the Triton gated delta kernel handles head dims <= {MAX_HEAD_DIM}, chunk sizes 1..{MAX_CHUNK} "
            "and tensors with int32 offsets; "
            f"got K={K}, V={V}, chunk_size={chunk_size}. Use dlm_kernels.gated_delta.chunk_gated_delta_rule."
        )
    scale = K**-0.5 if scale is None else float(scale)
    C = int(chunk_size)
    N = triton.cdiv(T, C)
    q, k, v, g, beta = (x.contiguous() for x in (q, k, v, g, beta))
    o = torch.empty(B, T, H, V, dtype=torch.float32, device=q.device)
    final_state = torch.empty(B, H, K, V, dtype=torch.float32, device=q.device)
    chunk_states = torch.empty(B, N, H, K, V, dtype=torch.float32, device=q.device) if store_chunk_states else None
    h0 = initial_state.float().contiguous() if initial_state is not None else final_state  # dummy when absent

    BK = _pow2_at_least_16(K)
    BV = min(_pow2_at_least_16(V), 32 if BK > 64 else 64)
    grid = (triton.cdiv(V, BV), B * H)
    _chunk_gdn_fwd_kernel[grid](
        q, k, v, g, beta, h0, o, final_state, chunk_states if chunk_states is not None else final_state,
        scale, T, H, K, V,
        CHUNK=C, BC=_pow2_at_least_16(C), BK=BK, BV=BV,
        HAS_INITIAL_STATE=initial_state is not None, STORE_CHUNK_STATES=store_chunk_states,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=4,
    )
    return o.to(q.dtype), final_state, chunk_states
