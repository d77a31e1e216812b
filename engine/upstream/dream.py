"""Dream's decoding loop (alg="entropy", alg_temp 0), written from Dream-org/Dream
`src/diffllm/gen_utils.py` / `generation_utils.py` `_sample` and `sample_tokens` (the
repository could not be fetched here: read from copies of that function found in the code
index; they agree line for line on what follows).

What it does, over the whole canvas at once (no blocks):
- timesteps = linspace(1, eps, steps + 1), eps = 1e-3; exactly `steps` rounds;
- each round: one forward over prompt + canvas, logits shifted right by one (position i from
  hidden i - 1), the masked positions' logits -> sample_tokens: logits / T (T > 0), top-p, then
  probs = softmax, token ~ probs (T > 0) or argmax, confidence = sum p log(p + 1e-10) (minus the
  entropy);
- k = int(M (1 - s / t)) with M the masks left (all of them in the last round); when k > 0 the
  k most confident masked positions are committed.
Matched noise: Categorical sampling upstream; here the Gumbel-max sample with the engine's
uniforms, drawn for every canvas row as the engine does and read at the masked rows.
"""

from __future__ import annotations

import torch

from engine.upstream.noise import uniforms


def _top_p(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, descending=True)
    remove = torch.cumsum(torch.softmax(sorted_logits, -1), -1) > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    drop = torch.zeros_like(remove).scatter(-1, order, remove)
    return logits.masked_fill(drop, torch.finfo(logits.dtype).min)


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, steps: int, temperature: float,
           top_p: float, seed: int, eps: float = 1e-3) -> list[list[int]]:
    """The canvas after every round."""
    generator = torch.Generator().manual_seed(seed)
    p = len(prompt)
    x = torch.tensor([prompt + [mask_id] * gen_length])
    timesteps = torch.linspace(1, eps, steps + 1)
    canvases = []
    for i in range(steps):
        mask_index = x[0] == mask_id
        with torch.no_grad():
            logits = model(input_ids=x).logits[0]
        logits = torch.cat([logits[:1], logits[:-1]])[p:]                      # (L, V), shifted
        noise = uniforms(generator, gen_length, logits.shape[-1]) if temperature > 0 else None
        masked = mask_index[p:]
        mask_logits = logits[masked]
        if temperature > 0:
            mask_logits = mask_logits / temperature
        if top_p < 1:
            mask_logits = _top_p(mask_logits, top_p)
        probs = torch.softmax(mask_logits, -1)
        if temperature > 0:
            g = -torch.log(-torch.log(noise[masked]))
            x0 = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
        else:
            x0 = probs.argmax(-1)
        confidence = torch.sum(probs * torch.log(probs + 1e-10), dim=-1)
        t, s = timesteps[i], timesteps[i + 1]
        num_mask_token = mask_index.sum() / 1
        k = int(num_mask_token * (1 - s / t)) if i < steps - 1 else int(num_mask_token)
        if k > 0:
            full = torch.full((gen_length,), float("-inf"))
            full[masked] = confidence
            chosen = torch.topk(full, k).indices
            proposal = torch.full((gen_length,), mask_id)
            proposal[masked] = x0
            x[0, p + chosen] = proposal[chosen]
        canvases.append(x[0, p:].tolist())
    return canvases
