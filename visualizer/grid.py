"""The live token grid: one HTML cell per generated position at one frame of a trace.

Pure functions from `engine.trace` frames to an HTML string. Every piece of model text goes
through `markupsafe.escape`: `gr.HTML` does not sanitise, so an `<img onerror>` token would run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from engine.trace import Frame, Stats

# Whitespace is invisible in a cell, so a token that is only " " or "\n" would look empty.
# Each is mapped to a visible glyph; a newline also breaks the grid's line so the grid reads
# like the text it spells.
VISIBLE_WHITESPACE = {" ": "\u2423", "\n": "\u23ce", "\t": "\u21e5", "\r": "\u240d"}
MASK_GLYPH = "\u00b7"

GRID_CSS = """
.dp-grid { --dp-fg: currentColor; --dp-mask: rgba(127,127,127,.18); --dp-new: rgba(255,170,0,.45);
  --dp-done: rgba(60,130,240,.16); --dp-active: rgba(60,130,240,.9); --dp-filled: rgba(127,127,127,.10);
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  color: var(--dp-fg); line-height: 1.25; }
@media (prefers-color-scheme: dark) { .dp-grid { --dp-new: rgba(255,190,60,.40); --dp-done: rgba(110,160,255,.22);
  --dp-active: rgba(130,175,255,.95); } }
.dark .dp-grid { --dp-new: rgba(255,190,60,.40); --dp-done: rgba(110,160,255,.22); --dp-active: rgba(130,175,255,.95); }
.dp-readout { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0 0 .5rem; font-size: 12px; opacity: .85; }
.dp-readout b { font-weight: 600; }
.dp-cells { display: flex; flex-wrap: wrap; gap: 4px; align-items: flex-start; }
.dp-block { display: flex; flex-wrap: wrap; gap: 2px; padding: 2px; border: 1px dashed transparent;
  border-radius: 4px; }
.dp-block.dp-active { border: 1.5px solid var(--dp-active); }
.dp-cell { display: inline-block; min-width: 1.2em; padding: 1px 3px; border-radius: 3px; text-align: center;
  white-space: pre; }
