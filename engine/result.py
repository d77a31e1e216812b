"""The Result of a generation, built from its frames alone: the generation loops, the scaffolded
loops, a served model's stream and a stopped run all end here, so every number a person sees has
one derivation (engine/metrics.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.metrics import Ends, decided_answer_positions, numbers, upstream_tokens_per_forward
from engine.trace import Frame, Result


def pieces_of(backend, token_ids: Iterable[int], known: Mapping[int, str] | None = None) -> dict[int, str]:
    """id -> the text piece the grid shows for it, for the ids not in `known` yet (the live panel
    adds each frame's new ids; a Result holds every id its frames used)."""
    return {t: backend.token_piece(t) for t in sorted(set(token_ids).difference(known or ()))}


def shown_ids(frame: Frame) -> list[int]:
    """Every token id a view of this frame draws: its canvas, and a uniform-noise step's draft and
    noisy canvas (random tokens the canvas never holds)."""
    if frame.noise is None:
        return frame.canvas
    return [*frame.canvas, *frame.noise.draft, *frame.noise.noisy]


def summarize(backend, frames: list[Frame], seconds: float, stop_reason: str, length: int | None = None) -> Result:
    """The Result of a (possibly partial) list of frames; everything is derived from them.

    token_ids = the answer ids of the last canvas (engine/metrics.py: cut at the first EOS and at
    `length`, pad and mask ids dropped); every number comes from `metrics.numbers`, model time
    being the last frame's clock. `seconds` is the wall time of the generation as its caller saw it.
    With aligned blocks the canvas runs on to the end of the last block, as upstream decodes it,
    so the generation length cuts the answer: it never holds more than gen_length tokens.
    """
    ends = Ends.of(backend, length)
    token_ids = [frames[-1].canvas[p] for p in decided_answer_positions(frames[-1], ends)] if frames else []
    stats = numbers(frames, ends, stop_reason, wall_s=seconds)
    if backend.uniform_noise:
        stats.upstream_tokens_per_forward = upstream_tokens_per_forward(frames, ends, stop_reason)
    mask_id = ends.mask_id
    ids = {t for f in frames for t in shown_ids(f)} | ({mask_id} if mask_id is not None else set())
    pieces = pieces_of(backend, ids)
    return Result(token_ids=token_ids, text=backend.decode(token_ids), frames=frames, stats=stats,
                  mask_id=mask_id, pieces=pieces, eos_ids=sorted(ends.eos_ids), pad_id=ends.pad_id,
                  uniform_noise=backend.uniform_noise)
