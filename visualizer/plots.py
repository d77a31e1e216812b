"""Plotly figures of a trace: when each token was decided, commits per forward, and a race.

Hover text carries model text, and plotly renders a subset of HTML in hover labels, so every
piece is escaped before it goes in.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from markupsafe import escape

from engine.metrics import LABELS, Ends, answer_commits, edit_counts
from engine.trace import Frame

from .cells import decision_matrix
from .pieces import piece_of, visible_piece


def integer_axis(largest: float, start: int = 0) -> dict:
    """Axis settings with whole-number ticks only (forwards, rounds, tokens): at most ~10 ticks."""
    span = max(1, int(largest) - start)
    return {"tickmode": "linear", "tick0": start, "dtick": max(1, -(-span // 10)), "tickformat": "d"}


# Transparent paper and plot area: a figure sits on the page's own background, white or dark (the
# page's CSS turns its text light in dark mode); grey lines read on both.
THEME = {"paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)"}
LINES = {"gridcolor": "rgba(127,127,127,0.25)", "zerolinecolor": "rgba(127,127,127,0.4)"}
# A figure's height; where its head starts (below the label Gradio lays over the figure's top
# left corner, about 30 px); the title's line and the scope's line under it; one legend row.
HEIGHT_PX, TOP_PX, TITLE_PX, SCOPE_PX, ROW_PX = 360, 34, 30, 20, 22


def themed(fig: go.Figure) -> go.Figure:
    """The figure on a transparent background with grey grid lines (both themes)."""
    fig.update_layout(**THEME)
    fig.update_xaxes(**LINES)
    fig.update_yaxes(**LINES)
    return fig


def _ends(frames: Sequence[Frame], ends: Ends | None) -> Ends:
    # Without named end ids nothing is left out (an AR or hand-made trace without EOS).
    return ends if ends is not None else Ends(frozenset(), None, None)


def _piece_label(pieces: dict[int, str], token: int) -> str:
    return str(escape(visible_piece(piece_of(pieces, token))))


def decision_heatmap(
    frames: Sequence[Frame],
    pieces: dict[int, str],
    gen_length: int,
    block_size: int,
    axis: str = "nfe",
    scope: str = "",
) -> go.Figure:
    """Position (x) against the forward (axis="nfe") or the round inside the block (axis="round")
    that decided it; colour is the confidence at commit time, blank where still undecided.

    With axis="nfe" each block shows as a staircase: a block that resolves in few forwards is a
    short, wide step. With axis="round" blocks fold onto each other, so the rows show how many
    rounds blocks needed. `scope` (engine.metrics.scope_label) goes into the title.
    """
    if axis not in ("nfe", "round"):
        raise ValueError(f"axis must be 'nfe' or 'round', got {axis!r}.")
    rounds, nfes, confidences = decision_matrix(frames, gen_length)
    when = nfes if axis == "nfe" else [None if r is None else r + 1 for r in rounds]
    rows = max([w for w in when if w is not None], default=0)
    z: list[list[float | None]] = [[None] * gen_length for _ in range(rows)]
    text: list[list[str]] = [[""] * gen_length for _ in range(rows)]
    last_token: dict[int, int] = {}
    for frame in frames:
        for position, token, _conf in frame.committed:
            last_token[position] = token
    for position, row in enumerate(when):
        if row is None:
            continue
        z[row - 1][position] = confidences[position]
        text[row - 1][position] = _piece_label(pieces, last_token.get(position, -1))
    y_title = "forward (NFE)" if axis == "nfe" else "round inside the block"
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(gen_length)), y=list(range(1, rows + 1)), text=text,
        colorscale="Viridis", zmin=0.0, zmax=1.0, colorbar={"title": {"text": "confidence"}},
        hovertemplate="position %{x}<br>" + y_title + " %{y}<br>token %{text}<br>confidence %{z:.2f}"
                      "<extra></extra>",
        xgap=1, ygap=1,
    ))
    # Block boundaries as faint vertical lines, so a block's staircase is easy to pick out.
    for b in range(1, -(-gen_length // max(1, block_size))):
        fig.add_vline(x=b * block_size - 0.5, line_width=1, line_dash="dot", opacity=0.4)
    fig.update_layout(
        xaxis_title="position", yaxis_title=y_title,
        yaxis={"autorange": "reversed", **integer_axis(rows, 1)}, xaxis=integer_axis(gen_length - 1),
        **headed("When each token was decided", scope),
    )
    return themed(fig)


def headed(title: str, scope: str, legend_rows: int = 0, right_px: int = 20) -> dict:
    """Layout settings that stack the figure's head in its top margin: the title, what it covers
    (the scope, engine.metrics.scope_label) on a smaller line under it, then the legend, each below
    the one before, so none sits on another. The title is short enough for the Chat tab, where a
    plot is about 320 px wide and plotly cuts a title it cannot fit (17 px type: about 30
    characters); the legend names the rest (pre-filled tokens, edits). At that width a horizontal
    legend may give each entry a row of its own, so the margin holds `legend_rows` rows (a wider
    plot uses fewer and leaves a gap), and the figure grows by the rows past two, so the plot
    area keeps its height. Positions are fractions of the figure's height (yref "container")."""
    head_px = TOP_PX + TITLE_PX + (SCOPE_PX if scope else 0)
    height = HEIGHT_PX + max(0, legend_rows - 2) * ROW_PX
    layout = {"title": {"text": title, "yref": "container", "y": 1 - TOP_PX / height, "yanchor": "top"},
              "margin": {"l": 50, "r": right_px, "t": head_px + legend_rows * ROW_PX + 8, "b": 46},
              "height": height}
    if scope:
        layout["title"]["subtitle"] = {"text": str(escape(scope))}
    if legend_rows:
        layout["legend"] = {"orientation": "h", "yref": "container", "yanchor": "top", "y": 1 - head_px / height,
                            "xanchor": "left", "x": 0}
    return layout


