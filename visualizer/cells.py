"""What every cell of a trace's grid shows at one step: the one derivation of a frame's cells.

A trace is stored as frames (engine/trace.py `Frame`, written by sessions/codec.py). What a person
sees of a frame, which cell is masked, decided now, decided earlier and how surely, pre-filled,
after the end, rewritten, remasked, or random noise, is worked out here and nowhere else: the live
grid (grid.py) writes these views as HTML, and the exported replay (replay.py) ships one per step to
its player (templates/replay.js), which only draws them. A change to what a cell says is made once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.metrics import LABELS, Ends, numbers
from engine.trace import Frame, Stats
from visualizer.noise_grid import step_counter
from visualizer.pieces import END_GLYPH, MASK_GLYPH, REMASK_GLYPH, piece_of, visible_piece


@dataclass(frozen=True)
class Cell:
    """One position as drawn: its classes, the text it shows (glyphs and visible whitespace already
    applied), its title, and for a rewritten token the old piece struck through before it."""

    classes: str
    text: str
    title: str
    old: str = ""            # a rewritten token's old piece (visible), drawn struck through; "" when none
    level: float = 1.0       # confidence at commit in [0, 1]: how strong the background is
    label: str = ""          # aria-label, where the title alone does not say it; "" when none
    focus: bool = False      # takes keyboard focus (a rewritten cell: its title is what it tells)
    breaks: bool = False     # the piece holds a newline: the grid's line breaks after it

    def row(self) -> list:
        """The cell as the replay's payload carries it (templates/replay.js reads these indexes)."""
        return [self.classes, self.text, self.title, self.old, self.level, self.label, self.focus, self.breaks]


@dataclass(frozen=True)
class StepView:
    """The grid after one frame: every block's bounds and cells, which block is outlined, how many
    blocks are drawn (a uniform-noise run draws only the canvases it has begun), and the readout's
    (label, value) items. `frame` is None before the first forward."""

    frame: Frame | None
    bounds: list[tuple[int, int]]
    cells: list[Cell]                 # one per position of `bounds`, in order
    drawn: int                        # blocks drawn, from the first
    readout: list[tuple[str, str]]
    noise: bool = False

    @property
    def active(self) -> int:
        return self.frame.block if self.frame is not None else -1


def block_bounds(gen_length: int, block_size: int, canvas_length: int = 0) -> list[tuple[int, int]]:
    """The blocks' (start, stop) positions of a diffusion canvas, up to gen_length. Aligned blocks
    (engine.generate.block_slices) shorten the first block to f = size - t, t = P mod size, and
    make the canvas gen_length + (f mod size) positions long (SDAR, LLaDA2), or gen_length - t
    (Fast-dLLM v2, tail_in_length): a canvas longer by e (0 < e < size) has a first block of e,
    one shorter by t (0 < t < size) a first block of size - t. Any other length (unaligned, or
    0 for an autoregressive span, which grows) means even blocks from 0."""
    size = max(1, block_size)
    extra = canvas_length - gen_length if canvas_length else 0
    first = extra if 0 < extra < size else size + extra if -size < extra < 0 else size
    end = min(gen_length, canvas_length) if canvas_length else gen_length
    starts = [0, *range(first, end, size)]
    return [(start, min(stop, end)) for start, stop in zip(starts, [*starts[1:], max(end, 1)])]


def decision_matrix(
    frames: Sequence[Frame], gen_length: int
) -> tuple[list[int | None], list[int | None], list[float | None]]:
    """When each position was decided: (round inside its block, NFE, confidence at commit).

    None where no frame committed the position. A position committed twice keeps the last
    commit, because that is the token on the final canvas.
    """
    round_of_position: list[int | None] = [None] * gen_length
    nfe_of_position: list[int | None] = [None] * gen_length
    confidence: list[float | None] = [None] * gen_length
    for frame in frames:
        for position, _token, conf in frame.committed:
            if 0 <= position < gen_length:
                round_of_position[position] = frame.round
                nfe_of_position[position] = frame.nfe
                confidence[position] = conf
    return round_of_position, nfe_of_position, confidence


