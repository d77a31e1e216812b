"""The live token grid: one HTML cell per generated position at one frame of a trace.

Pure functions from `engine.trace` frames to an HTML string. Every piece of model text goes
through `markupsafe.escape`: `gr.HTML` does not sanitise, so an `<img onerror>` token would run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from engine.metrics import LABELS, Ends, numbers
from engine.trace import Frame, Stats
from visualizer.noise_grid import NOISE_CSS, render_noise_grid
from visualizer.pieces import (  # noqa: F401  (the glyphs are read from here too)
    END_GLYPH,
    MASK_GLYPH,
    REMASK_GLYPH,
    VISIBLE_WHITESPACE,
    piece_of,
    visible_piece,
)

# Text keeps full colour in every state (contrast >= 4.5:1); confidence fades the background only
# (--dp-c in [0, 1]), and "new this round" is marked by an underline and an outline as well as colour.
# Tokens a schema scaffold placed (the model did not choose them) are grey, not blue, with a dotted
# outline and a hatched background: a shape as well as a colour says "pre-filled".
GRID_CSS = """
.dp-grid { --dp-mask: rgba(127,127,127,.16); --dp-new: rgba(255,170,0,.42); --dp-done-rgb: 60,130,240;
  --dp-active: rgba(37,99,235,.9); --dp-end: rgba(127,127,127,.08); --dp-mark: #92400e;
  --dp-pre: rgba(100,116,139,.14); --dp-pre-hatch: rgba(100,116,139,.22); --dp-pre-line: #475569;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  color: inherit; line-height: 1.25; }
@media (prefers-color-scheme: dark) { .dp-grid { --dp-new: rgba(255,190,60,.36); --dp-done-rgb: 110,160,255;
  --dp-active: rgba(130,175,255,.95); --dp-mark: #fcd34d; --dp-pre: rgba(148,163,184,.14);
  --dp-pre-hatch: rgba(148,163,184,.2); --dp-pre-line: #cbd5e1; } }
.dark .dp-grid { --dp-new: rgba(255,190,60,.36); --dp-done-rgb: 110,160,255; --dp-active: rgba(130,175,255,.95);
  --dp-mark: #fcd34d; --dp-pre: rgba(148,163,184,.14); --dp-pre-hatch: rgba(148,163,184,.2);
  --dp-pre-line: #cbd5e1; }
.dp-readout { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0 0 .5rem; font-size: 12px; }
.dp-readout b { font-weight: 600; }
.dp-cells { display: flex; flex-wrap: wrap; gap: 4px; align-items: flex-start; }
.dp-block { display: flex; flex-wrap: wrap; gap: 2px; padding: 2px; border: 1px dashed transparent;
  border-radius: 4px; }
.dp-block.dp-active { border: 2px solid var(--dp-active); }
.dp-cell, .dp-key { display: inline-block; min-width: 1.2em; padding: 1px 3px; border-radius: 3px; text-align: center;
  white-space: pre; border: 1px solid transparent; }
.dp-mask, .dp-key-mask { background: var(--dp-mask); }
.dp-new, .dp-key-new { background: var(--dp-new); font-weight: 700; text-decoration: underline 2px;
  text-underline-offset: 2px; border: 1px dashed var(--dp-mark); }
.dp-done, .dp-key-done { background: rgba(var(--dp-done-rgb), calc(.06 + .22 * var(--dp-c, 1))); }
.dp-filled { background: var(--dp-end); }
.dp-pre, .dp-key-pre { background-color: var(--dp-pre); border: 1px dotted var(--dp-pre-line);
  background-image: repeating-linear-gradient(135deg, transparent 0 4px, var(--dp-pre-hatch) 4px 5px); }
.dp-end, .dp-key-end { background: var(--dp-end); font-style: italic; }
.dp-edited, .dp-key-edited { border: 2px double var(--dp-mark); }
.dp-edited .dp-old, .dp-key-edited .dp-old { text-decoration: line-through 1.5px; opacity: .75; margin-right: 2px;
  font-weight: 400; }
.dp-remasked, .dp-key-remasked { background: var(--dp-mask); border: 1px dashed var(--dp-mark); }
.dp-break { flex-basis: 100%; height: 0; }
.dp-legend { font-size: 12px; margin: .45rem 0 0; display: flex; flex-wrap: wrap; gap: .2rem .8rem; }
""" + NOISE_CSS


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


def last_edits(frames: Sequence[Frame]) -> dict[int, tuple[int, int, int]]:
    """position -> (old token, new token, NFE) of the last rewrite of it in `frames` (Frame.edits)."""
    edited: dict[int, tuple[int, int, int]] = {}
    for frame in frames:
        for position, old, new in frame.edits:
            edited[position] = (old, new, frame.nfe)
    return edited


def confidence_level(confidence: float | None) -> float:
    """Confidence at commit clamped to [0, 1] (1 when unknown): how strong a cell's background is."""
    if confidence is None or not math.isfinite(confidence):
        return 1.0
    return round(min(max(float(confidence), 0.0), 1.0), 3)


def _cell(text: str, classes: str, title: str, level: float | None = None) -> Markup:
    style = f' style="--dp-c:{level}"' if level is not None and level < 1.0 else ""
    inner = escape(visible_piece(text))
    return Markup('<span class="{}" title="{}"{}>{}</span>').format(classes, title, Markup(style), inner)


_LEGEND_ITEMS = Markup(
    '<span><span class="dp-key dp-key-new">new</span> decided by this forward (underlined, '
    'outlined)</span><span><span class="dp-key dp-key-done">earlier</span> decided before (paler = less sure)'
    '</span><span><span class="dp-key dp-key-mask">{}</span> still masked</span><span><span class="dp-key dp-key-end">'
    '{}</span> after the answer\'s end (EOS), not counted</span>'
).format(MASK_GLYPH, END_GLYPH)
_LEGEND_EDITS = Markup(
    '<span><span class="dp-key dp-key-edited"><s class="dp-old">a</s>b</span> edited: a decided token rewritten '
    '(old one struck through, double outline)</span><span><span class="dp-key dp-key-remasked">{}</span> remasked: '
    'put back to be decoded again</span>').format(REMASK_GLYPH)
_LEGEND_PRE = Markup('<span><span class="dp-key dp-key-pre">{"</span> pre-filled by the schema (dotted, '
                     'hatched): placed, not decided by the model</span>')


def legend_html(prefilled: bool = False, edited: bool = False) -> Markup:
    """The key to the cell styles; the pre-filled entry only for a trace a scaffold wrote into, the
    edited and remasked ones only for a trace that rewrote tokens."""
    return Markup('<div class="dp-legend">{}{}{}<span>outlined box: active block</span></div>').format(
        _LEGEND_ITEMS, _LEGEND_EDITS if edited else Markup(""), _LEGEND_PRE if prefilled else Markup(""))


def _edited_cell(position: int, old: str, new: str, classes: str, title: str, level: float) -> Markup:
    """A rewritten token: the old piece struck through before the new one and a double outline
    (not colour alone); title and aria-label say "edited: old -> new", and the cell
    takes focus so a keyboard reaches what the mouse hovers."""
    style = f' style="--dp-c:{level}"' if level < 1.0 else ""
    return Markup('<span class="{} dp-edited" tabindex="0" title="{}" aria-label="{}"{}>'
                  '<s class="dp-old" aria-hidden="true">{}</s>{}</span>').format(
        classes, title, f"#{position}: {new!r}, edited: {old!r} -> {new!r}", Markup(style),
        visible_piece(old), visible_piece(new))


def has_rewrites(frames: Sequence[Frame]) -> bool:
    """Whether a trace rewrote or remasked any token (its legend then explains those cells)."""
    return any(f.edits or f.remasked for f in frames)


def prefilled_positions(frames: Sequence[Frame]) -> dict[int, int]:
    """position -> NFE of the frame whose scaffold placed it, over `frames` (engine/scaffold)."""
    placed: dict[int, int] = {}
    for frame in frames:
        for position in frame.prefilled:
            placed.setdefault(position, frame.nfe)
    return placed


def _readout(frame: Frame | None, num_blocks: int, shown: Sequence[Frame], ends: Ends, stats: Stats | None,
             prefilled: int, scope: str, autoregressive: bool, gen_length: int) -> Markup:
    scope_item = Markup('<span class="dp-scope"><b>{}</b>:</span>').format(scope) if scope else Markup("")
    if frame is None:
        return Markup('<div class="dp-readout">{}<span>Waiting for the first forward…</span></div>').format(
            scope_item)
    # The numbers of the frames shown so far, or the run's own once it is over (engine/metrics.py).
    now = stats if stats is not None else numbers(shown, ends, "running")
    # An AR run has no blocks: each forward writes the next token.
    where = [("token", f"{len(frame.canvas)}/{gen_length}")] if autoregressive else [
        ("round", str(frame.round + 1)), ("block", f"{frame.block + 1}/{num_blocks}")]
    items = [
        *where,
        (LABELS["nfe"], str(now.nfe)),
        (LABELS["new_tokens"], str(now.new_tokens)),
        (LABELS["tokens_per_forward"], f"{now.tokens_per_forward:.2f}"),
        (LABELS["seconds"], f"{now.seconds:.3f} s"),
        (LABELS["tokens_per_s"], f"{now.tokens_per_s:.1f}"),
    ]
    if prefilled:
        items.append(("pre-filled by the schema", str(prefilled)))
    parts = [Markup("<span>{}: <b>{}</b></span>").format(name, value) for name, value in items]
    return Markup('<div class="dp-readout">{}{}</div>').format(scope_item, Markup("").join(parts))


def block_bounds(gen_length: int, block_size: int, canvas_length: int = 0) -> list[tuple[int, int]]:
    """The blocks' (start, stop) positions of a diffusion canvas, up to gen_length. Aligned blocks
    (engine.generate.block_slices) shorten the first block to f = size - t, t = P mod size, and
    make the canvas gen_length + (f mod size) positions long (SDAR, LLaDA2), or gen_length - t
    (Fast-dLLM v2, tail_in_length): a canvas longer by e (0 < e < size) has a first block of e,
    one shorter by t (0 < t < size) a first block of size - t. Any other length (unaligned, or
    0 for an autoregressive span, which grows) means even blocks from 0."""
    size = max(1, block_size)
    extra = canvas_length - gen_length if canvas_length else 0
    first = extra if 0 < extra < size else size + extra if -size < extra < 0 else size
    end = min(gen_length, canvas_length) if canvas_length else gen_length
    starts = [0, *range(first, end, size)]
    return [(start, min(stop, end)) for start, stop in zip(starts, [*starts[1:], max(end, 1)])]


def render_grid(
    frames: Sequence[Frame] | Frame,
    pieces: dict[int, str],
    mask_id: int | None,
    gen_length: int,
    block_size: int,
    upto: int | None = None,
    stats: Stats | None = None,
    ends: Ends | None = None,
    legend: bool = True,
    scope: str = "",
) -> str:
    """HTML grid of the generated span as it stood after frame `upto` (default: the last one).

    `frames` are the frames so far (a live run passes what it has); a single Frame also works,
    but then earlier commits have no round/confidence record and show as plain filled cells.
    Answer tokens decided in the shown frame are marked new, earlier ones are plain (paler when
    the model was less sure), undecided ones show a mask glyph; the active block is outlined.
    Positions a schema scaffold placed (Frame.prefilled) are drawn as pre-filled, never as new.
    `ends` names the EOS / pad ids: positions from the first EOS on, and pad, are drawn as
    "after the end", never as new and never counted (engine/metrics.py). Pass `stats` once the
    run has finished to show its own numbers, and `scope` to say what they cover
    (engine.metrics.scope_label). Blocks are drawn where the engine decoded them (block_bounds:
    aligned blocks make the first one shorter).
    """
    if isinstance(frames, Frame):
        frames = [frames]
    if any(f.noise is not None for f in frames):                 # a uniform-noise canvas: no masks to draw
        return render_noise_grid(frames, pieces, gen_length, block_size, upto, stats, ends, legend, scope)
    ends = ends or Ends(frozenset(), None, mask_id)
    block_size = max(1, block_size)
    if frames:
        index = len(frames) - 1 if upto is None else min(max(upto, -len(frames)), len(frames) - 1)
        if index < 0:
            index += len(frames)
        frame: Frame | None = frames[index]
        shown = list(frames[: index + 1])
    else:
        frame, shown = None, []
    rounds, nfes, confidences = decision_matrix(shown, gen_length)
    last_tokens = {p: t for f in shown for p, t, _c in f.committed}
    canvas = frame.canvas if frame is not None else []
    bounds = block_bounds(gen_length, block_size, len(canvas) if mask_id is not None else 0)
    num_blocks = len(bounds)
    answer = set(ends.answer_positions(canvas))
    new_now = {p for p, _t, _c in frame.committed} if frame is not None else set()
    placed = prefilled_positions(shown)
    edited = last_edits(shown)

    drawn: list[Markup] = []
    for b, (start, stop) in enumerate(bounds):
        cells: list[Markup] = []
        for position in range(start, stop):
            token = canvas[position] if position < len(canvas) else None
            if token is None or (mask_id is not None and token == mask_id):
                if nfes[position] is not None:                                 # decided once, now remasked
                    was = piece_of(pieces, last_tokens[position])
                    cells.append(Markup('<span class="dp-cell dp-mask dp-remasked" title="{}" aria-label="{}">'
                                        '{}</span>').format(f"#{position}: remasked (was {was!r}), to be decoded again",
                                                            f"#{position}: remasked, was {was!r}", REMASK_GLYPH))
                else:
                    cells.append(Markup('<span class="dp-cell dp-mask" title="#{}: undecided">{}</span>').format(
                        position, MASK_GLYPH))
                continue
            text = piece_of(pieces, token)
            if position not in answer:
                cells.append(_cell(END_GLYPH, "dp-cell dp-end", f"#{position}: {text!r} · after the answer's end"))
                continue
            if position in placed:
                # Written by the schema scaffold, never re-masked: not a decision of the model.
                cells.append(_cell(text, "dp-cell dp-pre",
                                   f"#{position}: {text!r} · pre-filled by the schema at NFE {placed[position]}"))
            elif nfes[position] is None:
                # On the canvas without a commit record (a single frame passed alone).
                cells.append(_cell(text, "dp-cell dp-filled", f"#{position}: {text!r}"))
            else:
                kind = "dp-new" if position in new_now else "dp-done"
                title = (f"#{position}: {text!r} · round {rounds[position] + 1} · NFE {nfes[position]}"
                         f" · confidence {float(confidences[position]):.2f}"
                         + (" · new this round" if kind == "dp-new" else ""))
                old, new, at = edited.get(position, (None, None, None))
                if old is not None and new == token:
                    was = piece_of(pieces, old)
                    cells.append(_edited_cell(position, was, text, f"dp-cell {kind}",
                                              f"{title} · edited: {was!r} -> {text!r} at NFE {at}",
                                              confidence_level(confidences[position])))
                else:
                    cells.append(_cell(text, f"dp-cell {kind}", title, confidence_level(confidences[position])))
            if "\n" in text:
                cells.append(Markup('<span class="dp-break"></span>'))
        active = frame is not None and b == frame.block
        classes = "dp-block dp-active" if active else "dp-block"
        drawn.append(Markup('<div class="{}" data-block="{}">{}</div>').format(classes, b, Markup("").join(cells)))

    readout = _readout(frame, num_blocks, shown, ends, stats, len(answer.intersection(placed)), scope,
                       mask_id is None, gen_length)
    scaffolded = any(f.prefilled for f in frames)
    return str(Markup('<div class="dp-grid">{}<div class="dp-cells">{}</div>{}</div>').format(
        readout, Markup("").join(drawn), legend_html(scaffolded, has_rewrites(frames)) if legend else Markup("")))
