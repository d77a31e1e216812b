"""`python -m bench decode`: decoding speed of one model on a fixed prompt set, and with
--reference the same prompts through the slow reference loop of the upstream algorithm
(reference/), so the engine's overhead over a plain loop is a measured ratio.

    python -m bench decode --model random:llada [--decoding fast_dllm_threshold]
        [--cache none|prefix|dual] [--reference] [--gen-length 32] [--block-size 16] [--steps 16]
        [--repeats 3] [--json]

`--model` is a catalog name or folder, or `random:NAME` with NAME one of RANDOM_MODELS: a
randomly initialised Qwen2 (--hidden 128, --layers 2, the tiny character tokenizer of
reference/tiny.py) wired as that upstream model is (bidirectional or block-causal, logit
shift or not), built here. `--decoding` defaults to the one the model follows. `--cache`
decodes a full-attention model with Fast-dLLM v1's prefix or dual cache
(engine/backends/kv_window.py; the reference loop is then the cached one,
reference/fast_dllm_cache.py). Numbers per run (engine, reference): forwards, answer tokens (at
most gen_length per prompt), tokens/forward, positions computed per forward (the query positions
the engine's forwards fed the model, over the forwards; full-attention backends count them),
seconds (each prompt's best of `--repeats`, summed; process CPU time on the CPU, wall clock on
an accelerator: clock_for), tokens/s; overhead = engine s / reference s, and per forward (for a
decoding whose forwards differ from the reference's); and whether the engine produced the
reference's canvases, round for round (for SDAR through a round where upstream overwrote a
prompt token).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from engine.trace import CACHE_MODES, GenerationConfig

PROMPTS = ("What is two plus two?", "Name a colour.", "Write a short line about the sea, please.",
           "List three fruits", "Say hello")


@dataclass(frozen=True)
class RandomModel:
    """How a random stand-in of an upstream model is wired, and the decoding it follows."""

    description: str
    causal: bool                        # block-causal (a causal network driven with 4-D masks) or bidirectional
    logit_shift: bool
    decoding: str                       # the DECODINGS entry it follows
    backend_options: tuple[tuple[str, Any], ...] = ()


RANDOM_MODELS = {
    "llada": RandomModel("bidirectional masked LM, no logit shift (LLaDA / Fast-dLLM v1 loops)", False, False,
                         "llada"),
    "dream": RandomModel("bidirectional masked LM read with a logit shift (Dream's loop)", False, True, "dream"),
    "sdar": RandomModel("block-causal LM with a KV cache (SDAR's loop)", True, False, "sdar"),
    "fast_dllm_v2": RandomModel("block-causal LM with a KV cache, logit shift (Fast-dLLM v2's loop)", True, True,
                                "fast_dllm_v2"),
    "llada2": RandomModel("block-causal LM without a cache (LLaDA2.0's loop)", True, False, "llada2",
                          (("use_cache", False),)),
    "llada21": RandomModel("block-causal LM without a cache, draft then edit (LLaDA2.1's loop)", True, False,
                           "llada21", (("use_cache", False),)),
    "diffusion_gemma": RandomModel("DiffusionGemma encoder-decoder, canvases of random tokens (timed against "
                                   "transformers' own generate: bench/noise_canvas.py)", False, False,
                                   "diffusion_gemma"),
}


def random_backend(name: str, device: str = "cpu", hidden: int = 256, layers: int = 4, canvas_length: int = 16):
    """A randomly initialised small model wired as RANDOM_MODELS[name], in its backend."""
    if name not in RANDOM_MODELS:
        raise ValueError(f"Unknown random model '{name}'; choose one of {', '.join(RANDOM_MODELS)}.")
    if name == "diffusion_gemma":
        from bench import noise_canvas

        return noise_canvas.random_backend(device, hidden, layers, canvas_length)
    from engine.backends.placement import pick_device, pick_dtype
    from reference import tiny
    from reference.noise import damp_mask_logit

    spec = RANDOM_MODELS[name]
    dev = pick_device(device)
    # weights at std 0.3: peaked logits, so no two confidences nearly tie in the rankings
    network = tiny.random_qwen2(causal=spec.causal, hidden=hidden, layers=layers, seed=0, initializer_range=0.3)
    model = damp_mask_logit(network, tiny.MASK_ID).to(dev, pick_dtype(dev))
    common = {"name": f"random:{name}", "mask_id": tiny.MASK_ID, "logit_shift": spec.logit_shift, "device": dev}
    if spec.causal:
        from engine.backends.block_causal import BlockCausalBackend

        return BlockCausalBackend(model, tiny.tiny_tokenizer(), mask_style="additive", **common,
                                  **dict(spec.backend_options))
    from engine.backends.full_attention import FullAttentionBackend

    return FullAttentionBackend(model, tiny.tiny_tokenizer(), **common)


# --------------------------------------------------------------------------- reference loops

def _llada(rule: str) -> Callable[..., list[list[int]]]:
    def decode(model, prompt, config, mask_id):
        from reference import fast_dllm_cache, llada

        settings = {"mask_id": mask_id, "gen_length": config.gen_length, "block": config.block_size,
                    "steps": config.steps, "temperature": config.temperature, "seed": config.seed, "rule": rule,
                    "threshold": config.threshold, "factor": config.factor}
        if config.cache != "none":
            return fast_dllm_cache.decode(model, prompt, cache=config.cache, **settings)
        return llada.decode(model, prompt, **settings)
    return decode


def _dream(model, prompt, config, mask_id):
    from reference import dream

    return dream.decode(model, prompt, mask_id=mask_id, gen_length=config.gen_length, steps=config.steps,
                        temperature=config.temperature, top_p=config.top_p, top_k=config.top_k, seed=config.seed,
                        cache=config.cache)


def _sdar(model, prompt, config, mask_id):
    from reference import sdar

    canvases, rewrote = sdar.decode(model, prompt, mask_id=mask_id, gen_length=config.gen_length,
                                    block=config.block_size, steps=config.steps, temperature=config.temperature,
                                    threshold=config.threshold, seed=config.seed)
    return canvases if rewrote is None else canvases[:rewrote + 1]   # the engine never edits the prompt


def _fast_dllm_v2(model, prompt, config, mask_id):
    from reference import fast_dllm_v2

    return fast_dllm_v2.decode(model, prompt, mask_id=mask_id, gen_length=config.gen_length,
                               block=config.block_size, small=config.sub_block_size,
                               temperature=config.temperature, threshold=config.threshold, seed=config.seed,
                               top_p=config.top_p)


def _llada2(model, prompt, config, mask_id):
    from reference import llada2

    return llada2.decode(model, prompt, mask_id=mask_id, gen_length=config.gen_length, block=config.block_size,
                         steps=config.steps, temperature=config.temperature, threshold=config.threshold,
                         seed=config.seed)


def _llada21(model, prompt, config, mask_id):
    from reference import llada21

    return llada21.decode(model, prompt, mask_id=mask_id, gen_length=config.gen_length, block=config.block_size,
                          temperature=config.temperature, threshold=config.threshold,
                          editing_threshold=config.edit_threshold, max_post_steps=config.max_post_steps,
                          seed=config.seed)


def _upstream_diffusion_gemma(model, prompt, config, mask_id):
    from bench.noise_canvas import upstream_generate

    return upstream_generate(model.model, prompt, config, mask_id)   # transformers' generate on the bare model


def rewrites(canvases: list[list[int]], mask_id: int, answer: list[int]) -> int:
    """Decided tokens replaced by another between consecutive canvases at the `answer` positions
    (a reference loop's edits, counted as engine/metrics.py edit_counts counts the engine's)."""
    count, before = 0, [mask_id] * (max(answer, default=-1) + 1)
    for canvas in canvases:
        count += sum(before[p] != mask_id and canvas[p] != mask_id and before[p] != canvas[p] for p in answer)
        before = canvas
    return count


# The reference loop of each DECODINGS entry, on (model, prompt ids, config, mask id).
REFERENCES: dict[str, Callable[..., list[list[int]]]] = {
    "llada": _llada("llada"), "fast_dllm_threshold": _llada("threshold"), "fast_dllm_factor": _llada("factor"),
    "dream": _dream, "sdar": _sdar, "fast_dllm_v2": _fast_dllm_v2, "llada2": _llada2, "llada21": _llada21,
    "diffusion_gemma": _upstream_diffusion_gemma,
}
# Compare the reference's rounds only: SDAR's stop at a round where upstream overwrote a prompt token.
PREFIX_ONLY = ("sdar",)


def same_rounds(ours: list[list[int]], theirs: list[list[int]], prefix: bool) -> bool:
    """The engine's canvases equal the reference's, round for round; with `prefix`, the
    reference's rounds and positions only."""
    if not prefix:
        return ours == theirs
    width = len(theirs[0]) if theirs else 0
    return len(ours) >= len(theirs) and [c[:width] for c in ours[:len(theirs)]] == theirs


