"""Which number format a training run computes in, chosen from what the machine's matrix units do.

bf16 autocast keeps fp32 master weights and optimizer state (autocast casts a weight to bf16 at
each matrix product and the gradient flows back into the fp32 parameter), so only the products
and what feeds them run in bf16. It pays only where the hardware multiplies bf16 natively:
- Intel AMX (`amx_bf16`): a 4096 x 256 @ 256 x 256 product ran at ~940 GFLOP/s in bf16
  against ~43 in fp32 on one core (shared/NOTES.md, turn 4);
- an AMD EPYC without AMX or AVX512-BF16 ran the same product at ~1 GFLOP/s in bf16 against
  ~19 in fp32 (models/README.md): there bf16 would make training 20x slower;
- a CUDA GPU with bf16 support (Ampere and newer).
AVX512-BF16 alone (dot products, no tiles) is reported but not trusted: `--precision bf16`
forces it where a measurement says it pays.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import torch

PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class Precision:
    dtype: torch.dtype      # what the matrix products run in
    reason: str             # one sentence for the start of a run's log

    @property
    def name(self) -> str:
        return "bf16" if self.dtype == torch.bfloat16 else "fp32"


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none, e.g. macOS)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def cpu_name(cpuinfo: str | None = None) -> str:
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return "unknown CPU"


def choose(requested: str, device: torch.device, flags: set[str] | None = None) -> Precision:
    """The run's precision: `requested` is auto, bf16 or fp32; auto takes bf16 where the device
    has bf16 matrix units (AMX on a CPU, bf16 support on a GPU), else fp32."""
    if requested not in PRECISIONS:
        raise ValueError(f"Unknown precision {requested!r}; choose one of {', '.join(PRECISIONS)}.")
    if requested == "fp32":
        return Precision(torch.float32, "fp32, as asked (--precision fp32)")
    if requested == "bf16":
        return Precision(torch.bfloat16, "bf16 autocast with fp32 master weights, as asked (--precision bf16)")
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return Precision(torch.bfloat16, "bf16 autocast with fp32 master weights: the GPU multiplies bf16")
        return Precision(torch.float32, "fp32: this GPU has no bf16 support")
    flags = cpu_flags() if flags is None else flags
    if "amx_bf16" in flags:
        return Precision(torch.bfloat16, "bf16 autocast with fp32 master weights: the CPU has AMX bf16 tiles")
    extra = " (it has AVX512-BF16 dot products, not trusted without a measurement)" if "avx512_bf16" in flags else ""
    return Precision(torch.float32, f"fp32: the CPU has no bf16 matrix units{extra}")


def autocast(precision: Precision, device: torch.device):
    """The context a training step's forward runs in (backward follows autocast's casts)."""
    if precision.dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=precision.dtype)
