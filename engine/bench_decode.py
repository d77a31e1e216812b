"""`python -m engine.bench decode`: decoding speed of one model on a fixed prompt set, and with
--reference the same prompts through the test suite's reference loop of the upstream
algorithm (tests/reference/), so the engine's overhead over a plain loop is a measured ratio.

    python -m engine.bench decode --model random:llada [--decoding fast_dllm_threshold]
        [--reference] [--gen-length 32] [--block-size 16] [--steps 16] [--repeats 3] [--json]

`--model` is a catalog name or folder, or `random:llada`: a randomly initialised bidirectional
Qwen2 (--hidden 128, --layers 2, the tests' 100-token character tokenizer), built here; `random:`
models and --reference need the repository's tests/ package (run from the repository root).
Numbers per run (engine, reference): forwards, new tokens, tokens/forward, seconds, tokens/s,
summed over the prompts, best of `--repeats` by seconds; overhead = engine s / reference s; and
whether the two produced the same canvases, round for round.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

from engine.trace import ConfigError, GenerationConfig

PROMPTS = ("What is two plus two?", "Name a colour.", "Write a short line about the sea, please.",
           "List three fruits", "Say hello")
RANDOM_FAMILIES = {"llada": "full-attention masked LM, no logit shift (LLaDA / Fast-dLLM v1 loops)"}
REFERENCE_RULES = {"llada": "llada", "fast_dllm_threshold": "threshold", "fast_dllm_factor": "factor"}


def random_backend(family: str, device: str = "cpu", hidden: int = 256, layers: int = 4):
    """A randomly initialised small model of `family`, wrapped in its backend."""
    if family not in RANDOM_FAMILIES:
        raise ValueError(f"Unknown random model family '{family}'; choose one of {', '.join(RANDOM_FAMILIES)}.")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    import tests.tiny_models as tm
    from engine.backends.base import pick_device, pick_dtype
    from engine.backends.full_attention import FullAttentionBackend
    from tests.reference.noise import damp_mask_logit

    torch.manual_seed(0)
    heads = max(1, hidden // 32)
    config = Qwen2Config(vocab_size=tm.VOCAB_SIZE, hidden_size=hidden, intermediate_size=4 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=1024, is_causal=False, bos_token_id=tm.BOS_ID,
                         eos_token_id=tm.EOS_ID, pad_token_id=tm.PAD_ID)
    dev = pick_device(device)
    model = damp_mask_logit(Qwen2ForCausalLM(config).eval(), tm.MASK_ID).to(dev, pick_dtype(dev))
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name=f"random:{family}", mask_id=tm.MASK_ID,
                                logit_shift=False, device=dev)


def _engine_run(backend, prompts: list[list[int]], config: GenerationConfig) -> tuple[dict[str, Any], list]:
    from engine.generate import run

    canvases, nfe, tokens = [], 0, 0
    started = time.perf_counter()
    for prompt in prompts:
        result = run(backend, prompt, config)
        canvases.append([f.canvas for f in result.frames])
        nfe += result.stats.nfe
        tokens += result.stats.new_tokens
    return _numbers(nfe, tokens, time.perf_counter() - started), canvases


def _reference_run(backend, prompts: list[list[int]], config: GenerationConfig,
                   rule: str) -> tuple[dict[str, Any], list]:
    from tests.reference import llada as reference

    canvases, nfe, tokens = [], 0, 0
    started = time.perf_counter()
    for prompt in prompts:
        rounds = reference.decode(backend.model, prompt, mask_id=backend.mask_id, gen_length=config.gen_length,
                                  block=config.block_size, steps=config.steps, temperature=config.temperature,
                                  seed=config.seed, rule=rule, threshold=config.threshold, factor=config.factor)
        canvases.append(rounds)
        nfe += len(rounds)
        tokens += sum(1 for t in rounds[-1] if t != backend.mask_id)
    return _numbers(nfe, tokens, time.perf_counter() - started), canvases


def _numbers(nfe: int, tokens: int, seconds: float) -> dict[str, Any]:
    return {"forwards": nfe, "new_tokens": tokens, "tokens_per_forward": round(tokens / nfe, 3) if nfe else 0.0,
            "seconds": round(seconds, 4), "tokens_per_s": round(tokens / seconds, 2) if seconds > 0 else 0.0}


def benchmark(backend, config: GenerationConfig, *, reference_rule: str | None, repeats: int) -> dict[str, Any]:
    """Best-of-`repeats` numbers for the engine (and the reference), runs interleaved."""
    prompts = [backend.encode_chat([{"role": "user", "content": text}]) for text in PROMPTS]
    _engine_run(backend, prompts[:1], config)                                   # warm-up
    best: dict[str, dict[str, Any]] = {}
    same = None
    for _ in range(repeats):
        runs = {"engine": _engine_run(backend, prompts, config)}
        if reference_rule:
            runs["reference"] = _reference_run(backend, prompts, config, reference_rule)
            same = runs["engine"][1] == runs["reference"][1]
        for name, (numbers, _) in runs.items():
            if name not in best or numbers["seconds"] < best[name]["seconds"]:
                best[name] = numbers
    report: dict[str, Any] = {"model": backend.name, "device": str(backend.device), "prompts": len(prompts),
                              "config": config.to_dict(), "repeats": repeats, **best}
    if reference_rule:
        report["overhead"] = round(best["engine"]["seconds"] / best["reference"]["seconds"], 3)
        report["same_canvases"] = same
    return report


def table(report: dict[str, Any]) -> str:
    keys = ("forwards", "new_tokens", "tokens_per_forward", "seconds", "tokens_per_s")
    lines = [f"{report['model']} on {report['device']}, {report['prompts']} prompts, best of {report['repeats']}",
             f"{'':10}" + "".join(f"{k:>20}" for k in keys)]
    for name in ("engine", "reference"):
        if name in report:
            lines.append(f"{name:10}" + "".join(f"{report[name][k]:>20}" for k in keys))
    if "overhead" in report:
        lines.append(f"overhead (engine s / reference s): {report['overhead']} · same canvases: "
                     f"{report['same_canvases']}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine.bench decode", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="catalog name, folder, or random:llada")
    p.add_argument("--decoding", default="fast_dllm_threshold", help="a catalog DECODINGS name (the upstream rules)")
    p.add_argument("--reference", action="store_true", help="also run the reference loop and give the overhead")
    p.add_argument("--hidden", type=int, default=128, help="random models: hidden size")
    p.add_argument("--layers", type=int, default=2, help="random models: layers")
    p.add_argument("--gen-length", type=int, default=32)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from engine.catalog import DECODINGS, load_backend

    try:
        if args.decoding not in DECODINGS:
            raise ValueError(f"Unknown decoding '{args.decoding}'; choose one of {', '.join(DECODINGS)}.")
        if args.repeats < 1:
            raise ValueError(f"--repeats must be at least 1, got {args.repeats}.")
        config = GenerationConfig(**{**DECODINGS[args.decoding].settings, "gen_length": args.gen_length,
                                     "block_size": args.block_size, "steps": args.steps,
                                     "temperature": args.temperature, "stop_on_eos": False})
        rule = REFERENCE_RULES.get(args.decoding) if args.reference else None
        if args.reference and rule is None:
            raise ValueError(f"No reference loop for the '{args.decoding}' decoding yet.")
        if args.model.startswith("random:"):
            backend = random_backend(args.model.partition(":")[2], args.device, args.hidden, args.layers)
        else:
            backend = load_backend(args.model, args.device)
        report = benchmark(backend, config, reference_rule=rule, repeats=args.repeats)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        print(f"error: {error.name} is missing: random models and --reference need the repository's tests/ "
              f"package; run from the repository root.", file=sys.stderr)
        return 2
    except RuntimeError as error:                                              # BackendError: a sentence
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0
