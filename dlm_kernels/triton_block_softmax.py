"""Triton forward kernel for block softmax with a history slot; twin of dlm_kernels.block_softmax.

One program owns one (batch, head) and a tile of BM queries against the whole block (L keys):

    z = scale * Q K^T  (absent keys -> -inf),   z_h = history_logit,   m = max(max_j z_j, z_h)
    O = (e^{z - m} V + e^{z_h - m} history) / (sum_j e^{z_j - m} + e^{z_h - m})

The slot's logit is finite, so m is finite and the denominator >= e^{z_h - m} > 0 even when every key is absent.
Compiled tl.dot needs every dimension >= 16: block length and head dims are padded to powers of two >= 16,
padded keys are masked to -inf and padded rows/columns are never stored. Forward only (no autograd).
"""

import torch
import triton
import triton.language as tl

__all__ = ["block_softmax_with_history_triton", "triton_supports"]

# beyond these, k and v tiles outgrow the shared memory of common GPUs (~100 KB); torch takes over
MAX_BLOCK = 64
MAX_HEAD_DIM = 128


def _pow2_at_least_16(n: int) -> int:
    return max(16, triton.next_power_of_2(int(n)))


def triton_supports(q: torch.Tensor, v: torch.Tensor) -> bool:
    """Shapes the kernel handles; the dispatcher falls back to torch otherwise."""
    fits_int32 = max(q.numel(), v.numel()) < 2**31
    return q.shape[2] <= MAX_BLOCK and q.shape[-1] <= MAX_HEAD_DIM and v.shape[-1] <= MAX_HEAD_DIM and fits_int32


@triton.jit
def _block_softmax_history_fwd_kernel(
    q_ptr, k_ptr, v_ptr, hist_ptr, hist_logit_ptr, key_mask_ptr, o_ptr,  # q, k (B,H,L,D); v, hist, o (B,H,L,Dv)
    scale, H, L, D, DV,  # hist_logit (B, H, L) fp32; key_mask (B, L) int8
    BM: tl.constexpr, BL: tl.constexpr, BD: tl.constexpr, BDV: tl.constexpr,
    HAS_KEY_MASK: tl.constexpr, PRECISION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H

    rows = pid_m * BM + tl.arange(0, BM)  # queries
    keys = tl.arange(0, BL)
    cols_d = tl.arange(0, BD)
    cols_v = tl.arange(0, BDV)
    mask_rows = rows < L
    key_present = keys < L
    if HAS_KEY_MASK:
        key_present = key_present & (tl.load(key_mask_ptr + b * L + keys, mask=keys < L, other=0) != 0)

    base = pid_bh * L  # first row of this (batch, head) in the (B, H, L, .) layout
    q = tl.load(q_ptr + (base + rows)[:, None] * D + cols_d[None, :],
                mask=mask_rows[:, None] & (cols_d[None, :] < D), other=0.0).to(tl.float32)  # (BM, BD)
    k = tl.load(k_ptr + (base + keys)[:, None] * D + cols_d[None, :],
                mask=(keys[:, None] < L) & (cols_d[None, :] < D), other=0.0).to(tl.float32)  # (BL, BD)
    v = tl.load(v_ptr + (base + keys)[:, None] * DV + cols_v[None, :],
                mask=(keys[:, None] < L) & (cols_v[None, :] < DV), other=0.0).to(tl.float32)  # (BL, BDV)
    out_mask = mask_rows[:, None] & (cols_v[None, :] < DV)
    hist = tl.load(hist_ptr + (base + rows)[:, None] * DV + cols_v[None, :], mask=out_mask, other=0.0).to(tl.float32)
    z_hist = tl.load(hist_logit_ptr + base + rows, mask=mask_rows, other=0.0)  # (BM,)

    z = scale * tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (BM, BL)
    z = tl.where(key_present[None, :], z, float("-inf"))
    m = tl.maximum(tl.max(z, axis=1), z_hist)  # (BM,) finite: z_hist is
    p = tl.exp(z - m[:, None])  # absent keys -> 0
    p_hist = tl.exp(z_hist - m)
    denom = tl.sum(p, axis=1) + p_hist
    o = (tl.dot(p, v, input_precision=PRECISION) + p_hist[:, None] * hist) / denom[:, None]
    tl.store(o_ptr + (base + rows)[:, None] * DV + cols_v[None, :], o, mask=out_mask)


def block_softmax_with_history_triton(q, k, v, history, history_logit, scale=None, key_mask=None):
    """Same signature and result as dlm_kernels.block_softmax.block_softmax_with_history_torch; forward only."""
    B, H, L, D = q.shape
    DV = v.shape[-1]
    if not triton_supports(q, v):
        raise ValueError(
            f"the Triton block softmax handles blocks up to {MAX_BLOCK} and head dims up to {MAX_HEAD_DIM}; "
            f"got L={L}, D={D}, Dv={DV}. Use dlm_kernels.block_softmax.block_softmax_with_history_torch."
        )
    scale = D**-0.5 if scale is None else float(scale)
    q, k, v, history = (x.contiguous() for x in (q, k, v, history))
    logit = torch.as_tensor(history_logit, device=q.device).float().expand(B, H, L).contiguous()  # (B, H, L)
    mask = key_mask.to(torch.int8).contiguous() if key_mask is not None else logit  # dummy when absent
    o = torch.empty(B, H, L, DV, dtype=torch.float32, device=q.device)

    BL = _pow2_at_least_16(L)
    BM = min(BL, 32)
    grid = (triton.cdiv(L, BM), B * H)
    _block_softmax_history_fwd_kernel[grid](
        q, k, v, history, logit, mask, o,
        scale, H, L, D, DV,
        BM=BM, BL=BL, BD=_pow2_at_least_16(D), BDV=_pow2_at_least_16(DV),
        HAS_KEY_MASK=key_mask is not None, PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=4,
    )
    return o.to(q.dtype)
