"""Dream's decoding loop (alg entropy, maskgit_plus or topk_margin; alg_temp 0), written from
`_sample` and `sample_tokens` in the model's own `generation_utils.py`, which lives beside the
weights on the Hugging Face hub (Dream-org/Dream-v0-Instruct-7B) and runs as
`model.diffusion_generate`: the GitHub repository DreamLM/Dream holds no copy (checked at
fac0a7f2664b4adf0925fe682b7866923fa2d62b), its `demo_completion.py` calls it with
temperature 0.2, top_p 0.95, alg "entropy", alg_temp 0 and steps = max_new_tokens, the
preset's settings. Read from copies of that file found in the code index; they agree line for
line on what follows.

What it does, over the whole canvas at once (no blocks):
- timesteps = linspace(1, eps, steps + 1), eps = 1e-3; exactly `steps` rounds;
- each round: one forward over prompt + canvas, logits shifted right by one (position i from
  hidden i - 1), the masked positions' logits -> sample_tokens, all in the logits' dtype on the
  model's device: logits / T (T > 0), then top-p (a token is dropped when the cumulative
  softmax of the tokens sorted before it is > p), then top-k, dropped logits = the dtype's
  lowest value, both also at T = 0; probs = softmax; token ~ probs (T > 0) or argmax;
  confidence = sum p log(p + 1e-10) (minus the entropy);
- k = int(M (1 - s / t)) with M the masks left (all of them in the last round); when k > 0,
  torch.topk(k) over a confidence tensor as long as prompt + canvas, -inf wherever the
  position is not masked, in the logits' dtype: ties (a one-token nucleus has entropy exactly
  0) come out in the order topk gives for that tensor.
Dream's model returns its lm_head output uncast (bf16 on a GPU). Matched noise: Categorical
sampling upstream; here the Gumbel-max sample with the engine's uniforms, drawn for every canvas
row as the engine does and read at the masked rows.

With `cache` "prefix" or "dual", the rounds after the first run Fast-dLLM v1's cached forward
(reference/fast_dllm_cache.py StaleRows): Dream's one block is the whole canvas, so both
caches keep the prompt's keys and values from the first round and feed the canvas with the
prompt's last position (its hidden predicts the first canvas token). Dream's round is unchanged.
"""

from __future__ import annotations

import torch

from reference.device import native
from reference.fast_dllm_cache import StaleRows
from reference.noise import uniforms


def _top_p(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, descending=True)
    remove = torch.cumsum(torch.softmax(sorted_logits, -1), -1) > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    drop = torch.zeros_like(remove).scatter(-1, order, remove)
    return logits.masked_fill(drop, torch.finfo(logits.dtype).min)


def _top_k(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[..., -1:]
    return logits.masked_fill(logits < kth, torch.finfo(logits.dtype).min)


def decode(model, prompt: list[int], *, mask_id: int, gen_length: int, steps: int, temperature: float,
           top_p: float, seed: int, top_k: int = 0, alg: str = "entropy", eps: float = 1e-3,
           cache: str = "none") -> list[list[int]]:
    """The canvas after every round. `model` is a transformers model or reference.device's
    OnDevice wrapper: either way the loop computes in its logits' own dtype and on its device, as
    Dream does. `alg`: entropy, maskgit_plus (confidence
    p[x0]) or topk_margin (p_(1) - p_(2))."""
    generator = torch.Generator().manual_seed(seed)
    p = len(prompt)
    x = torch.tensor([prompt + [mask_id] * gen_length], device=model.device)
    timesteps = torch.linspace(1, eps, steps + 1)
    canvases = []
    stale = StaleRows(model) if cache != "none" else None
    try:
        for i in range(steps):
            if stale is not None:
                stale.window = None if i == 0 else (p - 1, x.shape[1])
            canvases.append(_round(model, x, i, p, mask_id, gen_length, steps, temperature, top_p, top_k, alg,
                                   timesteps, generator))
    finally:
        if stale is not None:
            stale.remove()
    return canvases


def _round(model, x, i, p, mask_id, gen_length, steps, temperature, top_p, top_k, alg, timesteps, generator):
    """One round of Dream's loop on x (1, P + L) in place; the canvas after it."""
    device = model.device
    mask_index = x[0] == mask_id                                             # (P + L,)
    with torch.no_grad():
        logits = native(model, model(input_ids=x).logits[0])             # (P + L, V)
    logits = torch.cat([logits[:1], logits[:-1]])                         # shifted
    noise = uniforms(generator, gen_length, logits.shape[-1]) if temperature > 0 else None
    mask_logits = logits[mask_index]                                      # (M, V)
    if temperature > 0:
        mask_logits = mask_logits / temperature
    if top_p < 1:
        mask_logits = _top_p(mask_logits, top_p)
    if top_k > 0:
        mask_logits = _top_k(mask_logits, top_k)
    probs = torch.softmax(mask_logits, -1)
    if temperature > 0:
        g = -torch.log(-torch.log(noise[mask_index[p:].cpu()])).to(device)
        x0 = (torch.log(probs.to(torch.float64)) + g).argmax(-1)
    else:
        x0 = probs.max(-1).indices
    if alg == "entropy":
        confidence = torch.sum(probs * torch.log(probs + 1e-10), dim=-1)
    elif alg == "topk_margin":
        sorted_probs = torch.sort(probs, dim=-1, descending=True).values
        confidence = sorted_probs[:, 0] - sorted_probs[:, 1]
    else:
        confidence = probs.gather(-1, x0[:, None])[:, 0]
    t, s = timesteps[i], timesteps[i + 1]
    num_mask_token = mask_index.sum().cpu() / 1
    k = int(num_mask_token * (1 - s / t)) if i < steps - 1 else int(num_mask_token)
    if k > 0:
        full = torch.full(x.shape[1:], float("-inf"), dtype=logits.dtype, device=device)
        full[mask_index] = confidence
        chosen = torch.topk(full, k).indices
        proposal = torch.full_like(x[0], mask_id)
        proposal[mask_index] = x0
        x[0, chosen] = proposal[chosen]
    return x[0, p:].tolist()
