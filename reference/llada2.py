"""LLaDA2.0's block diffusion loop, written from `LLaDA2MoeModelLM.generate` in the model's own
`modeling_llada2_moe.py` (inclusionAI/LLaDA2.0-mini on the Hugging Face hub; read from the copy
in yks23/Information-Gain-Sampler dllm/dllm/pipelines/llada2/models/, commit
f1cb636fcd5666afa1c16c4cb12944ecb614eaf2).

What it does:
- steps = min(steps, gen_length // minimal_topk); blocks at absolute multiples of `block` over
  [prompt | answer], ceil((P + gen_length) / block) of them;
- no cache: every round runs the whole sequence up to the active block's end under the additive
  block-causal mask (block(i) >= block(j)), so the prompt's whole blocks are block-causal and its
  tail shares the first decoded block;
- sampling, in the logits' dtype (its forward casts them to float32) on the model's device:
  logits / T when T > 0 and T != 1, top-k, top-p, probs = softmax, token ~ probs,
  confidence = probs[token] (tempered). At T = 0 nothing is divided and the token is still drawn:
  upstream's "temperature 0" samples at T = 1;
- with k = num_transfer_tokens[step] (block_length split evenly over the steps): the masked
  positions with confidence > threshold (strict) when at least k are, else the top min(k, masks
  left) by confidence;
- after a block holding an EOS it stops (eos_id=None here: the whole canvas is compared).
Matched noise: torch.multinomial upstream; here the Gumbel-max sample with the engine's uniforms
for the answer's rows of the block.
"""

from __future__ import annotations

import torch

from reference.device import native
from reference.noise import uniforms


def _additive(allowed: torch.Tensor) -> torch.Tensor:
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]


def _sample(logits: torch.Tensor, temperature: float, generator: torch.Generator):
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    probs = torch.softmax(logits, -1)
    g = -torch.log(-torch.log(uniforms(generator, *logits.shape))).to(logits.device)
    token = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
    return token, probs.gather(-1, token[:, None])[:, 0]


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, block: int, steps: int,
           temperature: float, threshold: float, seed: int, minimal_topk: int = 1) -> list[list[int]]:
    """The answer span (to the end of the last block) after every round."""
    generator = torch.Generator().manual_seed(seed)
    steps = min(steps, gen_length // minimal_topk)
    p = len(prompt)
    num_blocks = (p + gen_length + block - 1) // block
    total = num_blocks * block
    index = torch.arange(total)
    allowed = (index[:, None] // block) >= (index[None, :] // block)
    x = torch.full((1, total), mask_id)
    x[0, :p] = torch.tensor(prompt)
    base, remainder = divmod(block, steps)
    schedule = [base + (1 if i < remainder else 0) for i in range(steps)]
    canvases = []
    for b in range(p // block, num_blocks):
        end = (b + 1) * block
        for step in range(steps):
            active = x[0, end - block:end] == mask_id
            if not active.any():
                break
            with torch.no_grad():
                logits = model(input_ids=x[:, :end], attention_mask=_additive(allowed[:end, :end]),
                               position_ids=index[None, :end]).logits[0, -block:]
            logits = native(model, logits)                                      # (block, V)
            tail = max(0, p - (end - block))                                    # prompt rows: no noise
            x0, x0_p = _sample(logits[tail:], temperature, generator)
            x0 = torch.cat([logits[:tail].argmax(-1), x0]).cpu()
            x0_p = torch.cat([x0_p.new_zeros(tail), x0_p])
            conf = torch.where(active.to(x0_p.device), x0_p, x0_p.new_tensor(float("-inf")))
            high = (conf > threshold).cpu()
            if int(high.sum()) >= schedule[step]:
                transfer = high
            else:
                transfer = torch.zeros_like(active)
                transfer[torch.topk(conf, min(schedule[step], int(active.sum()))).indices.cpu()] = True
            x[0, end - block:end][transfer] = x0[transfer]
            canvases.append(x[0, p:].tolist())
    return canvases
