"""Benchmarks as CLIs: each prints JSON (`--json`) or a readable table, and says what goes wrong in one
sentence. Speed and quality targets live here, never in timed unit tests.

    python -m bench agent --model A [--baseline B] [--task-set templates|phrasing|words] [--json]
    python -m bench pages [--tasks 20] [--modes native polyfill]  the web pages' own cost per task (WebMCP)
    python -m bench decode --model NAME [--reference]    decoding speed against the reference loops
    python -m bench fuzz --model NAME [--prompts 10000]  fuzzed prompts through scaffolded tool calls
    python -m bench fused --model models/sprout-bd       the fused agent step
    python -m bench api --url URL --model NAME           load on an OpenAI-compatible server
    python -m bench kernels [--device cpu|cuda]          the kernels at Sprout's shapes
    python -m bench train [--twins ar bd] [--steps 200]  training speed, fast path against the old one
    python -m bench hostile [--max-mb 8] [--seconds 10]  hostile JSON: scan time by size, the page under attack
    python -m bench races [--races 5]                    the same Compare race N times: does model time hold?
    python -m bench stop [--trials 5]                    how long Stop takes in Chat, Agent and Compare
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {"agent": "bench.agent", "decode": "bench.decode", "fuzz": "bench.fuzz", "fused": "bench.fused",
            "api": "bench.api", "kernels": "bench.kernels", "train": "bench.train", "hostile": "bench.hostile",
            "pages": "bench.pages", "races": "bench.races",
            "stop": "bench.stop"}


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark command: the first word picks its module, the rest are its arguments."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"error: no benchmark '{argv[0]}'; choose one of {', '.join(COMMANDS)}.", file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:]) or 0
