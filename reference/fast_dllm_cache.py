"""Fast-dLLM v1's cached decoding loops, the slow way: written from NVlabs/Fast-dLLM
`llada/generate.py` `generate_with_prefix_cache` and `generate_with_dual_cache` (commit
24cc59e75f20a6384bae8c905965bb090b96388e), with LLaDA's and Fast-dLLM's rules of
reference/llada.py.

Per block (blocks start right after the prompt):
- the block's first round is one forward over prompt + whole canvas, as the no-cache loop's, and
  its keys and values are kept: upstream keeps those before the block (prefix) or all (dual);
- every later round feeds the block and everything after it (prefix) or the block alone (dual),
  attending to the kept keys and values outside what it feeds, and ranks with torch.topk over the
  rows it fed (the block at offset 0), not over prompt + canvas.

Here every round still runs the whole sequence, and forward hooks on each attention layer's key
and value projections put the block-start rows back outside the fed window (`StaleRows`): the
fed rows then see exactly what upstream's cached forward sees (keys before rotation; the rotation
of a position does not change), by a mechanism independent of the engine's cache
(engine/backends/kv_window.py). Where upstream differs, on purpose not followed:
- after a block's first round fills it, upstream still runs one cached forward that commits
  nothing (its `while True` tests for masks after the forward); here the block ends;
- the prefix loop draws its Gumbel noise twice per cached round and keeps the second draw; the
  noise here is drawn once per round (reference/noise.py), as the engine draws it.
"""

from __future__ import annotations

from typing import Any

import torch

from reference.llada import choose, num_transfer_tokens, propose

MODES = ("prefix", "dual")


class StaleRows:
    """Forward hooks on every `k_proj` / `v_proj` of the model (Qwen2-style attention). While
    recording they keep each projection's output over the whole sequence, (1, T, H_kv * D);
    with a `window` (lo, hi) they return the recorded output with rows lo..hi fresh."""

    def __init__(self, model: Any) -> None:
        module = model.model if hasattr(model, "logits_dtype") and hasattr(model, "model") else model  # OnDevice
        self.projections = [m for name, m in module.named_modules() if name.endswith(("self_attn.k_proj",
                                                                                     "self_attn.v_proj"))]
        if not self.projections:
            raise ValueError("StaleRows needs attention layers with k_proj and v_proj (Qwen2-style).")
        self.saved: dict[int, torch.Tensor] = {}
        self.window: tuple[int, int] | None = None
        self.handles = [m.register_forward_hook(self._hook) for m in self.projections]

    def _hook(self, module: torch.nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
        if self.window is None:
            self.saved[id(module)] = output.detach().clone()
            return output
        lo, hi = self.window
        stale = self.saved[id(module)].clone()
        stale[:, lo:hi] = output[:, lo:hi]
        return stale

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def decode(model, prompt: list[int], *, cache: str, mask_id: int, gen_length: int, block: int, steps: int,
           temperature: float, seed: int, rule: str, threshold: float = 0.9, factor: float = 1.0,
           logits_out: list | None = None) -> list[list[int]]:
    """The generated span after every round of the prefix or dual cached loop; rule is "llada",
    "threshold" or "factor". `logits_out` (a list) receives each round's (B, V) block logits."""
    if cache not in MODES:
        raise ValueError(f"cache must be one of {MODES}, got {cache!r}")
    generator = torch.Generator().manual_seed(seed)
    device = getattr(model, "device", torch.device("cpu"))
    p = len(prompt)
    x = torch.tensor([prompt + [mask_id] * gen_length])
    total = x.shape[1]
    canvases = []
    stale = StaleRows(model)
    try:
        for b in range(gen_length // block):
            lo, hi = p + b * block, p + (b + 1) * block
            schedule = num_transfer_tokens(int((x[0, lo:hi] == mask_id).sum()), steps)
            fed_end = total if cache == "prefix" else hi
            i = 0
            while True:
                stale.window = None if i == 0 else (lo, fed_end)   # round 0 records, the rest replay
                with torch.no_grad():
                    logits = model(input_ids=x).logits[0, lo:hi]                 # (B, V)
                if logits_out is not None:
                    logits_out.append(logits.clone())
                x0 = propose(logits, temperature, generator)
                # upstream's topk row: prompt + canvas in round 0, then the rows fed (block at 0)
                row_length, offset = (total, lo) if i == 0 else (fed_end - lo, 0)
                chosen = choose(rule, logits, x0, x[0, lo:hi] == mask_id, row_length, offset,
                                schedule[i] if i < steps else 0, threshold, factor, device)
                for j in chosen:
                    x[0, lo + j] = x0[j]
                canvases.append(x[0, p:].tolist())
                i += 1
                if not bool((x[0, lo:hi] == mask_id).any()):
                    break
    finally:
        stale.remove()
    return canvases
