"""visualizer/parts.py: one forward drawn in parts, surest first, ending on the forward itself."""

from __future__ import annotations

import pytest

from engine.trace import Frame
from visualizer.parts import MAX_PARTS, TOKENS_PER_PART, forward_parts, part_count

MASK = 99


def forward(confidences: dict[int, float], block: int = 0, fill: range = range(0), before=None) -> tuple[Frame, list]:
    """A frame of a 32-token canvas in blocks of 16 that commits `confidences` (position -> c)
    in `block`, and an EOS fill (token 0) over `fill`."""
    before = list(before or [MASK] * 32)
    canvas = list(before)
    committed = [(p, 10 + p, c) for p, c in confidences.items()] + [(p, 0, 1.0) for p in fill]
    for position, token, _c in committed:
        canvas[position] = token
    return Frame(nfe=3, block=block, round=1, committed=committed, canvas=canvas, elapsed_s=0.5), before


@pytest.mark.parametrize(("commits", "parts"), [(1, 1), (4, 1), (5, 2), (13, 4), (16, 4)])
def test_a_forward_is_drawn_in_one_part_per_four_tokens_of_its_block_at_most_four(commits, parts):
    frame, _before = forward({p: 0.99 for p in range(commits)})
    assert part_count(frame, MASK, 32, 16) == parts == min(MAX_PARTS, -(-commits // TOKENS_PER_PART))


def test_an_autoregressive_frame_is_one_part():
    frame = Frame(nfe=1, block=0, round=0, committed=[(0, 5, 0.9)], canvas=[5], elapsed_s=0.1)
    assert part_count(frame, None, 8, 1) == 1 and forward_parts(frame, None, None, 8, 1) == [frame]


def test_parts_go_surest_first_and_end_on_the_forward_itself():
    confidences = {p: 0.5 + p / 100 for p in range(13)}          # position 12 is the surest
    frame, before = forward(confidences, fill=range(16, 32))
    parts = forward_parts(frame, before, MASK, 32, 16)
    assert len(parts) == 4 and parts[-1] == frame
    sizes = [len(p.committed) for p in parts[:-1]]
    assert sizes == [4, 7, 10]                                      # 13 in-block commits: 4 + 3 + 3 + 3
    assert {p for p, _t, _c in parts[0].committed} == {12, 11, 10, 9}
    for part in parts[:-1]:
        drawn = {p for p, _t, _c in part.committed}
        assert all(part.canvas[p] == (10 + p if p in drawn else MASK) for p in range(16))
        assert all(t == MASK for t in part.canvas[16:])             # the EOS fill comes with the last part
        assert (part.nfe, part.block, part.round, part.elapsed_s) == (3, 0, 1, 0.5)   # one forward, not rounds


def test_a_later_forward_keeps_what_earlier_ones_decided_and_the_scaffold_wrote():
    before = [MASK] * 32
    before[:4] = [1, 2, 3, 4]                                      # decided by earlier forwards
    frame, _ = forward({p: 0.9 for p in range(4, 12)}, before=before)
    frame.canvas[15] = 7                                           # written by a scaffold in this forward
    frame.prefilled.append(15)
    first = forward_parts(frame, before, MASK, 32, 16)[0]
    assert first.canvas[:4] == [1, 2, 3, 4] and first.canvas[15] == 7 and first.prefilled == [15]
    assert sum(t != MASK for t in first.canvas[4:12]) == 4