# --------------------------------------------------------------------------- timing

def clock_for(device) -> tuple[str, Any]:
    """On the CPU the process's own CPU time (other jobs on a shared machine do not count; one
    thread with OMP_NUM_THREADS=1), on an accelerator the wall clock (the device's work is
    not CPU time; the rounds' .tolist() / .cpu() wait for it)."""
    if torch.device(device).type == "cpu":
        return "process CPU time", time.process_time
    return "wall clock", time.perf_counter


def _engine_once(backend, prompt: list[int], config: GenerationConfig
                 ) -> tuple[list, int, int, float, int, int | None]:
    """(canvases, forwards, answer tokens, seconds, edits, positions computed or None) of one generation."""
    from engine.generate import run

    clock = clock_for(backend.device)[1]
    started = clock()
    result = run(backend, prompt, config)
    seconds = clock() - started
    return ([f.canvas for f in result.frames], result.stats.nfe, result.stats.new_tokens, seconds, result.stats.edits,
            backend.positions_computed)


def _reference_once(backend, prompt: list[int], config: GenerationConfig,
                    decoding: str) -> tuple[list, int, int, float, int]:
    from engine.metrics import Ends
    from reference.device import OnDevice

    clock = clock_for(backend.device)[1]
    started = clock()
    rounds = REFERENCES[decoding](OnDevice(backend.model), prompt, config, backend.mask_id)
    seconds = clock() - started
    answer = Ends.of(backend).answer_positions(rounds[-1][:config.gen_length])        # as the engine counts
    # the slow loops run the whole sequence every round: no count of positions computed
    edits = 0 if backend.uniform_noise else rewrites(rounds, backend.mask_id, answer)   # noise: no decided tokens
    return rounds, len(rounds), len(answer), seconds, edits, None