def last_edits(frames: Sequence[Frame]) -> dict[int, tuple[int, int, int]]:
    """position -> (old token, new token, NFE) of the last rewrite of it in `frames` (Frame.edits)."""
    edited: dict[int, tuple[int, int, int]] = {}
    for frame in frames:
        for position, old, new in frame.edits:
            edited[position] = (old, new, frame.nfe)
    return edited


def prefilled_positions(frames: Sequence[Frame]) -> dict[int, int]:
    """position -> NFE of the frame whose scaffold placed it, over `frames` (engine/scaffold)."""
    placed: dict[int, int] = {}
    for frame in frames:
        for position in frame.prefilled:
            placed.setdefault(position, frame.nfe)
    return placed


def has_rewrites(frames: Sequence[Frame]) -> bool:
    """Whether a trace rewrote or remasked any token (its legend then explains those cells)."""
    return any(f.edits or f.remasked for f in frames)


def confidence_level(confidence: float | None) -> float:
    """Confidence at commit clamped to [0, 1] (1 when unknown): how strong a cell's background is."""
    if confidence is None or not math.isfinite(confidence):
        return 1.0
    return round(min(max(float(confidence), 0.0), 1.0), 3)


def _shown(frames: Sequence[Frame], upto: int | None) -> list[Frame]:
    """The frames up to and including `upto` (default: all; negative counts from the end)."""
    if not frames:
        return []
    index = len(frames) - 1 if upto is None else min(max(upto, -len(frames)), len(frames) - 1)
    return list(frames[: (index + len(frames) if index < 0 else index) + 1])


def step_view(frames: Sequence[Frame], pieces: dict[int, str], mask_id: int | None, gen_length: int,
              block_size: int, upto: int | None = None, stats: Stats | None = None, ends: Ends | None = None,
              bounds: list[tuple[int, int]] | None = None, max_steps: int | None = None,
              noise: bool | None = None) -> StepView:
    """The grid of a trace as it stood after frame `upto` (default: the last). Pass `stats` once
    the run has finished to show its own numbers (engine/metrics.py), `bounds` to keep the blocks
    fixed over a whole replay (default: block_bounds of the shown frame's canvas), and `noise` to
    say whether the trace is a uniform-noise one when no frame is shown yet (default: whether a
    frame carries Frame.noise)."""
    uniform = any(f.noise is not None for f in frames) if noise is None else noise
    if uniform:                                                  # a uniform-noise canvas: no masks to draw
        return _noise_view(_shown(frames, upto), pieces, gen_length, block_size, stats, ends, bounds, max_steps)
    return _mask_view(_shown(frames, upto), pieces, mask_id, gen_length, block_size, stats, ends, bounds)


def _numbers(shown: list[Frame], ends: Ends, stats: Stats | None) -> Stats:
    # The numbers of the frames shown so far, or the run's own once it is over (engine/metrics.py).
    return stats if stats is not None else numbers(shown, ends, "running")


def _counts(now: Stats) -> list[tuple[str, str]]:
    """The readout's numbers every grid shows: forwards, answer tokens, tokens per forward, model time."""
    return [(LABELS["nfe"], str(now.nfe)), (LABELS["new_tokens"], str(now.new_tokens)),
            (LABELS["tokens_per_forward"], f"{now.tokens_per_forward:.2f}"),
            (LABELS["seconds"], f"{now.seconds:.3f} s")]


