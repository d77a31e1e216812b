"""Plotly figures from a hand trace: shapes of the data, and escaped hover text."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from tests.visualizer.test_visualizer_traces import (
    BLOCK_SIZE,
    EXPECTED_NFE,
    GEN_LENGTH,
    PIECES,
    make_ar_frames,
    make_frames,
)
from visualizer.plots import commits_per_forward, decision_heatmap, race_plot


def test_heatmap_by_nfe_places_each_token():
    fig = decision_heatmap(make_frames(), PIECES, GEN_LENGTH, BLOCK_SIZE)
    assert isinstance(fig, go.Figure)
    z = fig.data[0].z
    assert len(z) == 5 and all(len(row) == GEN_LENGTH for row in z)
    for position, nfe in enumerate(EXPECTED_NFE):
        column = [row[position] for row in z]
        assert [i for i, v in enumerate(column) if v is not None] == [nfe - 1]
    text = " ".join(" ".join(row) for row in fig.data[0].text)
    assert "<img" not in text and "&lt;img" in text and "<script" not in text
    assert len(fig.layout.shapes) == GEN_LENGTH // BLOCK_SIZE - 1  # block boundaries


def test_heatmap_by_round_folds_blocks():
    fig = decision_heatmap(make_frames(), PIECES, GEN_LENGTH, BLOCK_SIZE, axis="round")
    assert len(fig.data[0].z) == 3  # the slowest block took three rounds
    with pytest.raises(ValueError, match="axis"):
        decision_heatmap(make_frames(), PIECES, GEN_LENGTH, BLOCK_SIZE, axis="time")


def test_commits_per_forward():
    fig = commits_per_forward(make_frames())
    assert list(fig.data[0].y) == [2, 2, 1, 2, 1]
    assert list(fig.data[1].y) == pytest.approx([2.0, 2.0, 5 / 3, 7 / 4, 8 / 5])


def test_race_plot_starts_at_zero_and_counts_tokens():
    fig = race_plot(make_frames(), make_ar_frames(8), labels=("diffusion <b>", "AR"))
    diff, ar = fig.data
    assert diff.x[0] == 0.0 and diff.y[0] == 0 and diff.y[-1] == 8
    assert ar.y[-1] == 8 and ar.x[-1] == pytest.approx(0.16)
    assert diff.name == "diffusion &lt;b&gt;"


def test_empty_trace_gives_empty_figures():
    assert decision_heatmap([], PIECES, GEN_LENGTH, BLOCK_SIZE).data[0].z == ()
    assert len(commits_per_forward([]).data[0].x or ()) == 0


def test_axes_of_counts_tick_at_whole_numbers_only():
    from engine.metrics import Ends
    from tests.visualizer.test_visualizer_traces import EOS, EOS_GEN_LENGTH, MASK, PIECES, make_eos_frames
    from visualizer import commits_per_forward, decision_heatmap, race_plot

    frames = make_eos_frames()
    ends = Ends(frozenset({EOS}), 0, MASK)
    axes = [commits_per_forward(frames, ends).layout.xaxis, commits_per_forward(frames, ends).layout.yaxis,
            decision_heatmap(frames, PIECES, EOS_GEN_LENGTH, 4).layout.yaxis,
            decision_heatmap(frames, PIECES, EOS_GEN_LENGTH, 4).layout.xaxis,
            race_plot(frames, frames, ends=(ends, ends)).layout.yaxis]
    for axis in axes:
        assert axis.tickmode == "linear" and axis.tickformat == "d"
        assert float(axis.dtick).is_integer() and axis.dtick >= 1 and float(axis.tick0).is_integer()
