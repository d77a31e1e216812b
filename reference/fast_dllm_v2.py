"""Fast-dLLM v2's block diffusion loop (batch of one, no block cache), written from NVlabs/
Fast-dLLM `v2/generation_functions.py` (`Fast_dLLM_QwenForCausalLM.batch_sample` and
`sample_with_top_p`, as published after commit 24cc59e75f20a6384bae8c905965bb090b96388e, which
predates v2).

What it does:
- blocks sit at absolute multiples of `block`; (gen_length // block + P // block) blocks in all;
- a prompt longer than one block has its whole blocks prefilled block-causally; when it ends on a
  block boundary, the argmax of that forward's last logits is appended at once (greedy, whatever
  the temperature): the first token of the first block;
- each block [prompt tail or first token | masks] is decoded in sub-blocks of `small` positions,
  left to right; each round runs the whole block against the cache (not written), shifts the
  logits right by one (position i from hidden i - 1) and, inside the sub-block, commits the
  masked positions with confidence > threshold (strict) plus the most confident one;
- sampling, in the logits' dtype on the model's device (its forward does not cast them: bf16 on
  a GPU): T > 0: probs = softmax(logits / T), nucleus-filtered and renormalised, token ~ probs;
  T = 0: argmax, probs = softmax(logits); confidence = probs[token] (tempered);
- a finished block is stored by one more forward, whose last logits give (argmax) the next
  block's first token.
Matched noise: torch.multinomial upstream; here the Gumbel-max sample with the engine's uniforms
for the sub-block's answer rows (prompt rows, never committed, take their argmax). A prompt of
exactly one block is never prefilled upstream (its first
decoded block starts after it with an empty cache): not reproduced, and not tested.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from reference.device import native
from reference.noise import uniforms


def _additive(allowed: torch.Tensor) -> torch.Tensor:
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]


def _sample(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator):
    if temperature == 0:
        probs = torch.softmax(logits, -1)
        return probs.argmax(-1), probs.max(-1).values
    probs = torch.softmax(logits / temperature, -1)
    sorted_probs, order = torch.sort(probs, descending=True)
    remove = torch.cumsum(sorted_probs, -1) > top_p                           # then shifted right by one
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    probs = probs.masked_fill(torch.zeros_like(remove).scatter(-1, order, remove), 0.0)
    probs = probs / probs.sum(-1, keepdim=True)
    g = -torch.log(-torch.log(uniforms(generator, *logits.shape))).to(logits.device)
    token = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
    return token, probs.gather(-1, token[:, None])[:, 0]


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, block: int, small: int,
           temperature: float, threshold: float, seed: int, top_p: float = 0.95) -> list[list[int]]:
    """The answer span (to the end of the last block, masks where undecided) after every round;
    a block's last round also shows the next block's greedy first token."""
    generator = torch.Generator().manual_seed(seed)
    p = len(prompt)
    num_blocks = gen_length // block + p // block
    end = num_blocks * block
    ids = list(prompt)
    cache = DynamicCache()

    def forward(x: list[int], start: int, allowed: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return native(model, model(input_ids=torch.tensor([x]), attention_mask=_additive(allowed),
                                       position_ids=torch.arange(start, start + len(x))[None], cache=cache,
                                       use_cache=True).logits[0])

    def span(x: list[int]) -> list[int]:
        out = x[p:end]
        return out + [mask_id] * (end - p - len(out))

    if p > block:
        whole = p // block * block
        index = torch.arange(whole)
        logits = forward(ids[:whole], 0, (index[:, None] // block) >= (index[None, :] // block))
        if p % block == 0:
            ids.append(int(logits[-1].argmax()))
    canvases = []
    for b in range(p // block, num_blocks):
        lo = b * block
        x = ids + [mask_id] * (lo + block - len(ids))                          # to the block's end
        allowed = torch.ones(block, lo + block, dtype=torch.bool)
        for k in range(block // small):
            window = slice(k * small, (k + 1) * small)
            while any(t == mask_id for t in x[lo:][window]):
                logits = forward(x[lo:], lo, allowed)                           # (block, V)
                cache.crop(lo - cache.get_seq_length()) if cache.get_seq_length() > lo else None
                logits = torch.cat([logits[:1], logits[:-1]])[window]          # hidden i - 1 predicts i
                tail = max(0, p - lo - k * small)                               # prompt rows: no noise drawn
                token, prob = _sample(logits[tail:], temperature, top_p, generator)
                head, head_p = _sample(logits[:tail], 0.0, top_p, generator)
                token, prob = torch.cat([head, token]).cpu(), torch.cat([head_p, prob]).cpu()
                masked = torch.tensor([t == mask_id for t in x[lo:][window]])
                conf = torch.where(masked, prob, prob.new_tensor(float("-inf")))
                commit = conf > threshold
                commit[conf.argmax()] = True
                commit &= masked
                for j in commit.nonzero()[:, 0].tolist():
                    x[lo + k * small + j] = int(token[j])
                canvases.append(span(x))
        logits = forward(x[lo:], lo, allowed)                                   # store the block
        x.append(int(logits[-1].argmax()))
        canvases[-1] = span(x)
        ids = x
    return canvases
