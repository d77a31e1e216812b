"""The issue-18 device check in one run: on randomly initialised small models of every upstream
family (bench/decode.py RANDOM_MODELS; bf16 on CUDA, fp32 on the CPU unless --dtype),
compare the engine's canvases with the reference loops of reference/ round for round over
prompts x temperatures x steps, then run the decode benchmark with --reference; the
full-attention decodings also with Fast-dLLM v1's prefix and dual caches (`--caches`), against
their cached reference loops (reference/fast_dllm_cache.py); and a DiffusionGemma step: a random
model at DiffusionGemma-26B-A4B's real text shapes (`--gemma-shape real`, the default; `tiny` for
the CPU test), its tokens/s and tokens accepted per step through the engine and through
transformers' own generate (bench/noise_canvas.py gpu_step); print one JSON object.

    PYTHONPATH=. python scripts/cuda_check.py [--device cuda] [--hidden 256] [--layers 4]
        [--gen-length 32] [--block-size 16] [--repeats 5]

scripts/cuda_check.sh runs it on a GPU machine. With --device cpu and small sizes it is the
quick check tests/test_cuda_check.py runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from typing import Any

import torch

from bench.decode import (
    PREFIX_ONLY,
    PROMPTS,
    REFERENCES,
    benchmark,
    decode_config,
    random_backend,
    same_rounds,
)
from bench.noise_canvas import gpu_step
from engine.backends.placement import pick_dtype
from engine.generate import run
from reference.device import OnDevice

# The DECODINGS each random model is checked with (LLaDA's weights also run Fast-dLLM v1's rules).
CHECKS = {"llada": ("llada", "fast_dllm_threshold", "fast_dllm_factor"), "dream": ("dream",), "sdar": ("sdar",),
          "fast_dllm_v2": ("fast_dllm_v2",), "llada2": ("llada2",)}
TEMPERATURES = (0.0, 0.5, 1.0, 2.0)
TOP_P = {"dream": (1.0, 0.95)}             # Dream's preset nucleus-filters (ties at entropy 0)
CACHED = ("llada", "fast_dllm_threshold", "fast_dllm_factor", "dream")   # full attention: the caches apply


def equality(backend, decoding: str, *, gen_length: int, block_size: int, cache: str = "none") -> dict[str, Any]:
    """Engine vs reference canvases over the benchmark's prompts x temperatures x steps."""
    model = OnDevice(backend.model)
    prompts = [backend.encode_chat([{"role": "user", "content": text}]) for text in PROMPTS]
    temperatures = [t for t in TEMPERATURES if not (decoding == "llada2" and t == 0)]   # its 0 samples at 1
    cases, mismatches = 0, []
    for temperature, top_p in itertools.product(temperatures, TOP_P.get(decoding, (None,))):
        for steps in sorted({block_size, max(1, block_size // 2)}):
            config = decode_config(decoding, gen_length=gen_length, block_size=block_size, steps=steps,
                                   temperature=temperature, top_p=top_p, cache=cache)
            for prompt in prompts:
                ours = [f.canvas for f in run(backend, prompt, config).frames]
                theirs = REFERENCES[decoding](model, prompt, config, backend.mask_id)
                cases += 1
                if not same_rounds(ours, theirs, decoding in PREFIX_ONLY):
                    mismatches.append({"prompt_tokens": len(prompt), "temperature": temperature, "steps": steps,
                                       "top_p": config.top_p})
    return {"cases": cases, "equal": cases - len(mismatches), "mismatches": mismatches[:5]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--gen-length", type=int, default=32)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--only", nargs="*", help="random model names to check (default: all)")
    p.add_argument("--caches", nargs="*", default=["none", "prefix", "dual"], choices=["none", "prefix", "dual"],
                   help="cache modes for the full-attention decodings (default: all three)")
    p.add_argument("--cached-decodings", nargs="*", default=list(CACHED), choices=list(CACHED),
                   help="the decodings the caches run with (default: every full-attention one)")
    p.add_argument("--dtype", choices=("auto", "bfloat16", "float32"), default="auto",
                   help="auto: bf16 on CUDA, fp32 on the CPU (engine.backends.placement.pick_dtype)")
    p.add_argument("--gemma-shape", choices=("real", "tiny"), default="real",
                   help="diffusion_gemma: a random model at DiffusionGemma-26B-A4B's text shapes (~52 GB in bf16) "
                        "or the tests' tiny one")
    p.add_argument("--gemma-steps", type=int, default=48, help="diffusion_gemma: max denoising steps per canvas")
    args = p.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(json.dumps({"error": "CUDA is not available on this machine."}))
        return 2
    started = time.perf_counter()
    report: dict[str, Any] = {"device": args.device, "torch": torch.__version__,
                              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                              "hidden": args.hidden, "layers": args.layers, "results": {}}
    for name in args.only or [*CHECKS, "diffusion_gemma"]:
        if name == "diffusion_gemma":       # a uniform-noise canvas: tokens/s and per step (bench/noise_canvas.py)
            dtype = getattr(torch, args.dtype) if args.dtype != "auto" else pick_dtype(torch.device(args.device))
            entry = gpu_step(args.device, args.gemma_shape, dtype, steps=args.gemma_steps, repeats=args.repeats)
            report["results"]["diffusion_gemma"] = entry
            print(f"diffusion_gemma ({args.gemma_shape}): {entry['engine_tokens_per_s']} tokens/s, "
                  f"{entry['accepted_per_step']} accepted per step, overhead {entry['overhead']}", file=sys.stderr)
            continue
        backend = random_backend(name, args.device, args.hidden, args.layers)
        if args.dtype != "auto":
            backend.model.to(getattr(torch, args.dtype))
        report["dtype"] = str(next(backend.model.parameters()).dtype)
        runs = [(d, c) for d in CHECKS[name] for c in (args.caches if d in args.cached_decodings else ["none"])]
        for decoding, cache in runs:
            key = decoding if cache == "none" else f"{decoding}+{cache}"
            entry: dict[str, Any] = {"model": f"random:{name}", "cache": cache}
            entry["equality"] = equality(backend, decoding, gen_length=args.gen_length, block_size=args.block_size,
                                         cache=cache)
            config = decode_config(decoding, gen_length=args.gen_length, block_size=args.block_size,
                                   steps=args.block_size, temperature=None, cache=cache)
            bench = benchmark(backend, config, reference=decoding, repeats=args.repeats)
            entry["bench"] = {k: bench[k] for k in ("engine", "reference", "overhead", "overhead_per_forward",
                                                    "same_canvases")}
            report["results"][key] = entry
            print(f"{key}: {entry['equality']['equal']}/{entry['equality']['cases']} equal, overhead "
                  f"{bench['overhead']} ({bench['overhead_per_forward']} per forward)", file=sys.stderr)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