def _numbers(nfe: int, tokens: int, seconds: float, edits: int, positions: int | None) -> dict[str, Any]:
    # edits: rewritten tokens, apart from the answer tokens (engine/metrics.py)
    return {"forwards": nfe, "new_tokens": tokens, "tokens_per_forward": round(tokens / nfe, 3) if nfe else 0.0,
            "positions_per_forward": round(positions / nfe, 1) if nfe and positions is not None else None,
            "seconds": round(seconds, 4), "tokens_per_s": round(tokens / seconds, 2) if seconds > 0 else 0.0,
            "edits": edits}


def benchmark(backend, config: GenerationConfig, *, reference: str | None, repeats: int) -> dict[str, Any]:
    """Numbers for the engine (and the reference loop of the DECODINGS entry `reference`) over
    the prompts: seconds are the sum over prompts of each prompt's best of `repeats`. The two run
    interleaved prompt by prompt, taking turns to go first, so load from other jobs on a shared
    CPU falls on both alike."""
    prompts = [backend.encode_chat([{"role": "user", "content": text}]) for text in PROMPTS]
    runners = {"engine": lambda prompt: _engine_once(backend, prompt, config)}
    if reference:
        runners["reference"] = lambda prompt: _reference_once(backend, prompt, config, reference)
    for runner in runners.values():                                            # warm-up
        runner(prompts[0])
    best = {name: [float("inf")] * len(prompts) for name in runners}
    last: dict[str, list] = {name: [None] * len(prompts) for name in runners}
    for repeat in range(repeats):
        for i, prompt in enumerate(prompts):
            order = list(runners) if (repeat + i) % 2 == 0 else list(reversed(runners))
            for name in order:
                last[name][i] = runners[name](prompt)
                best[name][i] = min(best[name][i], last[name][i][3])
    report: dict[str, Any] = {"model": backend.name, "device": str(backend.device), "prompts": len(prompts),
                              "decoding": reference, "config": config.to_dict(), "repeats": repeats,
                              "clock": clock_for(backend.device)[0]}
    for name in runners:
        positions = [r[5] for r in last[name]]
        report[name] = _numbers(sum(r[1] for r in last[name]), sum(r[2] for r in last[name]), sum(best[name]),
                                sum(r[4] for r in last[name]), None if None in positions else sum(positions))
    if reference:
        engine, ref = report["engine"], report["reference"]
        report["overhead"] = round(engine["seconds"] / ref["seconds"], 3)
        report["overhead_per_forward"] = round(engine["seconds"] / engine["forwards"]
                                               / (ref["seconds"] / ref["forwards"]), 3)
        report["same_canvases"] = all(same_rounds(ours[0], theirs[0], reference in PREFIX_ONLY)
                                      for ours, theirs in zip(last["engine"], last["reference"]))
    return report


