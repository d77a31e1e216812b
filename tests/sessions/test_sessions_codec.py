"""The compact frame encoding is lossless, whatever the canvases do between frames."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trace import Frame
from sessions.codec import FrameCodecError, decode_frames, encode_frames
from tests.visualizer.test_visualizer_traces import make_ar_frames, make_frames

canvases = st.lists(st.integers(min_value=0, max_value=5), max_size=12)
frames_strategy = st.lists(
    st.builds(
        Frame,
        nfe=st.integers(0, 100), block=st.integers(0, 10), round=st.integers(0, 10),
        committed=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 5),
                                     st.floats(0, 1, allow_nan=False)), max_size=4),
        canvas=canvases, elapsed_s=st.floats(0, 100, allow_nan=False),
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(frames_strategy)
def test_round_trip_is_exact(frames):
    # Canvases grow, shrink and change anywhere: the diff is against the real previous canvas.
    assert decode_frames(encode_frames(frames)) == frames


@pytest.mark.parametrize("make", [make_frames, make_ar_frames], ids=["diffusion", "autoregressive"])
def test_hand_traces_round_trip(make):
    assert decode_frames(encode_frames(make())) == make()


def test_delta_is_smaller_than_full_canvases():
    frames = make_ar_frames(256)
    full = json.dumps([f.to_dict() for f in frames], separators=(",", ":"))
    assert len(encode_frames(frames)) * 10 < len(full)


def test_non_finite_numbers_survive_as_nan():
    frames = [Frame(nfe=1, block=0, round=0, committed=[(0, 1, math.inf)], canvas=[1], elapsed_s=math.nan)]
    (back,) = decode_frames(encode_frames(frames))
    assert math.isnan(back.elapsed_s) and math.isnan(back.committed[0][2])


def test_unknown_version_is_a_sentence():
    with pytest.raises(FrameCodecError, match="format version 9"):
        decode_frames('{"v": 9, "frames": []}')


def test_scaffolded_frames_keep_their_prefilled_positions():
    from tests.visualizer.test_visualizer_prefilled import scaffolded_frames

    frames = scaffolded_frames()
    stored = encode_frames(frames)
    assert json.loads(stored)["v"] == 2 and decode_frames(stored) == frames
    assert json.loads(encode_frames(make_frames()))["v"] == 1      # unscaffolded runs keep the old format


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sets(st.integers(0, 11)), min_size=1, max_size=6))
def test_cumulative_prefilled_positions_round_trip(added):
    placed: set[int] = set()
    frames = []
    for i, positions in enumerate(added):
        placed |= positions
        frames.append(Frame(nfe=i + 1, block=0, round=i, committed=[], canvas=[3] * 12, elapsed_s=0.0,
                            prefilled=sorted(placed)))
    assert decode_frames(encode_frames(frames)) == frames