def _mask_view(shown: list[Frame], pieces: dict[int, str], mask_id: int | None, gen_length: int, block_size: int,
               stats: Stats | None, ends: Ends | None, bounds: list[tuple[int, int]] | None) -> StepView:
    ends = ends or Ends(frozenset(), None, mask_id)
    frame = shown[-1] if shown else None
    canvas = frame.canvas if frame is not None else []
    bounds = bounds or block_bounds(gen_length, block_size, len(canvas) if mask_id is not None else 0)
    rounds, nfes, confidences = decision_matrix(shown, gen_length)
    last_tokens = {p: t for f in shown for p, t, _c in f.committed}
    answer = set(ends.answer_positions(canvas))
    new_now = {p for p, _t, _c in frame.committed} if frame is not None else set()
    placed = prefilled_positions(shown)
    edited = last_edits(shown)
    cells: list[Cell] = []
    for position in (p for start, stop in bounds for p in range(start, stop)):
        token = canvas[position] if position < len(canvas) else None
        if token is None or (mask_id is not None and token == mask_id):
            if nfes[position] is not None:                                 # decided once, now remasked
                was = piece_of(pieces, last_tokens[position])
                cells.append(Cell("dp-cell dp-mask dp-remasked", REMASK_GLYPH,
                                  f"#{position}: remasked (was {was!r}), to be decoded again",
                                  label=f"#{position}: remasked, was {was!r}"))
            else:
                cells.append(Cell("dp-cell dp-mask", MASK_GLYPH, f"#{position}: undecided"))
            continue
        text = piece_of(pieces, token)
        if position not in answer:
            cells.append(Cell("dp-cell dp-end", END_GLYPH, f"#{position}: {text!r} · after the answer's end"))
            continue
        shows, breaks = visible_piece(text), "\n" in text
        if position in placed:
            # Written by the schema scaffold, never re-masked: not a decision of the model.
            cells.append(Cell("dp-cell dp-pre", shows, f"#{position}: {text!r} · pre-filled by the schema at NFE "
                              f"{placed[position]}", breaks=breaks))
        elif nfes[position] is None:
            # On the canvas without a commit record (a single frame passed alone).
            cells.append(Cell("dp-cell dp-filled", shows, f"#{position}: {text!r}", breaks=breaks))
        else:
            cells.append(_decided(position, text, token, pieces, rounds[position], nfes[position],
                                  confidences[position], position in new_now, edited.get(position)))
    items: list[tuple[str, str]] = []
    if frame is not None:
        now = _numbers(shown, ends, stats)
        # An AR run has no blocks: each forward writes the next token.
        where = [("token", f"{len(canvas)}/{gen_length}")] if mask_id is None else [
            ("round", str(frame.round + 1)), ("block", f"{frame.block + 1}/{len(bounds)}")]
        items = [*where, *_counts(now), (LABELS["tokens_per_s"], f"{now.tokens_per_s:.1f}")]
        if now.edits:                   # shown only where the run rewrote something (engine/metrics.py)
            items.append((LABELS["edits"], str(now.edits)))
        prefilled = len(answer.intersection(placed))
        if prefilled:
            items.append(("pre-filled by the schema", str(prefilled)))
    return StepView(frame, bounds, cells, len(bounds), items)


def _decided(position: int, text: str, token: int, pieces: dict[int, str], round_: int | None, nfe: int,
             confidence: float | None, new: bool, edit: tuple[int, int, int] | None) -> Cell:
    """A token the model decided: new this forward or earlier, paler when it was less sure, and
    for a rewritten token (an edit rule, or a remasked position decoded again) the old piece
    struck through before it, with a title and aria-label that say so; the cell takes focus so a
    keyboard reaches what the mouse hovers."""
    kind = "dp-new" if new else "dp-done"
    title = (f"#{position}: {text!r} · round {round_ + 1} · NFE {nfe} · confidence {float(confidence):.2f}"
             + (" · new this round" if new else ""))
    level, shows, breaks = confidence_level(confidence), visible_piece(text), "\n" in text
    old, now, at = edit or (None, None, None)
    if old is None or now != token:
        return Cell(f"dp-cell {kind}", shows, title, level=level, breaks=breaks)
    was = piece_of(pieces, old)
    return Cell(f"dp-cell {kind} dp-edited", shows, f"{title} · edited: {was!r} -> {text!r} at NFE {at}",
                old=visible_piece(was), level=level, label=f"#{position}: {text!r}, edited: {was!r} -> {text!r}",
                focus=True, breaks=breaks)