.dp-cell.dp-mask { background: var(--dp-mask); opacity: .7; }
.dp-cell.dp-new { background: var(--dp-new); font-weight: 600; }
.dp-cell.dp-done { background: var(--dp-done); }
.dp-cell.dp-filled { background: var(--dp-filled); }
.dp-ws { opacity: .55; }
.dp-break { flex-basis: 100%; height: 0; }
"""


def visible_piece(text: str) -> str:
    """Token text with whitespace replaced by visible glyphs; an empty piece shows as an empty-set sign."""
    if text == "":
        return "\u2205"
    return "".join(VISIBLE_WHITESPACE.get(ch, ch) for ch in text)


def decision_matrix(
    frames: Sequence[Frame], gen_length: int
) -> tuple[list[int | None], list[int | None], list[float | None]]:
    """When each position was decided: (round inside its block, NFE, confidence at commit).

    None where no frame committed the position. A position committed twice keeps the last
    commit, because that is the token on the final canvas.
    """
    round_of_position: list[int | None] = [None] * gen_length
    nfe_of_position: list[int | None] = [None] * gen_length
    confidence: list[float | None] = [None] * gen_length
    for frame in frames:
        for position, _token, conf in frame.committed:
            if 0 <= position < gen_length:
                round_of_position[position] = frame.round
                nfe_of_position[position] = frame.nfe
                confidence[position] = conf
    return round_of_position, nfe_of_position, confidence


def _opacity(confidence: float | None) -> float:
    # Low-confidence commits fade but never vanish: 0.35 at c = 0, 1.0 at c = 1.
    if confidence is None or not math.isfinite(confidence):
        return 1.0
    return round(0.35 + 0.65 * min(max(float(confidence), 0.0), 1.0), 3)


def _cell(text: str, classes: str, title: str, opacity: float | None = None) -> Markup:
    style = f' style="opacity:{opacity}"' if opacity is not None and opacity < 1.0 else ""
    inner = escape(visible_piece(text))
    if text.strip() == "" and text != "":
        inner = Markup('<span class="dp-ws">{}</span>').format(inner)
    return Markup('<span class="{}" title="{}"{}>{}</span>').format(classes, title, Markup(style), inner)


def _readout(frame: Frame | None, num_blocks: int, decided: int, gen_length: int, stats: Stats | None) -> Markup:
    if frame is None:
        return Markup('<div class="dp-readout"><span>Waiting for the first forward…</span></div>')
    # finished: answer tokens only, as the status line counts them (not the EOS fill after an end)
    per_forward = stats.tokens_per_forward if stats is not None else (decided / frame.nfe if frame.nfe else None)
    items = [
        ("Round", str(frame.round + 1)),
        ("Block", f"{frame.block + 1}/{num_blocks}"),
        ("NFE", str(frame.nfe)),
        ("Decided", f"{decided}/{gen_length}"),
        ("Tokens per forward", "–" if per_forward is None else f"{per_forward:.2f}"),
    ]
    if stats is not None:
        items.append(("Tokens/s", f"{stats.tokens_per_s:.1f}"))
    elif frame.elapsed_s > 0:
        items.append(("Tokens/s", f"{decided / frame.elapsed_s:.1f}"))
    parts = [Markup("<span>{}: <b>{}</b></span>").format(name, value) for name, value in items]
    return Markup('<div class="dp-readout">{}</div>').format(Markup("").join(parts))


def render_grid(
    frames: Sequence[Frame] | Frame,
    pieces: dict[int, str],
    mask_id: int | None,
    gen_length: int,
    block_size: int,
    upto: int | None = None,
    stats: Stats | None = None,
) -> str:
    """HTML grid of the generated span as it stood after frame `upto` (default: the last one).

    `frames` are the frames so far (a live run passes what it has); a single Frame also works,
    but then earlier commits have no round/confidence record and show as plain filled cells. Cells decided in the shown
    frame are highlighted, earlier ones are plain, undecided ones show a mask glyph; opacity
    follows the confidence at commit time; the active block is outlined. Pass `stats` once
    the run has finished to show its measured tokens/s instead of the live estimate.
    """
    if isinstance(frames, Frame):
        frames = [frames]
    block_size = max(1, block_size)
    num_blocks = max(1, -(-gen_length // block_size))
    if frames:
        index = len(frames) - 1 if upto is None else min(max(upto, -len(frames)), len(frames) - 1)
        if index < 0:
            index += len(frames)
        frame: Frame | None = frames[index]
        shown = frames[: index + 1]
    else:
        frame, shown = None, []
    rounds, nfes, confidences = decision_matrix(shown, gen_length)
    canvas = frame.canvas if frame is not None else []
    new_now = {p for p, _t, _c in frame.committed} if frame is not None else set()

    blocks: list[Markup] = []
    decided = 0
    for b in range(num_blocks):
        cells: list[Markup] = []
        for position in range(b * block_size, min((b + 1) * block_size, gen_length)):
            token = canvas[position] if position < len(canvas) else None
            if token is None or (mask_id is not None and token == mask_id):
                cells.append(Markup('<span class="dp-cell dp-mask" title="#{}: undecided">{}</span>').format(
                    position, MASK_GLYPH))
                continue
            decided += 1
            text = pieces.get(token, f"\u27e8{token}\u27e9")
            if nfes[position] is None:
                # On the canvas without a commit record (e.g. EOS fill after an early stop).
                title = f"#{position}: {text!r}"
                cells.append(_cell(text, "dp-cell dp-filled", title))
            else:
                kind = "dp-new" if position in new_now else "dp-done"
                title = (f"#{position}: {text!r} · round {rounds[position] + 1} · NFE {nfes[position]}"
                         f" · confidence {float(confidences[position]):.2f}")
                cells.append(_cell(text, f"dp-cell {kind}", title, _opacity(confidences[position])))
            if "\n" in text:
                cells.append(Markup('<span class="dp-break"></span>'))
        active = frame is not None and b == frame.block
        classes = "dp-block dp-active" if active else "dp-block"
        blocks.append(Markup('<div class="{}" data-block="{}">{}</div>').format(classes, b, Markup("").join(cells)))

    readout = _readout(frame, num_blocks, decided, gen_length, stats)
    return str(Markup('<div class="dp-grid">{}<div class="dp-cells">{}</div></div>').format(
        readout, Markup("").join(blocks)))
