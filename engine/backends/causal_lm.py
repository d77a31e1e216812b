"""The autoregressive baseline: any `AutoModelForCausalLM` (Qwen2.5, Qwen3, ...) with a
standard KV cache. `prefill` writes the prompt and returns the next-token logits; each
`step` appends one token and returns the logits for the one after it."""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.hf_calls import as_batch, cache_length, call_model, new_cache
from engine.backends.hf_loading import context_length
from engine.backends.hf_text import HFTextMixin, special_ids


class CausalLMBackend(HFTextMixin):
    """Next-token prediction over a DynamicCache."""

    kind = "autoregressive"
    can_extend = True

    def __init__(self, model: torch.nn.Module, tokenizer: Any, *, name: str, device: torch.device,
                 max_length: int | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.mask_id = None
        self.eos_ids, self.pad_id = special_ids(tokenizer, model)
        self.max_length = int(max_length or context_length(model, tokenizer))
        self.cache: Any = None

    def prefill(self, prompt_ids: torch.Tensor) -> torch.Tensor:
        """(1, P) prompt -> logits (1, V) for the first new token; resets the cache."""
        prompt = as_batch(prompt_ids).to(self.device)
        if prompt.shape[1] < 1:
            raise BackendError(f"Model '{self.name}' needs a prompt of at least one token.")
        self._check_length(prompt.shape[1])
        self.cache = new_cache()
        logits, self.cache = call_model(self.model, prompt, cache=self.cache, last_only=True)  # (1, 1|P, V)
        return logits[:, -1].float()                                             # (1, V)

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token -> logits (1, V) for the next one."""
        if self.cache is None:
            raise BackendError("step was called before prefill: start a generation with prefill(prompt_ids).")
        self._check_length(cache_length(self.cache) + 1)
        x = torch.tensor([[int(token_id)]], dtype=torch.long, device=self.device)    # (1, 1)
        logits, self.cache = call_model(self.model, x, cache=self.cache)            # (1, 1, V)
        return logits[:, -1].float()                                                 # (1, V)

    def extend(self, ids: list[int]) -> torch.Tensor:
        """Append several known tokens in one forward (jump-forward) -> logits (1, V) for the next."""
        if self.cache is None:
            raise BackendError("extend was called before prefill: start a generation with prefill(prompt_ids).")
        self._check_length(cache_length(self.cache) + len(ids))
        x = torch.tensor([[int(t) for t in ids]], dtype=torch.long, device=self.device)  # (1, n)
        logits, self.cache = call_model(self.model, x, cache=self.cache)            # (1, n, V)
        return logits[:, -1].float()                                                 # (1, V)
