"""A standalone HTML replay of one generation: one file, works offline, nothing but itself runs.

The page is rendered by Jinja2 with autoescape; the trace travels as JSON in a non-executed
`<script type="application/json">` block, with what every cell shows at every step worked out here
by visualizer/cells.py (the live grid's own derivation, sent as the cells that change from one step
to the next); a small vanilla-JS player (templates/replay.js) only draws those, with `textContent`.
A Content-Security-Policy meta tag allows no network at all and only the player script, identified
by its sha256 hash, so even a token that escaped its cell could not run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from engine.metrics import Ends, summary_line
from engine.trace import GenerationConfig, Result, block_size_of
from world.format import ParseError, dumps, parse_call
from world.provenance import describe, label, unseen_in_call
from world.tools import FINISH

from .cells import block_bounds, step_view
from .grid import GRID_CSS, trace_legend
from .marks import MARK_CSS, flag_html

# The player waits this long per round at 1x, longer when the trace is short, so that playing
# a whole replay at the default speed takes at least MIN_REPLAY_S: a two-forward answer is
# still something a person can watch.
ROUND_MS = 300
MIN_REPLAY_S = 2.0

_TEMPLATES = Path(__file__).parent / "templates"
_ENV = Environment(loader=FileSystemLoader(str(_TEMPLATES)), autoescape=True, keep_trailing_newline=True)

PAGE_CSS = """
:root { color-scheme: light dark; }
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; max-width: 60rem; margin: 2rem auto;
  padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
.meta { margin-top: 0; }
pre.text { white-space: pre-wrap; word-break: break-word; padding: .6rem .8rem; border-radius: 6px;
  background: rgba(127,127,127,.1); font-size: 13px; }
.controls { display: flex; gap: .8rem; align-items: center; margin-bottom: .6rem; }
.controls input[type=range] { flex: 1; }
table { border-collapse: collapse; font-size: 13px; }
th, td { text-align: left; padding: 2px 10px 2px 0; }
th { font-weight: 600; }
"""


def _player_script() -> str:
    # Read on each render (cheap) so an edited player never ships with a stale hash.
    return (_TEMPLATES / "replay.js").read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """CSP source for an inline script: 'sha256-<base64 digest of its UTF-8 text>'."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def _finite(value: Any) -> Any:
    # JSON.parse rejects NaN and Infinity, which json.dumps would happily write.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_for_script(value: Any) -> Markup:
    """Compact JSON that is safe inside a <script> element.

    `<`, `>` and `&` become \\u003c, \\u003e, \\u0026: JSON reads them back as the same
    characters, and the HTML parser never sees `</script>` or `<!--` inside the data.
    """
    text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _config_dict(config: GenerationConfig | dict[str, Any] | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return config.to_dict() if isinstance(config, GenerationConfig) else dict(config)


def trace_payload(result: Result, config: GenerationConfig | dict[str, Any] | None) -> dict[str, Any]:
    """What the player needs: the trace itself (its frames, which the page carries as data), the
    blocks' bounds, and `steps`: what the grid shows before the first forward and after each frame
    (replay_steps), so the player derives nothing."""
    cfg = _config_dict(config) or {}
    canvas_length = max((len(f.canvas) for f in result.frames), default=len(result.token_ids))
    gen_length = int(cfg.get("gen_length") or canvas_length or 1)
    block_size = block_size_of(result.mask_id, int(cfg.get("block_size") or gen_length), result.uniform_noise)
    payload = result.to_dict()
    blocks = block_bounds(gen_length, block_size, canvas_length if result.mask_id is not None else 0)
    payload.update(gen_length=gen_length, block_size=block_size, blocks=blocks, round_ms=round_ms(len(result.frames)),
                   steps=replay_steps(result, gen_length, block_size, blocks))
    return payload


def replay_steps(result: Result, gen_length: int, block_size: int,
                 bounds: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Step 0 (before the first forward) and one step per frame, each as the grid shows it
    (visualizer/cells.py step_view, with the run's own numbers on the last): the readout's text,
    the block outlined, how many blocks are drawn, and [position, *Cell.row()] for every cell
    that differs from the step before (all of them at step 0)."""
    ends = Ends.of_result(result, gen_length)
    frames, steps, before = result.frames, [], None
    for step in range(len(frames) + 1):
        last = step == len(frames) and step > 0
        view = step_view(frames[:step], result.pieces, result.mask_id, gen_length, block_size,
                         stats=result.stats if last else None, ends=ends, bounds=bounds, noise=result.uniform_noise)
        rows = [cell.row() for cell in view.cells]
        said = " · ".join(f"{name} {value}" for name, value in view.readout) or "before the first forward"
        steps.append({"readout": f"Step {step}/{len(frames)} · {said}", "active": view.active, "drawn": view.drawn,
                      "cells": [[p, *row] for p, row in enumerate(rows) if before is None or before[p] != row]})
        before = rows
    return steps


def round_ms(frames: int) -> int:
    """Milliseconds per round at 1x: ROUND_MS, or more so that the `frames` steps from round 0
    (all masked) to the end take at least MIN_REPLAY_S."""
    return max(ROUND_MS, -(-int(MIN_REPLAY_S * 1000) // max(1, frames)))


def tool_call_check(text: str, known: list[Any] | None) -> dict[str, Any] | None:
    """The tool call an answer makes and its mark for values found nowhere in `known` (the
    conversation and earlier tool responses); None without a call (or finish) or without `known`."""
    if known is None:
        return None
    parsed = parse_call(text)
    if isinstance(parsed, ParseError) or parsed.name == FINISH:
        return None
    call = parsed.to_dict()
    unseen = unseen_in_call(call, known)
    return {"text": f"{call['name']} {dumps(call['arguments'])}",
            "mark": flag_html(label(unseen), describe(unseen)) if unseen else None,
            "explanation": describe(unseen) if unseen else ""}


def standalone_replay_html(
    result: Result,
    title: str,
    prompt: str,
    model_name: str,
    config: GenerationConfig | dict[str, Any] | None = None,
    known: list[Any] | None = None,
) -> str:
    """One self-contained HTML file replaying `result` frame by frame (no network, no external files).
    With `known` (what the generation could copy from), a tool call's unseen values are marked."""
    script = _player_script()
    # Markup: built from constants and a base64 digest only, and its quotes must stay literal.
    csp = Markup(f"default-src 'none'; style-src 'unsafe-inline'; script-src {script_hash(script)}; "
           "base-uri 'none'; form-action 'none'")
    template = _ENV.get_template("replay.html.j2")
    return template.render(
        csp=csp, title=title, prompt=prompt, model_name=model_name, answer=result.text,
        numbers=summary_line(result.stats, "generation") if result.stats else "", config=_config_dict(config),
        legend=trace_legend(result.frames),
        css=Markup(GRID_CSS + MARK_CSS + PAGE_CSS), tool_call=tool_call_check(result.text, known),
        trace_json=json_for_script(trace_payload(result, config)),
        script=Markup(script),
    )