def table(report: dict[str, Any]) -> str:
    keys = ("forwards", "new_tokens", "tokens_per_forward", "positions_per_forward", "seconds", "tokens_per_s",
            "edits")
    lines = [f"{report['model']} on {report['device']}, {report['prompts']} prompts, each one's best of "
             f"{report['repeats']} ({report['clock']}), cache {report['config'].get('cache', 'none')}",
             f"{'':10}" + "".join(f"{k:>22}" for k in keys)]
    for name in ("engine", "reference"):
        if name in report:
            lines.append(f"{name:10}" + "".join(f"{'-' if report[name][k] is None else report[name][k]:>22}"
                                                for k in keys))
    if "overhead" in report:
        lines.append(f"overhead (engine s / reference s): {report['overhead']} · per forward: "
                     f"{report['overhead_per_forward']} · same canvases: {report['same_canvases']}")
    return "\n".join(lines)


def decode_config(decoding: str, *, gen_length: int, block_size: int, steps: int,
                  temperature: float | None, top_p: float | None = None, cache: str = "none") -> GenerationConfig:
    """The GenerationConfig of a DECODINGS entry at these sizes. Dream decodes the whole canvas
    as one block; Fast-dLLM v2's sub-blocks are at most a block; LLaDA2's "temperature 0" samples
    at 1 (its reference does), so its default is 1."""
    from engine.presets import DECODINGS

    if decoding not in DECODINGS:
        raise ValueError(f"Unknown decoding '{decoding}'; choose one of {', '.join(DECODINGS)}.")
    if temperature is None:
        temperature = 1.0 if decoding == "llada2" else 0.0
    settings = dict(DECODINGS[decoding].settings)
    if top_p is not None:
        settings["top_p"] = top_p
    if decoding == "dream":
        block_size = gen_length
    if settings.get("sub_block_size", 0) > block_size:                        # sub-blocks tile a block
        settings["sub_block_size"] = block_size
    return GenerationConfig(**{**settings, "gen_length": gen_length, "block_size": block_size, "steps": steps,
                               "temperature": temperature, "stop_on_eos": False, "cache": cache})


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench decode", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help=f"catalog name, folder, or random:NAME ({', '.join(RANDOM_MODELS)})")
    p.add_argument("--decoding", help="a catalog DECODINGS name (the upstream rules); default: the one the model "
                                      "follows")
    p.add_argument("--cache", choices=CACHE_MODES, default="none",
                   help="full-attention models: Fast-dLLM v1's prefix or dual cache (default none)")
    p.add_argument("--reference", action="store_true", help="also run the reference loop and give the overhead")
    p.add_argument("--hidden", type=int, default=128, help="random models: hidden size")
    p.add_argument("--layers", type=int, default=2, help="random models: layers")
    p.add_argument("--gen-length", type=int, default=32)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--temperature", type=float, help="default 0 (LLaDA2: 1, its reference's 0)")
    p.add_argument("--top-p", type=float, help="default: the decoding's (1, Fast-dLLM v2: 0.95); only the Dream and "
                                                   "Fast-dLLM v2 reference loops filter by it")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    from bench.report import print_report

    args = parser().parse_args(argv)
    return print_report(lambda: _report(args), args.json, table)


def _report(args) -> dict:
    from engine.catalog import load_backend, resolve

    if args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}.")
    random_name = args.model.partition(":")[2] if args.model.startswith("random:") else None
    if random_name is not None and random_name not in RANDOM_MODELS:
        raise ValueError(f"Unknown random model '{random_name}'; choose one of {', '.join(RANDOM_MODELS)}.")
    decoding = args.decoding or (RANDOM_MODELS[random_name].decoding if random_name
                                 else resolve(args.model).follows)
    if decoding is None:
        raise ValueError(f"{args.model} follows no upstream decoding: name one with --decoding.")
    config = decode_config(decoding, gen_length=args.gen_length, block_size=args.block_size, steps=args.steps,
                           temperature=args.temperature, top_p=args.top_p, cache=args.cache)
    if random_name is not None:
        backend = random_backend(random_name, args.device, args.hidden, args.layers, args.block_size)
    else:
        backend = load_backend(args.model, args.device)
    report = benchmark(backend, config, reference=decoding if args.reference else None, repeats=args.repeats)
    return report