def answer_placed(frames: Sequence[Frame], ends: Ends) -> list[int]:
    """Answer tokens a schema scaffold placed with each frame (Frame.prefilled, first listed),
    judged against the last frame's canvas as answer_commits is. The answer's tokens are the ones
    decided plus the ones placed, so the two counts add up to engine/metrics.py's answer tokens."""
    if not frames:
        return []
    answer = set(ends.answer_positions(frames[-1].canvas))
    seen: set[int] = set()
    out = []
    for frame in frames:
        new = {p for p in frame.prefilled if p in answer} - seen
        seen |= new
        out.append(len(new))
    return out


def commits_per_forward(frames: Sequence[Frame], ends: Ends | None = None, scope: str = "") -> go.Figure:
    """Bars: answer tokens decided by each forward (stacked on them, for a scaffolded run, the
    tokens its scaffold placed). Line: running tokens per forward (answer tokens so far / NFE),
    which ends on the run's own tokens per forward (engine/metrics.py). A run that rewrote tokens
    gets a bar of its own per forward, cross-hatched beside the decided ones: edits are not
    decisions, so they never enter the line (engine/metrics.py). A uniform-noise run decides a
    canvas at its last step only, so it gets noise_steps instead: what each step accepted."""
    if any(f.noise is not None for f in frames):
        return noise_steps(frames, scope)
    ends = _ends(frames, ends)
    nfe = [f.nfe for f in frames]
    per_forward = answer_commits(frames, ends)
    placed = answer_placed(frames, ends)
    totals = [d + p for d, p in zip(per_forward, placed)]
    running, so_far = [], 0
    for frame, total in zip(frames, totals):
        so_far += total
        running.append(so_far / frame.nfe if frame.nfe else 0.0)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=nfe, y=per_forward, name="answer tokens decided by this forward",
                         hovertemplate="NFE %{x}: %{y} tokens<extra></extra>"))
    fig.add_trace(go.Scatter(x=nfe, y=running, name=f"{LABELS['tokens_per_forward']} so far", mode="lines",
                             hovertemplate="NFE %{x}: %{y:.2f} tokens/forward<extra></extra>"))
    if any(placed):
        fig.add_trace(go.Bar(x=nfe, y=placed, name="pre-filled by the schema", marker_pattern_shape="/",
                             hovertemplate="NFE %{x}: %{y} tokens pre-filled<extra></extra>"))
    edits = edit_counts(frames, ends)
    if any(edits):
        # offsetgroup: beside the stack, not on it (an edit rewrites a token already counted)
        fig.add_trace(go.Bar(x=nfe, y=edits, name=f"{LABELS['edits']} (rewritten tokens, counted apart)",
                             marker_pattern_shape="x", offsetgroup="edits",
                             hovertemplate="NFE %{x}: %{y} tokens rewritten<extra></extra>"))
        for trace in fig.data[:1]:
            trace.offsetgroup = "decided"
        for trace in fig.data[2:-1]:
            trace.offsetgroup = "decided"
    fig.update_layout(
        xaxis_title=LABELS["nfe"], yaxis_title="answer tokens",
        xaxis=integer_axis(max(nfe, default=1), 1), yaxis=integer_axis(max([*totals, *edits], default=1)),
        barmode="stack", **headed("Answer tokens per forward", scope, legend_rows=len(fig.data)),
    )
    return themed(fig)


