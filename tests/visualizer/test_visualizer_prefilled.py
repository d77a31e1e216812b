"""Tokens a schema scaffold placed are drawn as pre-filled, apart from the model's decisions: in
the live grid (cell class, title, readout count, legend entry) and in the standalone replay
(the frames carry `prefilled`; the legend names it). A trace without a scaffold looks as before."""

from __future__ import annotations

import json
import re

import pytest

from engine.trace import Frame, Result, Stats
from tests.visualizer.test_visualizer_grid import parse
from tests.visualizer.test_visualizer_traces import make_frames
from visualizer.cells import prefilled_positions
from visualizer.grid import GRID_CSS, legend_html, render_grid
from visualizer.replay import standalone_replay_html

MASK = 0
PIECES = {1: '{"', 2: "size", 3: '":', 4: ' "', 5: "M", 6: '"}', 7: "<img src=x onerror=alert(1)>"}
GEN_LENGTH, BLOCK_SIZE = 6, 6


def scaffolded_frames() -> list[Frame]:
    """`{"size": "M"}`: the scaffold places the five fixed pieces with the first forward, the
    model decides only the value "M" (position 4) in the second."""
    skeleton = [1, 2, 3, 4, MASK, 6]
    first = Frame(nfe=1, block=0, round=0, committed=[], canvas=list(skeleton), elapsed_s=0.01,
                  prefilled=[0, 1, 2, 3, 5])
    done = list(skeleton)
    done[4] = 5
    second = Frame(nfe=2, block=0, round=1, committed=[(4, 5, 0.8)], canvas=done, elapsed_s=0.02,
                   prefilled=[0, 1, 2, 3, 5])                  # cumulative, as the engine writes it
    return [first, second]


def cells(html: str) -> list[tuple[str, str]]:
    return parse(html).cells


def test_prefilled_cells_have_their_own_class_and_the_models_value_does_not():
    html = render_grid(scaffolded_frames(), PIECES, MASK, GEN_LENGTH, BLOCK_SIZE)
    classes = [c for c, _text in cells(html)]
    assert [("dp-pre" in c) for c in classes] == [True, True, True, True, False, True]
    assert "dp-new" in classes[4] and "dp-pre" not in classes[4]
    assert 'title="#1: &#39;size&#39; · pre-filled by the schema at NFE 1"' in html
    assert re.search(r"pre-filled by the schema: <b>5</b>", html)
    assert "pre-filled by the schema (dotted, hatched)" in html and "dp-key-pre" in html


def test_prefilled_before_the_value_is_decided_and_never_drawn_as_new():
    html = render_grid(scaffolded_frames(), PIECES, MASK, GEN_LENGTH, BLOCK_SIZE, upto=0)
    classes = [c for c, _text in cells(html)]
    assert "dp-mask" in classes[4]
    assert all("dp-pre" in c and "dp-new" not in c for i, c in enumerate(classes) if i != 4)


def test_a_trace_without_a_scaffold_has_no_prefilled_style_or_legend_entry():
    frames = scaffolded_frames()
    for frame in frames:
        frame.prefilled = []
    html = render_grid(frames, PIECES, MASK, GEN_LENGTH, BLOCK_SIZE)
    assert "dp-pre" not in html and "pre-filled" not in html
    assert prefilled_positions(frames) == {}


def test_prefilled_text_is_escaped():
    frames = scaffolded_frames()
    frames[0].canvas[0] = frames[1].canvas[0] = 7          # a scaffold piece that spells HTML stays text
    html = render_grid(frames, PIECES, MASK, GEN_LENGTH, BLOCK_SIZE)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_prefilled_style_is_more_than_a_colour():
    rule = re.search(r"\.dp-pre, \.dp-key-pre \{([^}]*)\}", GRID_CSS).group(1)
    assert "dotted" in rule and "repeating-linear-gradient" in rule
    assert "dp-key-pre" in legend_html(True) and "dp-key-pre" not in legend_html(False)


def scaffolded_result() -> Result:
    frames = scaffolded_frames()
    return Result(token_ids=frames[-1].canvas, text='{"size": "M"}', frames=frames,
                  stats=Stats(nfe=2, new_tokens=6, tokens_per_forward=3.0, seconds=0.02, tokens_per_s=300.0,
                              first_token_s=0.01, stop_reason="length"), mask_id=MASK, pieces=dict(PIECES))


def test_the_replay_carries_prefilled_positions_and_names_them_in_its_legend():
    page = standalone_replay_html(scaffolded_result(), "t", "p", "m", {"gen_length": GEN_LENGTH,
                                                                       "block_size": BLOCK_SIZE})
    data = json.loads(re.search(r'<script type="application/json" id="trace">(.*?)</script>', page, re.S).group(1))
    assert [f["prefilled"] for f in data["frames"]] == [[0, 1, 2, 3, 5]] * 2
    assert "pre-filled by the schema (dotted, hatched)" in page
    # the player is sent the scaffold's cells as the live grid draws them: five pre-filled from step 1
    step_one = {position: classes for position, classes, *_rest in data["steps"][1]["cells"]}
    assert [p for p, classes in sorted(step_one.items()) if classes == "dp-cell dp-pre"] == [0, 1, 2, 3, 5]


def test_the_latex_export_names_the_grey_of_prefilled_tokens():
    from visualizer.latex import latex_document

    frames = scaffolded_frames()
    result = Result(token_ids=frames[-1].canvas, text='{"size": "M"}', frames=frames,
                    stats=Stats(nfe=2, new_tokens=6, tokens_per_forward=3.0, seconds=0.02, tokens_per_s=300.0,
                                first_token_s=0.01, stop_reason="length"), mask_id=MASK, pieces=dict(PIECES))
    document = latex_document(result, "t", "p", "m")
    assert "\\textcolor{dpfill}{\\rule{0.8em}{0.8em}~pre-filled by the schema}" in document
    assert "\\textcolor{dpfill}{size}" in document and "\\textcolor{dpround0}{M}" in document
    for frame in frames:
        frame.prefilled = []
    assert "pre-filled" not in latex_document(result, "t", "p", "m")


def test_plots_count_placed_tokens_apart_and_end_on_the_runs_numbers():
    from engine.metrics import Ends, numbers
    from visualizer.plots import answer_placed, commits_per_forward, race_plot

    frames = scaffolded_frames()
    ends = Ends(frozenset(), None, MASK)
    stats = numbers(frames, ends, "length")
    assert answer_placed(frames, ends) == [5, 0]                     # listed again in frame 2: counted once
    bars_decided, line, bars_placed = commits_per_forward(frames, ends).data
    assert list(bars_decided.y) == [0, 1] and list(bars_placed.y) == [5, 0]
    assert sum(bars_decided.y) + sum(bars_placed.y) == stats.new_tokens == 6
    assert list(line.y)[-1] == pytest.approx(stats.tokens_per_forward)
    race = race_plot(frames, frames, ends=(ends, ends))
    assert list(race.data[0].y) == [0, 5, 6] and "pre-filled" in race.layout.yaxis.title.text
    plain = race_plot(make_frames(), make_frames())
    assert "pre-filled" not in plain.layout.yaxis.title.text and len(commits_per_forward(make_frames()).data) == 2
