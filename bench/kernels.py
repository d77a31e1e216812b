"""Kernel timings at Sprout's shapes: reference loop vs chunked/vectorised torch vs Triton (GPU only).

    python -m bench kernels [--json] [--repeats N] [--threads N] [--device cpu|cuda]

Prints a readable table (or, with --json, only JSON). Each time is the median of --repeats runs after one
warm-up run, in milliseconds, measured with time.perf_counter (CUDA runs are synchronised). The reference loops
take seconds and have nothing to warm up: they get no warm-up run and at most 3 timed runs. "fwd+bwd" times the chunked
form with autograd, which is what CPU training pays per G layer.
"""

import argparse
import json
import statistics
import time
from functools import partial

import torch

from dlm_kernels.block_softmax import block_softmax_with_history_ref, block_softmax_with_history_torch
from dlm_kernels.gated_delta import chunk_gated_delta_rule, gated_delta_rule_ref, gated_delta_step

GDN_SHAPES = [(B, T) for B in (1, 16) for T in (64, 256)]  # H = 4, K = V = 64, chunk 16
BLOCK_SIZES = (4, 8, 16)  # block softmax: B = 16, H = 4, D = Dv = 64
H, K, V, CHUNK = 4, 64, 64, 16


def median_ms(fn, repeats, device, warmup=1):
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def triton_ready(device):
    if device.type != "cuda":
        return "skipped: no GPU"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "skipped: triton not installed"
    return None


def bench_gdn(device, repeats):
    rows = []
    skip = triton_ready(device)
    for B, T in GDN_SHAPES:
        gen = torch.Generator().manual_seed(0)
        q = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1).to(device)
        k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1).to(device)
        v = torch.randn(B, T, H, V, generator=gen).to(device)
        g = (-torch.rand(B, T, H, generator=gen)).to(device)
        beta = torch.rand(B, T, H, generator=gen).to(device)
        state = torch.zeros(B, H, K, V, device=device)
        row = {"op": "gated_delta", "B": B, "T": T, "H": H, "K": K, "V": V, "chunk": CHUNK, "repeats": repeats}
        with torch.no_grad():
            reference = partial(gated_delta_rule_ref, q, k, v, g, beta)
            row["reference_ms"] = median_ms(reference, min(repeats, 3), device, warmup=0)
            chunked = partial(chunk_gated_delta_rule, q, k, v, g, beta, chunk_size=CHUNK)
            row["chunked_ms"] = median_ms(chunked, repeats, device)
            step = partial(gated_delta_step, q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], state)
            row["step_ms"] = median_ms(step, repeats, device)
        leaves = [x.clone().requires_grad_() for x in (q, k, v, g, beta)]

        def forward_backward(leaves=leaves):
            o, s = chunk_gated_delta_rule(*leaves, chunk_size=CHUNK)
            (o.sum() + s.sum()).backward()

        row["chunked_fwd_bwd_ms"] = median_ms(forward_backward, repeats, device)
        if skip is None:
            from dlm_kernels.triton_gdn import chunk_gated_delta_rule_triton

            triton_fwd = partial(chunk_gated_delta_rule_triton, q, k, v, g, beta, chunk_size=CHUNK)
            row["triton_ms"] = median_ms(triton_fwd, repeats, device)
        else:
            row["triton_ms"] = skip
        rows.append(row)
    return rows


def bench_block_softmax(device, repeats, B=16):
    rows = []
    skip = triton_ready(device)
    for L in BLOCK_SIZES:
        gen = torch.Generator().manual_seed(0)
        q, k = (torch.randn(B, H, L, K, generator=gen).to(device) for _ in range(2))
        v, history = (torch.randn(B, H, L, V, generator=gen).to(device) for _ in range(2))
        logit = torch.full((1, H, 1), float(torch.log(torch.tensor(L))), device=device)
        row = {"op": "block_softmax", "B": B, "L": L, "H": H, "D": K, "Dv": V, "repeats": repeats}
        with torch.no_grad():
            reference = partial(block_softmax_with_history_ref, q, k, v, history, logit)
            row["reference_ms"] = median_ms(reference, min(repeats, 3), device, warmup=0)
            vectorised = partial(block_softmax_with_history_torch, q, k, v, history, logit)
            row["torch_ms"] = median_ms(vectorised, repeats, device)
        if skip is None:
            from dlm_kernels.triton_block_softmax import block_softmax_with_history_triton

            triton_fwd = partial(block_softmax_with_history_triton, q, k, v, history, logit)
            row["triton_ms"] = median_ms(triton_fwd, repeats, device)
        else:
            row["triton_ms"] = skip
        rows.append(row)
    return rows


def fmt(x):
    return f"{x:10.3f}" if isinstance(x, float) else f"{x:>10}"


def print_table(result):
    print(f"device: {result['device']}   torch {result['torch']}   threads {result['threads']}")
    print("\ngated delta rule (H=4, K=V=64, chunk 16), median ms; 'ref/chunk' = speed-up of the chunked form")
    print(f"{'B':>3} {'T':>4} {'reference':>10} {'chunked':>10} {'ref/chunk':>10} {'fwd+bwd':>10} {'step':>10}  triton")
    for r in result["gated_delta"]:
        ratio = r["reference_ms"] / r["chunked_ms"]
        print(
            f"{r['B']:>3} {r['T']:>4} {fmt(r['reference_ms'])} {fmt(r['chunked_ms'])} {ratio:10.1f}"
            f" {fmt(r['chunked_fwd_bwd_ms'])} {fmt(r['step_ms'])}  {str(r['triton_ms']).strip()}"
        )
    print("\nblock softmax with history slot (B=16, H=4, D=Dv=64), median ms")
    print(f"{'L':>4} {'reference':>10} {'torch':>10} {'ref/torch':>10}  triton")
    for r in result["block_softmax"]:
        ratio = r["reference_ms"] / r["torch_ms"]
        print(f"{r['L']:>4} {fmt(r['reference_ms'])} {fmt(r['torch_ms'])} {ratio:10.0f}  {str(r['triton_ms']).strip()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (median is reported)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda was asked for, but torch sees no CUDA GPU; use --device cpu")
    device = torch.device(args.device)
    result = {
        "device": str(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "gated_delta": bench_gdn(device, args.repeats),
        "block_softmax": bench_block_softmax(device, args.repeats),
    }
    if not args.json:
        print_table(result)
        print()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    main()