def noise_steps(frames: Sequence[Frame], scope: str = "") -> go.Figure:
    """A uniform-noise run (Frame.noise), step by step: bars of the tokens the entropy bound
    accepted (how many of them changed since the last step, stacked apart), a line of the mean
    entropy of the tempered logits (right axis), and a mark where each canvas ended, naming its rule."""
    steps = [f for f in frames if f.noise is not None]
    nfe = [f.nfe for f in steps]
    changed = [len(f.noise.changed) for f in steps]
    kept = [len(f.noise.accepted) - c for f, c in zip(steps, changed)]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=nfe, y=kept, name="accepted", hovertemplate="NFE %{x}: %{y} accepted<extra></extra>"))
    fig.add_trace(go.Bar(x=nfe, y=changed, name="accepted, changed since the last step", marker_pattern_shape="x",
                         hovertemplate="NFE %{x}: %{y} changed<extra></extra>"))
    fig.add_trace(go.Scatter(x=nfe, y=[f.noise.mean_entropy for f in steps], name="mean entropy (nats)",
                             mode="lines+markers", yaxis="y2",
                             hovertemplate="NFE %{x}: %{y:.3f} nats<extra></extra>"))
    for f in steps:
        if f.noise.stop_rule:
            fig.add_vline(x=f.nfe + 0.5, line_dash="dot", line_color="rgba(127,127,127,0.7)",
                          annotation_text="step cap" if f.noise.stop_rule == "max_steps" else "stable + confident",
                          annotation_position="top left", annotation_font_size=10)
    fig.update_layout(
        xaxis_title=LABELS["nfe"],
        yaxis_title="tokens accepted", xaxis=integer_axis(max(nfe, default=1), 1),
        yaxis=integer_axis(max((len(f.noise.accepted) for f in steps), default=1)),
        yaxis2={"title": "mean entropy (nats)", "overlaying": "y", "side": "right", "rangemode": "tozero"},
        barmode="stack", **headed("Accepted tokens per step", scope, legend_rows=len(fig.data), right_px=60))
    return themed(fig)


def _cumulative(generations: Sequence[tuple[Sequence[Frame], Ends | None]]) -> tuple[list[float], list[int]]:
    # Start at (0 s, 0 tokens) so both runs leave from the same point; a scaffold's placed
    # tokens count as they appear (they are answer tokens, engine/metrics.py). A turn of several
    # generations adds up: each one starts at the model time and the tokens the earlier ones ended on.
    times, totals, before_s, so_far = [0.0], [0], 0.0, 0
    for frames, end in generations:
        ends = _ends(frames, end)
        for frame, decided, placed in zip(frames, answer_commits(frames, ends), answer_placed(frames, ends)):
            so_far += decided + placed
            times.append(before_s + frame.elapsed_s)
            totals.append(so_far)
        before_s += frames[-1].elapsed_s if frames else 0.0
    return times, totals


def race_plot(
    diff_frames: Sequence[Frame],
    ar_frames: Sequence[Frame],
    labels: tuple[str, str] = ("diffusion", "autoregressive"),
    ends: tuple[Ends | None, Ends | None] = (None, None),
) -> go.Figure:
    """Answer tokens on the canvas (decided, or placed by a scaffold) against model time for a
    diffusion run and an AR run of the same prompt; `ends` names each run's EOS / pad ids so
    neither counts its end (engine/metrics.py)."""
    return turn_race_plot([(labels[0], [(diff_frames, ends[0])]), (labels[1], [(ar_frames, ends[1])])], scope="")


def turn_race_plot(sides: Sequence[tuple[str, Sequence[tuple[Sequence[Frame], Ends | None]]]],
                   scope: str = "this turn") -> go.Figure:
    """The race of whole turns: per side (label, its generations as (frames, ends)), answer tokens
    against that side's model time, every generation of the turn after the one before it."""
    fig = go.Figure()
    top = 1
    scaffolded = any(f.prefilled for _label, generations in sides for frames, _e in generations for f in frames)
    for label, generations in sides:
        times, decided = _cumulative(generations)
        top = max(top, decided[-1])
        fig.add_trace(go.Scatter(
            x=times, y=decided, name=str(escape(label)), mode="lines", line={"shape": "hv"},
            hovertemplate="%{x:.3f} s: %{y} tokens<extra>" + str(escape(label)) + "</extra>",
        ))
    fig.update_layout(
        xaxis_title=f"{LABELS['seconds']} (s)",
        yaxis_title="answer tokens (decided or pre-filled)" if scaffolded else "answer tokens decided",
        yaxis=integer_axis(top), **headed("Answer tokens over model time", scope, legend_rows=len(fig.data)),
    )
    return themed(fig)
