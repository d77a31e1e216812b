"""Where a model runs: the device (CUDA, Apple MPS or CPU), how a large model is spread over several
GPUs, and the dtype each device computes in."""

from __future__ import annotations

import torch

from engine.errors import BackendError


def pick_device(name: str = "auto") -> torch.device:
    """`auto` = cuda > mps > cpu; `cuda:N` picks one GPU."""
    return plan_placement(name, _gpu_count(), _mps_available())[0]


def plan_placement(name: str, gpu_count: int, mps_available: bool = False) -> tuple[torch.device, str | None]:
    """(device inputs go to, device_map for from_pretrained) for a --device value.

    `auto` or `cuda` with more than one GPU visible: device_map "auto" (accelerate spreads the
    layers over the GPUs, filling the first one first, so inputs go to cuda:0); `cuda:N` puts
    the whole model on GPU N; otherwise one device and no map."""
    name = str(name).strip().lower()
    if name in ("auto", "cuda") and gpu_count > 1:
        return torch.device("cuda", 0), "auto"
    if name == "auto":
        if gpu_count:
            return torch.device("cuda"), None
        return torch.device("mps" if mps_available else "cpu"), None
    if name == "cuda" or name.startswith("cuda:"):
        if not gpu_count:
            raise BackendError(f"Device '{name}' was asked for, but no CUDA GPU is visible; use --device cpu or auto.")
        index = name.partition(":")[2]
        if not index:
            return torch.device("cuda"), None
        if not index.isdigit() or int(index) >= gpu_count:
            raise BackendError(f"Device '{name}' does not exist: {gpu_count} GPU(s) are visible, "
                               f"cuda:0 to cuda:{gpu_count - 1}.")
        return torch.device("cuda", int(index)), None
    if name not in ("cpu", "mps"):
        raise BackendError(f"Unknown device {name!r}; choose auto, cpu, cuda, cuda:N or mps.")
    return torch.device(name), None


def _gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def pick_placement(name: str = "auto") -> tuple[torch.device, str | None]:
    """plan_placement for the GPUs of this machine."""
    return plan_placement(name, _gpu_count(), _mps_available())


def pick_dtype(device: torch.device) -> torch.dtype:
    """bf16 on CUDA, fp32 elsewhere."""
    return torch.bfloat16 if device.type == "cuda" else torch.float32
