"""Fuzzed prompts through the scaffolded decoder, as a CLI: does any reply fail to parse?

    python -m bench fuzz --model models/sprout-bd [--prompts 10000] [--seed 0] [--json]

Each prompt is a random chat: a user turn of 0-15 pieces drawn from the world's vocabulary
(colours, sizes, styles, names, ids, amounts) mixed with punctuation, JSON fragments, tool tags,
non-ASCII text and whitespace, and in two of five prompts an earlier call and a random tool
response. Every reply is decoded with scaffolded tool calls (GenerationConfig.scaffold) at the
agent benchmark's settings and read by the agent's parser (world/format.py). Printed:
prompts, parse errors by kind, schema errors (engine/scaffold/ reports), forwards per call,
tokens per forward and seconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from typing import Any

from world import entities
from world.format import TOOL_CALLS, ParseError, parse_call, render_call, render_response

NOISE = ["{", "}", '"', "'", ",", ":", "[", "]", "<tool_call>", "</tool_call>", "\\", "\n", "  ", "ü", "€", "日本",
         "🙂", "null", "true", "-", ".", "@", "#", "%", "...", "?", "!", "id", "add", "find", "sum", "finish", "cart"]


def fuzzed_chat(rng: random.Random) -> list[dict[str, str]]:
    """One random chat ending in a user turn or a tool response."""
    vocabulary = [*entities.COLORS, *entities.SIZES, "dress", "jacket", "hoodie", "Cleo Abbott", "P3K7", "C455", "ECO3",
                  "923", "12.50", "invoice", "paid", "unpaid", *NOISE]
    words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 15))]
    messages = [{"role": "user", "content": rng.choice(["", " "]).join(words)}]
    if rng.random() < 0.4:
        call = render_call(rng.choice(["view_cart", "search_products"]),
                           {} if rng.random() < 0.5 else {"query": rng.choice(vocabulary)})
        observation = rng.choice([{"error": rng.choice(vocabulary)}, {"items": words[:3], "total": rng.randint(0, 999)},
                                  [{"color": rng.choice(entities.COLORS), "id": rng.choice(vocabulary)}]])
        messages += [{"role": "assistant", "content": call}, {"role": "tool", "content": render_response(observation)}]
    return messages


def run_fuzz(backend: Any, prompts: int, seed: int = 0, config: Any = None) -> dict[str, Any]:
    from bench.agent import DEFAULT_CONFIG
    from engine.generate import run
    from world.agent import prompt_ids_for

    config = (config or DEFAULT_CONFIG).replace(scaffold=True)
    rng = random.Random(seed)
    kinds: Counter[str] = Counter()
    schema_errors, forwards, tokens, examples = 0, 0, 0, []
    started = time.perf_counter()
    for i in range(prompts):
        result = run(backend, prompt_ids_for(backend, fuzzed_chat(rng)), config.replace(seed=seed + i),
                     tools=TOOL_CALLS)
        parsed = parse_call(result.text)
        if isinstance(parsed, ParseError):
            kinds[parsed.kind] += 1
            examples.append(result.text[:200])
        schema_errors += bool(result.schema_error)
        forwards += result.stats.nfe
        tokens += result.stats.new_tokens
    return {"model": getattr(backend, "name", "?"), "prompts": prompts, "parse_errors": sum(kinds.values()),
            "parse_errors_by_kind": dict(kinds), "schema_errors": schema_errors,
            "forwards_per_call": forwards / prompts if prompts else 0.0,
            "tokens_per_forward": tokens / forwards if forwards else 0.0,
            "seconds": time.perf_counter() - started, "examples": examples[:5], "seed": seed}


def table(report: dict[str, Any]) -> str:
    return (f"{report['model']}: {report['prompts']} fuzzed prompts, parse errors {report['parse_errors']} "
            f"{report['parse_errors_by_kind'] or ''}, schema errors {report['schema_errors']}, "
            f"{report['forwards_per_call']:.2f} forwards per call, {report['tokens_per_forward']:.2f} tokens per "
            f"forward, {report['seconds']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="catalog name, folder, or py:module:function")
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.prompts < 1:
        print("error: --prompts must be at least 1.", file=sys.stderr)
        return 2
    from bench.report import load_model, print_report

    return print_report(lambda: run_fuzz(load_model(args.model, args.device), args.prompts, args.seed),
                        args.json, table)


if __name__ == "__main__":
    raise SystemExit(main())
