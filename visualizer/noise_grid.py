"""The token grid of a uniform-noise canvas (DiffusionGemma): what one step did, from its Frame.noise.

There is no mask here. The canvas being denoised is drawn as the model will read it next: accepted
positions in full colour (underlined when accepted for the first time at this step, double outlined
with the old token struck through when an accepted token changed since the last step), and every
other position as the random token it was renoised to, faint, dotted and marked "~" (random, not a
mask and not a decision). Finished canvases show their text. The readout names the canvas, the
step, how many tokens were accepted, renoised and changed, the temperature and mean entropy, and on
a canvas's last step which rule ended it. `visualizer/grid.py` hands every trace whose frames carry
Frame.noise to `render_noise_grid`; model text is escaped before it enters the HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from engine.metrics import LABELS, Ends, numbers
from engine.trace import Frame, Stats
from visualizer.pieces import END_GLYPH, piece_of, visible_piece

NOISE_GLYPH = "~"
# How each stop rule reads in the step counter (engine/noise_rules.py STOP_RULES).
STOP_WORDS = {"max_steps": "ended by the step cap (max denoising steps)",
              "stable_confident": "ended early: draft stable and mean entropy below the confidence threshold"}

NOISE_CSS = """
.dp-noise, .dp-key-noise { opacity: .5; font-style: italic; border: 1px dotted currentColor;
  background: repeating-linear-gradient(45deg, transparent 0 3px, rgba(127,127,127,.14) 3px 5px); }
.dp-noise::before, .dp-key-noise::before { content: "~"; font-size: 9px; vertical-align: super; margin-right: 1px; }
.dp-accepted, .dp-key-accepted { background: rgba(var(--dp-done-rgb), .22); }
.dp-accepted-new, .dp-key-accepted-new { text-decoration: underline 2px; text-underline-offset: 2px;
  font-weight: 700; }
.dp-changed, .dp-key-changed { border: 2px double var(--dp-mark); }
.dp-changed .dp-old, .dp-key-changed .dp-old { text-decoration: line-through 1.5px; opacity: .75; margin-right: 2px;
  font-weight: 400; }
.dp-stop { font-weight: 600; }
"""


def _piece(pieces: dict[int, str], token: int) -> str:
    return piece_of(pieces, token)


def _cell(text: str, classes: str, title: str, old: str | None = None) -> Markup:
    if old is not None:
        return Markup('<span class="{}" tabindex="0" title="{}" aria-label="{}"><s class="dp-old" aria-hidden="true">'
                      '{}</s>{}</span>').format(classes, title, title, visible_piece(old), visible_piece(text))
    return Markup('<span class="{}" title="{}">{}</span>').format(classes, title, visible_piece(text))


def step_counter(frame: Frame, max_steps: int | None, canvases: int) -> list[tuple[str, str]]:
    """(label, value) of where the run is and what this step did: canvas, step, accepted,
    renoised, changed, temperature, mean entropy and, on a canvas's last step, the stop rule."""
    step = frame.noise
    of = f"/{max_steps}" if max_steps else ""
    items = [("canvas", f"{frame.block + 1}/{canvases}"), ("step", f"{frame.round + 1}{of}"),
             ("accepted", f"{len(step.accepted)}/{len(step.draft)}"), ("renoised", str(len(step.renoised))),
             ("changed", str(len(step.changed))), ("temperature", f"{step.temperature:.3f}"),
             ("mean entropy", f"{step.mean_entropy:.3f} nats")]
    if step.stop_rule:
        items.append(("stop", STOP_WORDS.get(step.stop_rule, step.stop_rule)))
    return items


def settled_steps(frames: Sequence[Frame], length: int) -> list[int | None]:
    """For each position of a uniform-noise run: the step (inside its canvas, from 0) from which
    its draft stayed the token the canvas ended with; None for a position no step drafted."""
    steps = [f for f in frames if f.noise is not None]
    final = {f.block: f.noise.draft for f in steps}                  # the last step of each canvas wins
    settled: list[int | None] = [None] * length
    for frame in steps:
        for i, token in enumerate(frame.noise.draft):
            position = frame.noise.start + i
            if position >= length:
                continue
            if token != final[frame.block][i]:
                settled[position] = None
            elif settled[position] is None:
                settled[position] = frame.round
    return settled


def stop_rules(frames: Sequence[Frame]) -> list[str]:
    """The rule that ended each canvas, in order (engine/noise_rules.py STOP_RULES)."""
    return [f.noise.stop_rule for f in frames if f.noise is not None and f.noise.stop_rule]


