"""The live token grid: one HTML cell per generated position at one frame of a trace.

Pure functions from `engine.trace` frames to an HTML string: what each cell shows comes from
visualizer/cells.py (the one derivation, which the exported replay's player draws too), and this
file writes it as HTML. Every piece of model text goes through `markupsafe.escape`: `gr.HTML` does
not sanitise, so an `<img onerror>` token would run.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from engine.metrics import Ends
from engine.trace import Frame, Stats
from visualizer.cells import Cell, StepView, has_rewrites, step_view
from visualizer.noise_grid import NOISE_CSS, noise_legend
from visualizer.pieces import END_GLYPH, MASK_GLYPH, REMASK_GLYPH

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


def cell_html(cell: Cell) -> Markup:
    """One cell: its classes, title and aria-label, its confidence as --dp-c (below 1 only), the old
    piece struck through before a rewritten one, and a line break after a piece with a newline."""
    attributes = Markup(' tabindex="0"') if cell.focus else Markup("")
    attributes += Markup(' title="{}"').format(cell.title)
    if cell.label:
        attributes += Markup(' aria-label="{}"').format(cell.label)
    if cell.level < 1.0:
        attributes += Markup(' style="--dp-c:{}"').format(cell.level)
    old = Markup('<s class="dp-old" aria-hidden="true">{}</s>').format(cell.old) if cell.old else Markup("")
    brk = Markup('<span class="dp-break"></span>') if cell.breaks else Markup("")
    return Markup('<span class="{}"{}>{}{}</span>{}').format(cell.classes, attributes, old, cell.text, brk)


def readout_html(view: StepView, scope: str = "") -> Markup:
    """The numbers above the grid (each item's label and value), or "Waiting for the first forward…"."""
    scope_item = Markup('<span class="dp-scope"><b>{}</b>:</span>').format(scope) if scope else Markup("")
    if view.frame is None:
        return Markup('<div class="dp-readout">{}<span>Waiting for the first forward…</span></div>').format(scope_item)
    items = Markup("").join(
        Markup('<span class="dp-stop">{}: <b>{}</b></span>' if name == "stop" else "<span>{}: <b>{}</b></span>")
        .format(name, value) for name, value in view.readout)
    return Markup('<div class="dp-readout">{}{}</div>').format(scope_item, items)


def view_html(view: StepView, legend: Markup | None = None, scope: str = "") -> str:
    """A step's view as the grid's HTML: the readout, the drawn blocks (the active one outlined)
    and the legend."""
    if view.noise and view.frame is None:
        return str(Markup('<div class="dp-grid">{}</div>').format(readout_html(view, scope)))
    drawn, at = [], 0
    for b, (start, stop) in enumerate(view.bounds):
        cells = Markup("").join(cell_html(cell) for cell in view.cells[at: at + stop - start])
        at += stop - start
        if b < view.drawn:
            classes = "dp-block dp-active" if b == view.active else "dp-block"
            drawn.append(Markup('<div class="{}" data-block="{}">{}</div>').format(classes, b, cells))
    kind = "dp-grid dp-noise-grid" if view.noise else "dp-grid"
    return str(Markup('<div class="{}">{}<div class="dp-cells">{}</div>{}</div>').format(
        kind, readout_html(view, scope), Markup("").join(drawn), legend or Markup("")))


def trace_legend(frames: Sequence[Frame]) -> Markup:
    """The legend a trace's grid shows: the noise canvas's, or the masked grid's with the entries
    its frames need (pre-filled, edited and remasked)."""
    if any(f.noise is not None for f in frames):
        return noise_legend()
    return legend_html(any(f.prefilled for f in frames), has_rewrites(frames))


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
    What each cell shows is visualizer/cells.py `step_view`'s: answer tokens decided in the shown
    frame are new, earlier ones plain (paler when the model was less sure), undecided ones a mask
    glyph, a scaffold's writes pre-filled, positions from the first EOS on "after the end"; a
    uniform-noise trace draws its canvases (visualizer/noise_grid.py). Pass `stats` once the run
    has finished to show its own numbers, and `scope` to say what they cover
    (engine.metrics.scope_label).
    """
    if isinstance(frames, Frame):
        frames = [frames]
    view = step_view(frames, pieces, mask_id, gen_length, block_size, upto, stats, ends)
    return view_html(view, trace_legend(frames) if legend else None, scope)
