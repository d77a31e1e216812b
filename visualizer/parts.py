"""One forward drawn in parts: the tokens a forward committed in its block, shown a few at a
time, most confident first, so a block that resolves in one or two forwards still shows on
screen as it fills.

A part is not a model round: the model made all of these decisions in one forward. Each part is
a Frame with the forward's own nfe, block, round and clock, holding the commits drawn so far
(its `committed` still means "decided by this forward") and a canvas where the commits not yet
drawn show what the canvas held before the forward (the scaffold's writes stay). The last part
is the forward's frame itself, so the panel always ends on what the model computed. The caller
labels parts as parts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from engine.trace import Frame

from .cells import block_bounds

TOKENS_PER_PART = 4          # at most this many of a block's commits appear at once
MAX_PARTS = 4                # a forward is never drawn in more parts than this


def _in_block(frame: Frame, gen_length: int, block_size: int) -> tuple[list[tuple[int, int, float]], list]:
    """(commits inside the frame's block, the others: an EOS fill after it, a next block's first token)."""
    bounds = block_bounds(gen_length, block_size, len(frame.canvas))
    start, stop = bounds[frame.block] if 0 <= frame.block < len(bounds) else (0, 0)
    inside = [c for c in frame.committed if start <= c[0] < stop]
    return inside, [c for c in frame.committed if not start <= c[0] < stop]


def part_count(frame: Frame, mask_id: int | None, gen_length: int, block_size: int) -> int:
    """How many parts `frame` is drawn in: ceil(commits in its block / TOKENS_PER_PART), at most
    MAX_PARTS, at least 1; always 1 for an autoregressive frame (mask_id None: one token) and for a
    uniform-noise step (Frame.noise: the whole canvas is redrawn, and nothing in it is decided)."""
    if mask_id is None or frame.noise is not None:
        return 1
    inside, _rest = _in_block(frame, gen_length, block_size)
    return max(1, min(MAX_PARTS, -(-len(inside) // TOKENS_PER_PART)))


def forward_parts(frame: Frame, previous: Sequence[int] | None, mask_id: int | None, gen_length: int,
                  block_size: int) -> list[Frame]:
    """The frames that draw `frame` in part_count parts. `previous` is the canvas before the
    forward (None: all masked). The block's commits go in order of confidence (ties: position),
    split as evenly as the count allows; commits outside the block go with the last part."""
    count = part_count(frame, mask_id, gen_length, block_size)
    if count == 1:
        return [frame]
    inside, rest = _in_block(frame, gen_length, block_size)
    order = sorted(inside, key=lambda c: (-c[2], c[0]))
    size, extra = divmod(len(order), count)
    before = list(previous) if previous is not None else []
    parts, upto = [], 0
    for index in range(count - 1):
        upto += size + (1 if index < extra else 0)
        drawn, pending = order[:upto], order[upto:] + rest
        canvas = list(frame.canvas)                 # what the scaffold wrote stays; undrawn commits go back
        for position, _token, _confidence in pending:
            canvas[position] = before[position] if position < len(before) else mask_id
        parts.append(dataclasses.replace(frame, committed=sorted(drawn), canvas=canvas))
    return [*parts, frame]
