"""SDAR's block diffusion loop, written from JetAstra/SDAR `generate.py`
(`block_diffusion_generate`, commit c2041a8333333d685f6e15122c84f60f51f85ebd).

What it does:
- blocks sit at absolute multiples of `block` over [prompt | answer]; the canvas runs to the end
  of the last block that the prompt plus `gen_length` reaches;
- the prompt's whole blocks are prefilled in one forward under the block-causal mask
  (block(i) >= block(j)); its last P mod block tokens share the first decoded block;
- per block, at most `steps` denoising forwards of the whole block (its prompt tail included)
  against the cache, which they do not write; then one forward that stores the finished block;
- sampling, in the logits' dtype on the model's device (SDAR's modeling returns its lm_head
  output uncast, bf16 on a GPU): probs =
  softmax(filter(logits / T)) (tempered confidence), token ~ probs; at T = 0
  (where upstream would divide by zero) the argmax and softmax(logits);
- `low_confidence_dynamic`: with k = num_transfer_tokens[step] (block_length split evenly over
  the steps, earlier steps first), commit the masked positions with confidence > threshold
  (strict) when at least k are, else torch.topk(confidence, k) over the block, where decided
  positions score -inf.
Matched noise: upstream draws with torch.multinomial; here the token is the Gumbel-max sample
argmax(log probs + g) with the engine's uniforms, an exact sample from the same distribution,
drawn for the answer's positions only (a prompt-tail row takes its argmax).
When k exceeds the masks left (a round after one whose threshold committed more than its k, or
a first block short of masks by the prompt's tail), the topk takes every mask and k - M
decided positions (all score -inf; which ones is topk's order for that tensor) and overwrites
them with fresh samples. The engine does the same for decided answer tokens; a pick in the
prompt's tail would change the prompt itself (the later blocks read it from the cache), which
the engine never does: `decode` reports the first round where upstream did.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from reference.device import native
from reference.noise import uniforms


def _additive(allowed: torch.Tensor) -> torch.Tensor:
    """(Q, K) bool -> (1, 1, Q, K) float additive mask for the Qwen2 stand-in (SDAR's own
    modeling takes the 0/1 mask and converts it itself)."""
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]


def _num_transfer_tokens(block: int, steps: int) -> list[int]:
    base, remainder = divmod(block, steps)
    return [base + (1 if i < remainder else 0) for i in range(steps)]


def _sample(logits: torch.Tensor, temperature: float, generator: torch.Generator):
    if temperature == 0:
        probs = torch.softmax(logits, -1)
        return probs.argmax(-1), probs.max(-1).values
    probs = torch.softmax(logits / temperature, -1)
    g = -torch.log(-torch.log(uniforms(generator, *logits.shape))).to(logits.device)
    token = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
    return token, probs.gather(-1, token[:, None])[:, 0]


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, block: int, steps: int,
           temperature: float, threshold: float, seed: int) -> tuple[list[list[int]], int | None]:
    """(the answer span after every round, the first round where upstream overwrote a prompt
    token, or None)."""
    generator = torch.Generator().manual_seed(seed)
    device = model.device
    p = len(prompt)
    num_blocks = (p + gen_length + block - 1) // block
    total = num_blocks * block
    index = torch.arange(total)
    allowed = (index[:, None] // block) >= (index[None, :] // block)           # (T, T) block-causal
    x = torch.full((1, total), mask_id)
    x[0, :p] = torch.tensor(prompt)
    cache = DynamicCache()
    prefill = p // block * block
    with torch.no_grad():
        if prefill:
            model(input_ids=x[:, :prefill], attention_mask=_additive(allowed[:prefill, :prefill]),
                  position_ids=index[None, :prefill], cache=cache, use_cache=True)
    schedule = _num_transfer_tokens(block, steps)
    canvases, rewrote = [], None
    for b in range(p // block, num_blocks):
        lo, hi = b * block, (b + 1) * block
        cur = x[:, lo:hi].clone()
        kwargs = {"attention_mask": _additive(allowed[lo:hi, :hi]), "position_ids": index[None, lo:hi],
                  "cache": cache, "use_cache": True}
        for step in range(steps + 1):
            masked = cur[0] == mask_id
            with torch.no_grad():
                if not masked.any():
                    model(input_ids=cur, **kwargs)                              # store the finished block
                    break
                logits = native(model, model(input_ids=cur, **kwargs).logits[0])   # (block, V)
            if cache.get_seq_length() > lo:                                   # SDAR's store_kv=False
                cache.crop(lo - cache.get_seq_length())                       # (crop(0) would keep all)
            # noise is drawn for the answer's rows only (as the engine does); the prompt tail's
            # rows matter only when upstream rewrites them, and take the argmax here
            tail = max(0, p - lo)
            x0, x0_p = _sample(logits[tail:], temperature, generator)
            head, head_p = _sample(logits[:tail], 0.0, generator)
            x0, x0_p = torch.cat([head, x0]), torch.cat([head_p, x0_p])
            conf = torch.where(masked.to(device), x0_p, torch.tensor(float("-inf"), dtype=x0_p.dtype, device=device))
            high = (conf > threshold).cpu()
            if int(high.sum()) >= schedule[step]:
                transfer = high
            else:
                transfer = torch.zeros_like(masked)
                transfer[torch.topk(conf, schedule[step]).indices.cpu()] = True
            if bool(transfer[:tail].any()) and rewrote is None:
                rewrote = len(canvases)
            cur[0, transfer] = x0.cpu()[transfer]
            x[:, lo:hi] = cur
            canvases.append(x[0, p:].tolist())
    return canvases, rewrote
