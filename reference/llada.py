"""LLaDA's and Fast-dLLM v1's decoding loops on a full-attention masked LM, written from
ML-GSAI/LLaDA `generate.py` (commit b7e6c3565f194352da44b38dd12b6970597309f3) and
NVlabs/Fast-dLLM `llada/generate.py` (commit 24cc59e75f20a6384bae8c905965bb090b96388e for
`generate` and `get_transfer_index`; the factor rule `get_transfer_index_dynamic` from the same
file in a later version).

What they do, per block of `block` positions (blocks start right after the prompt):
- one forward over prompt + whole canvas per round;
- proposal x0 = argmax(exp(l) / (-log u)^T) with float64 uniforms u (T > 0), else argmax(l);
- confidence p = softmax(l)[x0] of the UNtempered logits (mask logit included);
- LLaDA: exactly `steps` rounds, round i commits the top num_transfer_tokens[i] masked positions
  of the block (an even split of the block's masks over the rounds, earlier rounds first);
- Fast-dLLM threshold: loop until the block has no mask; commit the top-1 masked position and
  every other one with p >= threshold;
- Fast-dLLM factor: loop until done; with c_(n) the sorted masked confidences and
  thresh_n = 1 - factor / (n + 1) (thresh_1 = -1), take the first n with c_(n) < thresh_n and
  commit n - 1 positions, or all when that n is the last one (or none fails).
Upstream scores every masked position up to the block's end; earlier blocks never keep a mask
here (the mask is never proposed), so only the active block's rows are scored. It ranks with
torch.topk over the whole row (prompt + canvas, float64, -inf outside the block's masked
positions), and so does this loop: which of several equal confidences topk returns first
depends on that whole tensor and on k. The factor rule counts its ranks from the sorted values
and then takes torch.topk(count) over the row, not a prefix of a longer topk.
"""

from __future__ import annotations

import torch

from reference.noise import uniforms


def num_transfer_tokens(masked: int, steps: int) -> list[int]:
    base, remainder = divmod(masked, steps)
    return [base + (1 if i < remainder else 0) for i in range(steps)]


def propose(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """x0 for (B, V) logits, as LLaDA's add_gumbel_noise + argmax."""
    if temperature == 0:
        return logits.argmax(-1)
    u = uniforms(generator, *logits.shape)
    noisy = logits.to(torch.float64).exp() / (-torch.log(u)) ** temperature
    return noisy.argmax(-1)


def _topk_positions(row: torch.Tensor, k: int, lo: int, device: torch.device) -> list[int]:
    """torch.topk over the (P + L,) row on the model's device (upstream's row lives there, and
    ties come out in that device's topk order), as block positions."""
    return [j - lo for j in torch.topk(row.to(device), k=k).indices.tolist()]


def choose(rule: str, logits: torch.Tensor, x0: torch.Tensor, masked: torch.Tensor, row_length: int,
           offset: int, k: int, threshold: float, factor: float, device: torch.device) -> list[int]:
    """The block positions one round commits: (B, V) untempered logits, proposals x0 (B,), the
    block's masks (B,), and upstream's topk row: `row_length` long, the block at `offset`."""
    prob = torch.softmax(logits.to(torch.float64), -1).gather(-1, x0[:, None])[:, 0]
    conf = torch.where(masked, prob, torch.tensor(float("-inf"), dtype=torch.float64))
    row = torch.full((row_length,), float("-inf"), dtype=torch.float64)
    row[offset: offset + conf.shape[0]] = conf
    if rule == "llada":
        return _topk_positions(row, k, offset, device)
    if rule == "threshold":
        ranked = _topk_positions(row, int(masked.sum()), offset, device)
        return [ranked[0]] + [j for j in ranked[1:] if not conf[j] < threshold]
    values = torch.sort(conf[masked], descending=True).values.tolist()
    thresholds = [-1.0] + [1 - factor / (n + 1) for n in range(2, len(values) + 1)]
    top = len(values) - 1
    for top_i, value in enumerate(values):
        if value < thresholds[top_i]:
            top = top_i
            break
    if top == 0 or top == len(values) - 1:
        top += 1
    return _topk_positions(row, top, offset, device)


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, block: int, steps: int,
           temperature: float, seed: int, rule: str, threshold: float = 0.9,
           factor: float = 1.0) -> list[list[int]]:
    """The generated span after every round; rule is "llada", "threshold" or "factor"."""
    generator = torch.Generator().manual_seed(seed)
    device = getattr(model, "device", torch.device("cpu"))
    p = len(prompt)
    x = torch.tensor([prompt + [mask_id] * gen_length])
    canvases = []
    for b in range(gen_length // block):
        lo, hi = p + b * block, p + (b + 1) * block
        schedule = num_transfer_tokens(int((x[0, lo:hi] == mask_id).sum()), steps)
        i = 0
        while True:
            with torch.no_grad():
                logits = model(input_ids=x).logits[0, lo:hi]                  # (B, V)
            x0 = propose(logits, temperature, generator)
            chosen = choose(rule, logits, x0, x[0, lo:hi] == mask_id, x.shape[1], lo, schedule[i] if i < steps else 0,
                            threshold, factor, device)
            for j in chosen:
                x[0, lo + j] = x0[j]
            canvases.append(x[0, p:].tolist())
            i += 1
            if rule == "llada" and i == steps:
                break
            if rule != "llada" and not bool((x[0, lo:hi] == mask_id).any()):
                break
    return canvases
