"""Block softmax with one history slot: the denoise-mode read of a Gated DeltaNet layer.

Shapes: q, k [B, H, L, D]; v, history [B, H, L, Dv]; history_logit broadcastable to [B, H, L];
key_mask [B, L] bool (False = key absent, e.g. padding of a short last block). For query i of a block:

    z_j  = scale * q_i . k_j   (keys j of the block, bidirectional; absent keys -> -inf)
    z_h  = history_logit_i     (the slot's logit: bias_h + lambda_h * log(block_size) in Sprout)
    w    = softmax([z_1 .. z_L, z_h])
    o_i  = sum_j w_j v_j + w_h * history_i       (history_i = S^T q_i, the clean state's read-out)

With every q . k = 0 and z_h = log(L) the slot weighs L / (L + L) = 1/2. A query whose keys are all absent
puts all its weight on the slot. scale defaults to D ** -0.5.
"""


import torch

__all__ = ["block_softmax_with_history", "block_softmax_with_history_ref", "block_softmax_with_history_torch"]


def _prepare(q, k, v, history, history_logit, key_mask):
    if q.dim() != 4 or k.shape != q.shape:
        raise ValueError(f"q and k must both be (B, H, L, D); got q {tuple(q.shape)} and k {tuple(k.shape)}.")
    B, H, L, _ = q.shape
    if v.dim() != 4 or v.shape[:3] != (B, H, L) or history.shape != v.shape:
        raise ValueError(
            f"v and history must both be (B, H, L, Dv) with (B, H, L) = {(B, H, L)}; "
            f"got v {tuple(v.shape)} and history {tuple(history.shape)}."
        )
    history_logit = torch.as_tensor(history_logit, device=q.device)
    try:
        history_logit = history_logit.expand(B, H, L)
    except RuntimeError as error:
        raise ValueError(
            f"history_logit must broadcast to (B, H, L) = {(B, H, L)}, e.g. (1, H, 1); "
            f"got {tuple(history_logit.shape)}."
        ) from error
    if key_mask is not None and key_mask.shape != (B, L):
        raise ValueError(f"key_mask must be (B, L) = {(B, L)} bool; got {tuple(key_mask.shape)}.")
    return history_logit


def block_softmax_with_history_ref(q, k, v, history, history_logit, scale=None, key_mask=None):
    """Loops over batch, head and query in float32: the obviously correct twin. Returns o (B, H, L, Dv)."""
    history_logit = _prepare(q, k, v, history, history_logit, key_mask)
    B, H, L, D = q.shape
    scale = D**-0.5 if scale is None else scale
    out_dtype = q.dtype
    q, k, v, history, history_logit = (x.float() for x in (q, k, v, history, history_logit))
    rows = []
    for b in range(B):
        heads = []
        for h in range(H):
            queries = []
            for i in range(L):
                logits, values = [], []
                for j in range(L):
                    if key_mask is None or bool(key_mask[b, j]):
                        logits.append(scale * torch.dot(q[b, h, i], k[b, h, j]))
                        values.append(v[b, h, j])
                logits.append(history_logit[b, h, i])
                values.append(history[b, h, i])
                logits = torch.stack(logits)  # (keys present + 1,)
                weights = torch.exp(logits - logits.max())
                weights = weights / weights.sum()
                queries.append((weights[:, None] * torch.stack(values)).sum(0))  # (Dv,)
            heads.append(torch.stack(queries))
        rows.append(torch.stack(heads))
    return torch.stack(rows).to(out_dtype)


def block_softmax_with_history_torch(q, k, v, history, history_logit, scale=None, key_mask=None):
    """Vectorised, logsumexp-stable (torch.softmax), differentiable in every input including history_logit."""
    history_logit = _prepare(q, k, v, history, history_logit, key_mask)
    B, H, L, D = q.shape
    scale = D**-0.5 if scale is None else scale
    out_dtype = q.dtype
    q, k, v, history, history_logit = (x.float() for x in (q, k, v, history, history_logit))
    logits = scale * (q @ k.transpose(-1, -2))  # (B, H, L, L)
    if key_mask is not None:
        logits = logits.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    logits = torch.cat([logits, history_logit[..., None]], dim=-1)  # (B, H, L, L + 1)
    weights = torch.softmax(logits, dim=-1)
    o = weights[..., :L] @ v + weights[..., L:] * history  # (B, H, L, Dv)
    return o.to(out_dtype)


def _triton_usable(tensors):
    if not all(t.is_cuda for t in tensors):
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return False
    try:
        from dlm_kernels import triton_block_softmax  # noqa: F401  (lazy: CPU-only installs need no triton)
    except ImportError:
        return False
    return True


def block_softmax_with_history(q, k, v, history, history_logit, scale=None, key_mask=None, use_triton=True):
    """Dispatch: the Triton forward on CUDA when no gradient is needed (unless use_triton is False),
    the vectorised torch form otherwise."""
    logit = torch.as_tensor(history_logit, device=q.device)
    if use_triton and _triton_usable((q, k, v, history, logit)):
        from dlm_kernels.triton_block_softmax import block_softmax_with_history_triton, triton_supports

        if triton_supports(q, v):
            return block_softmax_with_history_triton(q, k, v, history, history_logit, scale, key_mask)
    return block_softmax_with_history_torch(q, k, v, history, history_logit, scale, key_mask)
