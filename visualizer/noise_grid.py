"""The token grid of a uniform-noise canvas (DiffusionGemma): what one step did, from its Frame.noise.

There is no mask here. The canvas being denoised is drawn as the model will read it next: accepted
positions in full colour (underlined when accepted for the first time at this step, double outlined
with the old token struck through when an accepted token changed since the last step), and every
other position as the random token it was renoised to, faint, dotted and marked "~" (random, not a
mask and not a decision). Finished canvases show their text. The readout names the canvas, the
step, how many tokens were accepted, renoised and changed, the temperature and mean entropy, and on
a canvas's last step which rule ended it. What each cell shows is worked out in visualizer/cells.py
(with the masked grid's cells), and visualizer/grid.py writes it, escaped; this file holds the
canvas's styles, legend, step counter and the summaries the LaTeX export reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from engine.trace import Frame
from visualizer.pieces import END_GLYPH

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
