"""Which number format a training run computes in, chosen from what the machine's matrix units do.

Two bf16 paths, both with fp32 master weights and optimizer state:
- **autocast** (`bf16-autocast`): the model stays fp32; autocast casts each weight to bf16 at its
  matrix product and the gradient flows back into the fp32 parameter. Only the products run in
  bf16: an fp32 norm weight times a bf16 activation is fp32 again (type promotion), so every
  elementwise op between two products reads and writes fp32, and each product casts its input
  back down (a BD step made ~1,000 such casts);
- **a bf16 compute copy** (`bf16`, auto's choice): the step computes with a copy of the model whose
  weights are bf16 (`ComputeCopy`), still under autocast (it casts what meets fp32: the delta
  rule's fp32 states, the read-out heads). Activations stay bf16 from product to product, so the
  memory-bound elementwise ops move half the bytes and the casts go. After backward the copy's
  bf16 gradients become the master's fp32 ones, the optimizer steps the master, and the copy is
  refreshed from it. The per-head gate and scale parameters (A_log, dt_bias, the history logit's
  bias and slope: 4 values each) stay fp32 in the copy: a decay a = 0.99 rounded to bf16's 8
  mantissa bits could be 0.988 or 0.992, a memory of ~100 tokens against ~85 or ~125.
  Measured on the AMX Xeon, one thread (`python -m bench train`, 40 steps, the paths in turn):
  BD 1.11x and AR 1.13x the autocast path's tokens/CPU-s (models/README.md). On a GPU auto takes
  the copy too; no GPU has measured it yet.

bf16 pays only where the hardware multiplies bf16 natively:
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
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

PRECISIONS = ("auto", "bf16", "bf16-autocast", "fp32")
# a parameter with fewer values than this keeps fp32 in the bf16 compute copy: the per-head gates
# and scales (4 values each), which set decays and logit offsets; norm weights (64, 256) go bf16,
# or their products would promote every activation back to fp32
FP32_BELOW = 16


@dataclass(frozen=True)
class Precision:
    dtype: torch.dtype      # what the matrix products run in
    reason: str             # one sentence for the start of a run's log
    bf16_copy: bool = False     # the step computes with a bf16 copy of the weights (ComputeCopy)

    @property
    def name(self) -> str:
        if self.dtype == torch.float32:
            return "fp32"
        return "bf16" if self.bf16_copy else "bf16-autocast"


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
    if requested == "bf16-autocast":
        return Precision(torch.bfloat16, "bf16 autocast of fp32 weights, as asked (--precision bf16-autocast)")
    copy_of = "a bf16 compute copy of fp32 master weights"
    if requested == "bf16":
        return Precision(torch.bfloat16, f"{copy_of}, as asked (--precision bf16)", bf16_copy=True)
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return Precision(torch.bfloat16, f"{copy_of}: the GPU multiplies bf16", bf16_copy=True)
        return Precision(torch.float32, "fp32: this GPU has no bf16 support")
    flags = cpu_flags() if flags is None else flags
    if "amx_bf16" in flags:
        return Precision(torch.bfloat16, f"{copy_of}: the CPU has AMX bf16 tiles", bf16_copy=True)
    extra = " (it has AVX512-BF16 dot products, not trusted without a measurement)" if "avx512_bf16" in flags else ""
    return Precision(torch.float32, f"fp32: the CPU has no bf16 matrix units{extra}")


def autocast(precision: Precision, device: torch.device):
    """The context a training step's forward runs in (backward follows autocast's casts)."""
    if precision.dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=precision.dtype)


class ComputeCopy:
    """The module a training step computes with, and the fp32 master module the optimizer owns.

    Without a bf16 copy the two are one module and the copy's bookkeeping is a no-op, so the
    training loop reads the same either way:

        with autocast(precision, device):
            loss = f(weights.compute)
        weights.step(loss, optimizer)     # backward, fp32 gradients, clip, step, refresh
    """

    def __init__(self, master: torch.nn.Module, precision: Precision):
        self.master = master
        self.compute = master
        if precision.bf16_copy:
            self.compute = copy.deepcopy(master)
            for p in self.compute.parameters():
                if p.numel() >= FP32_BELOW:
                    p.data = p.data.to(torch.bfloat16)

    @property
    def separate(self) -> bool:
        return self.compute is not self.master

    def _pairs(self) -> Iterator[tuple[torch.nn.Parameter, torch.nn.Parameter]]:
        return zip(self.master.parameters(), self.compute.parameters(), strict=True)

    def gradients_to_master(self) -> None:
        """Each master parameter's .grad becomes its copy's gradient in fp32 (None stays None)."""
        if not self.separate:
            return
        for master, comp in self._pairs():
            master.grad = None if comp.grad is None else comp.grad.to(master.dtype)
            comp.grad = None

    @torch.no_grad()
    def refresh(self) -> None:
        """The compute weights rounded from the master's (after an optimizer step, after a resume)."""
        if not self.separate:
            return
        for master, comp in self._pairs():
            comp.copy_(master)

    def step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer, max_norm: float = 1.0) -> None:
        """One optimizer step from `loss`: backward through the compute weights, their gradients
        onto the master, the master's norm clipped to `max_norm`, the step, the copy refreshed."""
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.gradients_to_master()
        torch.nn.utils.clip_grad_norm_(self.master.parameters(), max_norm)
        optimizer.step()
        self.refresh()

    def train(self, mode: bool = True) -> None:
        self.master.train(mode)
        self.compute.train(mode)