def noise_legend() -> Markup:
    return Markup(
        '<div class="dp-legend"><span><span class="dp-key dp-key-noise">x</span> random: renoised this step, '
        'not accepted (faint, dotted, ~)</span><span><span class="dp-key dp-key-accepted">a</span> accepted by the '
        'entropy bound</span><span><span class="dp-key dp-key-accepted dp-key-accepted-new">a</span> accepted for '
        'the first time</span><span><span class="dp-key dp-key-accepted dp-key-changed"><s class="dp-old">a</s>b'
        '</span> accepted again with another token</span><span><span class="dp-key dp-key-end">{}</span> after '
        'the answer\'s end (EOS)</span><span>outlined box: the canvas being denoised</span></div>').format(END_GLYPH)


def render_noise_grid(frames: Sequence[Frame], pieces: dict[int, str], gen_length: int, block_size: int,
                      upto: int | None = None, stats: Stats | None = None, ends: Ends | None = None,
                      legend: bool = True, scope: str = "", max_steps: int | None = None) -> str:
    """HTML of a uniform-noise run as it stood after frame `upto` (default: the last)."""
    ends = ends or Ends(frozenset(), None, None)
    size = max(1, block_size)
    canvases = max(1, -(-gen_length // size))
    index = len(frames) - 1 if upto is None else min(max(upto, -len(frames)), len(frames) - 1)
    index = index + len(frames) if index < 0 else index
    frame = frames[index] if frames else None
    shown = list(frames[: index + 1])
    scope_item = Markup('<span class="dp-scope"><b>{}</b>:</span>').format(scope) if scope else Markup("")
    if frame is None or frame.noise is None:
        return str(Markup('<div class="dp-grid"><div class="dp-readout">{}<span>Waiting for the first forward…'
                          '</span></div></div>').format(scope_item))
    step = frame.noise
    before = frames[index - 1].noise if index > 0 and frames[index - 1].block == frame.block else None
    accepted_before = ({p: before.noisy[p - before.start] for p in before.accepted} if before is not None else {})
    accepted = set(step.accepted)
    changed = set(step.changed)
    answer = set(ends.answer_positions(frame.canvas))
    blocks: list[Markup] = []
    for b in range(frame.block + 1):
        cells: list[Markup] = []
        for position in range(b * size, min((b + 1) * size, gen_length)):
            if b < frame.block or step.stop_rule:                      # finished: the canvas's text
                token = frame.canvas[position]
                text = _piece(pieces, token)
                if position not in answer:
                    cells.append(_cell(END_GLYPH, "dp-cell dp-end", f"#{position}: {text!r} · after the answer's end"))
                else:
                    new = b == frame.block
                    title = f"#{position}: {text!r} · the canvas's text" + (" (decided now)" if new else "")
                    cells.append(_cell(text, "dp-cell dp-new" if new else "dp-cell dp-done", title))
                continue
            token = step.noisy[position - step.start]
            text = _piece(pieces, token)
            draft = _piece(pieces, step.draft[position - step.start])
            if position in accepted:
                classes = "dp-cell dp-accepted"
                old = None
                if position in changed:
                    classes += " dp-changed"
                    old = _piece(pieces, accepted_before[position])
                elif position not in accepted_before:
                    classes += " dp-accepted-new"
                title = (f"#{position}: {text!r} · accepted" + (f", was {old!r}" if old is not None else "")
                         + f" · draft {draft!r}")
                cells.append(_cell(text, classes, title, old))
            else:
                cells.append(_cell(text, "dp-cell dp-noise",
                                   f"#{position}: random token {text!r} (renoised, not accepted) · draft {draft!r}"))
        classes = "dp-block dp-active" if b == frame.block else "dp-block"
        blocks.append(Markup('<div class="{}" data-block="{}">{}</div>').format(classes, b, Markup("").join(cells)))
    now = stats if stats is not None else numbers(shown, ends, "running")
    items = step_counter(frame, max_steps, canvases) + [
        (LABELS["nfe"], str(now.nfe)), (LABELS["new_tokens"], str(now.new_tokens)),
        (LABELS["tokens_per_forward"], f"{now.tokens_per_forward:.2f}"),
        (LABELS["seconds"], f"{now.seconds:.3f} s")]
    if stats is not None and stats.upstream_tokens_per_forward is not None:
        items.append((LABELS["upstream_tokens_per_forward"], f"{stats.upstream_tokens_per_forward:.2f}"))
    readout = Markup('<div class="dp-readout">{}{}</div>').format(scope_item, Markup("").join(
        Markup('<span class="{}">{}: <b>{}</b></span>').format("dp-stop" if name == "stop" else "", name, value)
        for name, value in items))
    return str(Markup('<div class="dp-grid dp-noise-grid">{}<div class="dp-cells">{}</div>{}</div>').format(
        readout, Markup("").join(blocks), noise_legend() if legend else Markup("")))