def _noise_view(shown: list[Frame], pieces: dict[int, str], gen_length: int, block_size: int,
                stats: Stats | None, ends: Ends | None, bounds: list[tuple[int, int]] | None,
                max_steps: int | None) -> StepView:
    """A uniform-noise canvas (DiffusionGemma, Frame.noise) after one step: the canvas being
    denoised as the model reads it next (accepted tokens in full, the rest the random tokens they
    were renoised to), the finished canvases' text, and only the canvases begun."""
    ends = ends or Ends(frozenset(), None, None)
    bounds = bounds or block_bounds(gen_length, block_size)
    frame = shown[-1] if shown else None
    if frame is None or frame.noise is None:
        return StepView(None, bounds, [Cell("dp-cell dp-end", "", f"#{p}: not started")
                                       for start, stop in bounds for p in range(start, stop)], 0, [], noise=True)
    step = frame.noise
    before = shown[-2].noise if len(shown) > 1 and shown[-2].block == frame.block else None
    accepted_before = {p: before.noisy[p - before.start] for p in before.accepted} if before is not None else {}
    accepted, changed = set(step.accepted), set(step.changed)
    answer = set(ends.answer_positions(frame.canvas))
    cells: list[Cell] = []
    for b, (start, stop) in enumerate(bounds):
        for position in range(start, stop):
            if b > frame.block or position >= len(frame.canvas):
                cells.append(Cell("dp-cell dp-end", "", f"#{position}: not started"))
            elif b < frame.block or step.stop_rule:                          # finished: the canvas's text
                text = piece_of(pieces, frame.canvas[position])
                if position not in answer:
                    cells.append(Cell("dp-cell dp-end", END_GLYPH, f"#{position}: {text!r} · after the answer's end"))
                else:
                    new = b == frame.block
                    cells.append(Cell("dp-cell dp-new" if new else "dp-cell dp-done", visible_piece(text),
                                      f"#{position}: {text!r} · the canvas's text" + (" (decided now)" if new else "")))
            else:
                cells.append(_noisy(position, step, pieces, position in accepted, position in changed,
                                    accepted_before))
    now = _numbers(shown, ends, stats)
    items = step_counter(frame, max_steps, len(bounds)) + _counts(now)
    if stats is not None and stats.upstream_tokens_per_forward is not None:
        items.append((LABELS["upstream_tokens_per_forward"], f"{stats.upstream_tokens_per_forward:.2f}"))
    return StepView(frame, bounds, cells, frame.block + 1, items, noise=True)


def _noisy(position: int, step, pieces: dict[int, str], accepted: bool, changed: bool,
           accepted_before: dict[int, int]) -> Cell:
    """A position of the canvas being denoised: accepted by the entropy bound (first time, or
    again with another token: the old one struck through), or a random token, renoised."""
    text = piece_of(pieces, step.noisy[position - step.start])
    draft = piece_of(pieces, step.draft[position - step.start])
    if not accepted:
        return Cell("dp-cell dp-noise", visible_piece(text),
                    f"#{position}: random token {text!r} (renoised, not accepted) · draft {draft!r}")
    if changed:
        old = piece_of(pieces, accepted_before[position])
        title = f"#{position}: {text!r} · accepted, was {old!r} · draft {draft!r}"
        return Cell("dp-cell dp-accepted dp-changed", visible_piece(text), title, old=visible_piece(old),
                    label=title, focus=True)
    first = "" if position in accepted_before else " dp-accepted-new"
    return Cell(f"dp-cell dp-accepted{first}", visible_piece(text),
                f"#{position}: {text!r} · accepted · draft {draft!r}")
