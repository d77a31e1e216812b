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


def test_every_field_of_a_frame_survives_the_store():
    """The store keeps the one definition of a frame (engine/trace.py Frame) whole: a frame with
    every field set comes back equal. A field added to Frame (or NoiseStep) later fails here until
    the codec writes it, since the check walks the dataclasses' own field lists."""
    import dataclasses

    from engine.trace import NoiseStep

    step = NoiseStep(start=0, draft=[5, 6], noisy=[5, 3], accepted=[0], changed=[0], temperature=0.7,
                     mean_entropy=1.25, stop_rule="max_steps")
    full = Frame(nfe=3, block=1, round=2, committed=[(0, 5, 0.5)], canvas=[5, 6], elapsed_s=0.1, prefilled=[1],
                 edits=[(0, 4, 5)], remasked=[1], noise=step)
    for value, kind in ((full, Frame), (step, NoiseStep)):
        for field in dataclasses.fields(kind):
            default = (field.default if field.default is not dataclasses.MISSING else
                       field.default_factory() if field.default_factory is not dataclasses.MISSING else None)
            assert getattr(value, field.name) not in (None, default), f"{kind.__name__}.{field.name} is left unset"
    assert decode_frames(encode_frames([full])) == [full]


# Rows as earlier playgrounds wrote them (the layouts in sessions/codec.py's docstring): they load,
# and they draw.
OLD_ROWS = {
    1: '{"v":1,"frames":[[1,0,0,0.01,[[1,11,0.95]],4,[[0,99],[1,11],[2,99],[3,99]]],'
       '[2,0,1,0.02,[[0,10,0.7]],4,[[0,10]]]]}',
    2: '{"v":2,"frames":[[1,0,0,0.01,[],4,[[0,1],[1,2],[2,99],[3,6]],[0,1,3]],'
       '[2,0,1,0.02,[[2,5,0.8]],4,[[2,5]],[]]]}',
    3: '{"v":3,"frames":[[1,0,0,0.01,[[0,4,0.9],[1,6,0.8]],2,[[0,4],[1,6]],[],[],[]],'
       '[2,0,1,0.02,[[0,5,0.7]],2,[[0,5]],[],[[0,4,5]],[]]]}',
}


@pytest.mark.parametrize("version", sorted(OLD_ROWS))
def test_rows_written_by_earlier_versions_load_and_draw(version):
    from visualizer.cells import step_view

    frames = decode_frames(OLD_ROWS[version])
    assert [f.nfe for f in frames] == [1, 2]
    expected = {1: ([10, 11, 99, 99], []), 2: ([1, 2, 5, 6], [0, 1, 3]), 3: ([5, 6], [])}[version]
    assert (frames[-1].canvas, frames[-1].prefilled) == expected
    if version == 3:
        assert frames[-1].edits == [(0, 4, 5)]
    view = step_view(frames, {}, 99, len(frames[-1].canvas), 4)
    kinds = [cell.classes for cell in view.cells]
    assert {1: ["dp-cell dp-new", "dp-cell dp-done", "dp-cell dp-mask", "dp-cell dp-mask"],
            2: ["dp-cell dp-pre", "dp-cell dp-pre", "dp-cell dp-new", "dp-cell dp-pre"],
            3: ["dp-cell dp-new dp-edited", "dp-cell dp-done"]}[version] == kinds
