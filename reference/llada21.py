"""LLaDA2.1's draft-then-edit loop, written from `LLaDA2MoeModelLM.generate` in
lingjiechen2/dllm dllm/pipelines/llada21/models/modeling_llada21_moe.py (commit 7520f3c) and the
standalone `LLaDA21Sampler.sample` of dllm/pipelines/llada21/sampler.py (commit 9268328), which
runs the same loop.

What it does:
- blocks at absolute multiples of `block` over [prompt | answer], ceil((P + gen_length) / block)
  of them, the prompt's whole blocks never decoded; no cache: every forward runs the sequence up
  to the active block's end under the block-causal mask (block(i) >= block(j));
- per block, `while True`: note which positions are masked now; a round that starts with none
  counts as a post step, and once there are more than `max_post_steps` of them the block ends
  before its forward;
- sampling, on the logits (its forward casts them to float32): at T = 0 the argmax and
  softmax(logits); else logits / T (when T != 1), top-k, top-p, softmax, token ~ probs;
  confidence = probs[token];
- mask to token: the masked positions with confidence > threshold when at least num_to_transfer
  (1) are, else torch.topk(min(1, masks left)) over the block's masked confidences;
- token to token: a position of the block that was not masked at the round's start and is not
  a prompt token is rewritten when confidence > editing_threshold and the token differs;
- a round that started with no mask and rewrote nothing ends the block.
Matched noise: torch.multinomial upstream; here the Gumbel-max sample with the engine's uniforms
for the answer's rows of the block (the prompt's tail rows take the argmax; they are never written).
"""

from __future__ import annotations

import torch

from reference.device import native
from reference.noise import uniforms


def _additive(allowed: torch.Tensor) -> torch.Tensor:
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]


def _sample(logits: torch.Tensor, temperature: float, generator: torch.Generator):
    if temperature == 0:
        probs = torch.softmax(logits, -1)
        token = logits.argmax(-1)
        return token, probs.gather(-1, token[:, None])[:, 0]
    if temperature != 1.0:
        logits = logits / temperature
    probs = torch.softmax(logits, -1)
    g = -torch.log(-torch.log(uniforms(generator, *logits.shape))).to(logits.device)
    token = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
    return token, probs.gather(-1, token[:, None])[:, 0]


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, block: int, temperature: float,
           threshold: float, editing_threshold: float, max_post_steps: int, seed: int) -> list[list[int]]:
    """The answer span (to the end of the last block) after every forward."""
    generator = torch.Generator().manual_seed(seed)
    p = len(prompt)
    num_blocks = (p + gen_length + block - 1) // block
    total = num_blocks * block
    index = torch.arange(total)
    allowed = (index[:, None] // block) >= (index[None, :] // block)
    x = torch.full((1, total), mask_id)
    x[0, :p] = torch.tensor(prompt)
    canvases = []
    for b in range(p // block, num_blocks):
        end = (b + 1) * block
        tail = max(0, p - (end - block))                                        # prompt rows of this block
        is_prompt = torch.arange(block) < tail
        post_steps = 0
        while True:
            old = x[0, end - block:end].clone()
            active = old == mask_id
            if not active.any():
                post_steps += 1
            if post_steps > max_post_steps:
                break
            with torch.no_grad():
                logits = model(input_ids=x[:, :end], attention_mask=_additive(allowed[:end, :end]),
                               position_ids=index[None, :end]).logits[0, -block:]
            logits = native(model, logits)                                      # (block, V)
            x0, x0_p = _sample(logits[tail:], temperature, generator)
            x0 = torch.cat([logits[:tail].argmax(-1), x0]).cpu()
            x0_p = torch.cat([x0_p.new_zeros(tail), x0_p]).cpu()
            transfer = torch.zeros(block, dtype=torch.bool)
            if active.any():
                conf = torch.where(active, x0_p, torch.tensor(float("-inf"), dtype=x0_p.dtype))
                high = (conf > threshold) & active
                if int(high.sum()) >= 1:
                    transfer = high
                else:
                    transfer[torch.topk(conf, min(1, int(active.sum()))).indices] = True
            editable = ~active & ~is_prompt
            edit = editable & (x0_p > editing_threshold) & (x0 != old)
            chosen = transfer | edit
            x[0, end - block:end][chosen] = x0[chosen]
            canvases.append(x[0, p:].tolist())
            if not active.any() and not edit.any():
                break
    return canvases
