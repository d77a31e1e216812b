"""Run a reference loop's model on its own device and dtype (CUDA, bf16) while the loop itself
stays on the CPU: ids and masks go to the model's device (a float mask in the model's dtype, as
SDPA requires), logits come back as float32 on the CPU, exactly the values the engine's
backends hand to its samplers (`.float()` of the model's logits). `native` turns them back into
the logits the model computed, for the loops that sample in that dtype on the model's device, as
Dream, SDAR and LLaDA2 do."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch


class OnDevice:
    """`OnDevice(model)(input_ids=..., attention_mask=..., ...)` -> an object with `.logits`."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        first = next(model.parameters())
        self.device, self.dtype = first.device, first.dtype
        self.logits_dtype = first.dtype                # of the last call's logits, before .float()

    def __call__(self, **kwargs: Any) -> SimpleNamespace:
        moved = {}
        for name, value in kwargs.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(self.dtype)
            moved[name] = value
        out = self.model(**moved)
        self.logits_dtype = out.logits.dtype
        return SimpleNamespace(logits=out.logits.float().cpu())


def native(model: Any, logits: torch.Tensor) -> torch.Tensor:
    """`logits` as `model` computed them: in their own dtype, on its device (an OnDevice model
    recorded that dtype; a plain model's logits are already so)."""
    return logits.to(model.device, getattr(model, "logits_dtype", logits.dtype))
