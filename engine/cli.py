"""`python -m engine.cli` (also `python -m engine.generate`): generate an answer with one
model from a terminal, with the model's own decoding defaults and any flag over them.

    python -m engine.cli --model models/sprout-bd --prompt "Add 2 pink hoodies in size XL." --live

`--live` redraws the canvas every round (masks as MASK_GLYPH, this round's tokens in green on a
terminal, one plain line per frame otherwise); `--json` prints one object: text, config, stats.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable

from engine.errors import BackendError, ConfigError
from engine.generate import run
from engine.metrics import summary_line
from engine.trace import Frame, GenerationConfig, Stats

MASK_GLYPH = "░"
SETTINGS = ("gen_length", "block_size", "steps", "sampler", "threshold", "factor", "entropy_bound",
            "temperature", "top_p", "top_k", "seed")


def render_canvas(frame: Frame, backend, color: bool) -> str:
    """One line of the canvas: masks as a glyph, EOS/pad as a dim dot, this round's tokens
    highlighted (ANSI) when `color`."""
    mask_id = backend.mask_id if backend.kind == "diffusion" else None
    fresh = {p for p, _, _ in frame.committed}
    parts = []
    for pos, token in enumerate(frame.canvas):
        if token == mask_id:
            parts.append(MASK_GLYPH)
            continue
        piece = "·" if token in backend.eos_ids or token == backend.pad_id else backend.token_piece(token)
        piece = piece.replace("\n", "⏎")
        parts.append(f"\x1b[1;32m{piece}\x1b[0m" if color and pos in fresh else piece)
    return "".join(parts)


def live_printer(backend, stream) -> Callable[[Frame], None]:
    """Redraw the canvas in place on a terminal; one plain line per frame otherwise."""
    tty = stream.isatty()
    drawn = {"lines": 0}

    def show(frame: Frame) -> None:
        head = f"block {frame.block} round {frame.round} · nfe {frame.nfe}"
        body = render_canvas(frame, backend, color=tty)
        if not tty:
            print(f"[{head}] {body}", file=stream, flush=True)
            return
        width = max(1, shutil.get_terminal_size().columns)
        plain = render_canvas(frame, backend, color=False)
        if drawn["lines"]:
            stream.write(f"\x1b[{drawn['lines']}F\x1b[J")                      # up N lines, clear below
        stream.write(f"{head}\n{body}\n")
        stream.flush()
        drawn["lines"] = 1 + max(1, -(-len(plain) // width))

    return show


def stats_line(stats: Stats) -> str:
    """The numbers of one generation, labelled as everywhere else (engine/metrics.py)."""
    return summary_line(stats)


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(prog="python -m engine.cli", description="Generate an answer with one model.")
    cli.add_argument("--model", required=True, help="catalog name or local folder")
    cli.add_argument("--prompt", required=True, help="the user message")
    cli.add_argument("--gen-length", type=int)
    cli.add_argument("--block-size", type=int)
    cli.add_argument("--steps", type=int)
    cli.add_argument("--sampler")
    cli.add_argument("--threshold", type=float)
    cli.add_argument("--factor", type=float)
    cli.add_argument("--entropy-bound", type=float)
    cli.add_argument("--temperature", type=float)
    cli.add_argument("--top-p", type=float)
    cli.add_argument("--top-k", type=int)
    cli.add_argument("--seed", type=int)
    cli.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    cli.add_argument("--json", action="store_true", help="print one JSON object: text, config, stats")
    cli.add_argument("--live", action="store_true", help="redraw the canvas every round")
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    flags = {k: getattr(args, k) for k in SETTINGS if getattr(args, k) is not None}
    if not args.prompt.strip():
        print("error: The prompt is empty: pass some text with --prompt.", file=sys.stderr)
        return 2
    # Imported here, once the arguments are fine: loading the catalog pulls in transformers.
    from engine import catalog

    try:
        # the model's own decoding defaults (the playground's), then the flags given
        config = GenerationConfig(**{**catalog.resolve(args.model).defaults, **flags})
        backend = catalog.load_backend(args.model, device=args.device)
        prompt_ids = backend.encode_chat([{"role": "user", "content": args.prompt}])
        live = live_printer(backend, sys.stderr if args.json else sys.stdout) if args.live else None
        result = run(backend, prompt_ids, config, on_frame=live)
    except (BackendError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Stopped.", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps({"text": result.text, "config": config.to_dict(), "stats": result.stats.to_dict()}))
    else:
        print(result.text)
        print(stats_line(result.stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
