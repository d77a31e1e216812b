"""The numbers a person sees about a generation, defined once. Every tab, plot, replay, export
and benchmark takes them from here, with the labels below, so one answer reads the same
everywhere.

- answer tokens: positions of the canvas before its first EOS, pad and mask left out. EOS, the
  EOS fill after an early stop, and pad are never answer tokens: never counted, never drawn as new.
- forwards (NFE): model forwards that produced logits for sampling (engine/generate.py).
- model time: seconds inside the model's forwards only; the clock stops while a consumer holds
  a frame (streaming, drawing, the playback pace). Frame.elapsed_s reads this clock. The app's
  runs also keep their display from computing while a forward runs (app/turnstile.py), so a busy
  page cannot stretch a forward on a shared CPU.
- wall time: seconds the person waited, from the request to the last update (the app sets it;
  loading, streaming and the playback pace included).
- first answer token: model time when the first answer token was committed.
- tokens per forward = answer tokens / forwards; tokens/s = answer tokens / model time.
- edits: rewrites of answer positions (Frame.edits: a decided token replaced by another, by an
  edit rule or after a remask). A position counts once as decided however often it is rewritten,
  so tokens per forward is unchanged by edits; the edits are counted on their own.

Every line of numbers says what it covers (SCOPES): one generation (one model reply: a tool
call or an answer), a turn (a chat answer: its tool calls and its answer, each a generation), or
an agent episode; `summary_line(stats, scope)` writes the scope first, one way everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from engine.trace import Frame, Stats

# One label per number, used verbatim by every view.
LABELS = {
    "new_tokens": "answer tokens",
    "nfe": "forwards (NFE)",
    "tokens_per_forward": "tokens per forward",
    "seconds": "model time",
    "wall_s": "wall time",
    "first_token_s": "first answer token",
    "tokens_per_s": "tokens/s",
    "stop_reason": "stopped by",
    "edits": "edits",
    "upstream_tokens_per_forward": "tokens per forward (transformers' count)",
}
# What a line of numbers covers; every view names it in these words (scope_label).
SCOPES = {
    "generation": "this generation",      # one model reply: one call of engine.generate
    "turn": "this turn",                  # a chat answer or a Compare race: every generation of it
    "episode": "this episode",            # an agent run: every step
}
# One sentence each, for tooltips, info lines and the docs.
MEANINGS = {
    "new_tokens": "Tokens of the answer: everything before the first end-of-sequence token, without padding.",
    "nfe": "Model forwards that proposed tokens (denoising rounds, or AR steps).",
    "tokens_per_forward": "Answer tokens divided by forwards: how many tokens one forward decided on average.",
    "seconds": "Time spent inside the model's forwards only, while nothing is drawn (not streaming, drawing or "
               "the playback pace: the page waits for a forward to end before it draws).",
    "wall_s": "Time you waited, from pressing Send to the last update (loading and playback pace included).",
    "first_token_s": "Model time until the first answer token was decided.",
    "tokens_per_s": "Answer tokens divided by model time.",
    "stop_reason": "length (the canvas was full), eos (the model ended its answer) or cancelled (Stop).",
    "edits": "Decided answer tokens rewritten to another token (editing and remasking samplers); an edited "
             "position still counts once in answer tokens.",
    "upstream_tokens_per_forward": "DiffusionGemma only: transformers' generate counts every generated token that "
                                   "is not padding, the end-of-sequence token included, over the same decoder "
                                   "forwards; answer tokens leave the end-of-sequence token out, so this is higher "
                                   "by 1/forwards when the answer ended.",
}


@dataclass(frozen=True)
class Ends:
    """The ids that are not answer text: EOS ends the answer, pad is dropped, mask is undecided."""

    eos_ids: frozenset[int]
    pad_id: int | None = None
    mask_id: int | None = None
    length: int | None = None           # the generation length: aligned blocks run the canvas past it

    @classmethod
    def of(cls, backend: Any, length: int | None = None) -> Ends:
        mask = backend.mask_id if backend.kind == "diffusion" else None
        return cls(frozenset(int(t) for t in backend.eos_ids), backend.pad_id, mask, length)

    @classmethod
    def of_result(cls, result: Any, length: int | None = None) -> Ends:
        """The ends a finished generation recorded (engine.trace.Result): a stored one needs no backend."""
        return cls(frozenset(result.eos_ids), result.pad_id, result.mask_id, length)

    def cut(self, canvas: Sequence[int]) -> int:
        """Index of the first EOS in the canvas (its length when there is none), at most `length`."""
        end = len(canvas) if self.length is None else min(len(canvas), self.length)
        return next((i for i, t in enumerate(canvas[:end]) if t in self.eos_ids), end)

    def answer_positions(self, canvas: Sequence[int]) -> list[int]:
        """Positions that hold an answer token: before the first EOS, not pad, not mask."""
        return [i for i, t in enumerate(canvas[: self.cut(canvas)]) if t != self.pad_id and t != self.mask_id]

    def answer_ids(self, canvas: Sequence[int]) -> list[int]:
        return [int(canvas[i]) for i in self.answer_positions(canvas)]


def decided_answer_positions(frame: Frame, ends: Ends) -> list[int]:
    """The answer positions of a frame's canvas that are decided: all of them, except on a
    uniform-noise step inside a canvas, whose draft is not decided until the canvas ends."""
    positions = ends.answer_positions(frame.canvas)
    if frame.noise is not None and not frame.noise.stop_rule:
        positions = [p for p in positions if p < frame.noise.start]
    return positions


def answer_commits(frames: Sequence[Frame], ends: Ends) -> list[int]:
    """Answer tokens decided by each frame, judged against the last frame's canvas (a position
    that later falls after the answer's EOS, or is EOS fill, does not count). A position counts
    in the frame that first decided it: a rule that rewrites decided tokens (SDAR's) changes a
    token, not how many are decided, so the counts sum to the answer length."""
    if not frames:
        return []
    undecided = set(ends.answer_positions(frames[-1].canvas))
    out = []
    for f in frames:
        decided = {position for position, _t, _c in f.committed if position in undecided}
        undecided -= decided
        out.append(len(decided))
    return out


def edit_counts(frames: Sequence[Frame], ends: Ends) -> list[int]:
    """Rewrites of answer positions made by each frame (Frame.edits), judged against the last
    frame's canvas as answer_commits is."""
    if not frames:
        return []
    answer = set(ends.answer_positions(frames[-1].canvas))
    return [sum(position in answer for position, _old, _new in f.edits) for f in frames]


def answer_progress(frames: Sequence[Frame], ends: Ends) -> list[int]:
    """Running total of answer_commits: answer tokens decided after each frame."""
    out, total = [], 0
    for committed in answer_commits(frames, ends):
        total += committed
        out.append(total)
    return out


def upstream_tokens_per_forward(frames: Sequence[Frame], ends: Ends, stop_reason: str) -> float:
    """tokens_per_forward as transformers 5.25's DiffusionGemma `generate` returns it
    (`_compute_tokens_per_forward`): the generated canvases' tokens that are not pad, after it padded
    everything past the first EOS of the canvas it stopped on, over the decoder forwards. It keeps
    the EOS itself (answer tokens do not), and with no pad id it counts every token."""
    if not frames:
        return 0.0
    canvas = frames[-1].canvas
    if stop_reason == "eos":
        canvas = canvas[: ends.cut(canvas) + 1]
    kept = sum(t != ends.pad_id for t in canvas) if ends.pad_id is not None else len(canvas)
    return tokens_per_forward(kept, frames[-1].nfe)


def tokens_per_forward(answer_tokens: int, forwards: int) -> float:
    return answer_tokens / forwards if forwards else 0.0


def tokens_per_second(answer_tokens: int, model_s: float) -> float:
    return answer_tokens / model_s if model_s > 0 else 0.0


def numbers(frames: Sequence[Frame], ends: Ends, stop_reason: str, wall_s: float | None = None) -> Stats:
    """Every number of a (possibly partial) list of frames. Model time is the last frame's clock."""
    if not frames:
        return Stats(nfe=0, new_tokens=0, tokens_per_forward=0.0, seconds=0.0, tokens_per_s=0.0,
                     first_token_s=None, stop_reason=stop_reason, wall_s=wall_s)
    per_frame = answer_commits(frames, ends)
    answer = len(decided_answer_positions(frames[-1], ends))
    nfe, model_s = frames[-1].nfe, frames[-1].elapsed_s
    first = next((f.elapsed_s for f, n in zip(frames, per_frame) if n), None)
    return Stats(nfe=nfe, new_tokens=answer, tokens_per_forward=tokens_per_forward(answer, nfe), seconds=model_s,
                 tokens_per_s=tokens_per_second(answer, model_s), first_token_s=first, stop_reason=stop_reason,
                 wall_s=wall_s, edits=sum(edit_counts(frames, ends)))


def combined(parts: Sequence[Stats], wall_s: float | None = None) -> Stats:
    """The numbers of one answer made of several generations (a chat turn with tool steps, an
    agent episode): answer tokens, forwards and model time add up; the first answer token is
    the model time before the first generation that had one plus its own; the last generation
    says why it stopped."""
    tokens = sum(part.new_tokens for part in parts)
    nfe = sum(part.nfe for part in parts)
    model_s = sum(part.seconds for part in parts)
    first, before = None, 0.0
    for part in parts:
        if part.first_token_s is not None:
            first = before + part.first_token_s
            break
        before += part.seconds
    return Stats(nfe=nfe, new_tokens=tokens, tokens_per_forward=tokens_per_forward(tokens, nfe), seconds=model_s,
                 tokens_per_s=tokens_per_second(tokens, model_s), first_token_s=first,
                 stop_reason=parts[-1].stop_reason if parts else "length", wall_s=wall_s,
                 edits=sum(part.edits for part in parts))


def with_wall(stats: Stats, wall_s: float) -> Stats:
    """The same numbers with the wall time the app measured around them."""
    return replace(stats, wall_s=float(wall_s))


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f} s"


def formatted(stats: Stats) -> dict[str, str]:
    """Each number as text, keyed like LABELS (wall time only when measured)."""
    out = {
        "new_tokens": str(stats.new_tokens), "nfe": str(stats.nfe),
        "tokens_per_forward": f"{stats.tokens_per_forward:.2f}", "seconds": _seconds(stats.seconds),
        "wall_s": _seconds(stats.wall_s), "first_token_s": _seconds(stats.first_token_s),
        "tokens_per_s": f"{stats.tokens_per_s:.1f}", "stop_reason": stats.stop_reason, "edits": str(stats.edits),
    }
    if stats.wall_s is None:
        del out["wall_s"]
    if not stats.edits:                 # shown only where a run rewrote something
        del out["edits"]
    if stats.upstream_tokens_per_forward is not None:   # a uniform-noise run: transformers' count beside ours
        out["upstream_tokens_per_forward"] = f"{stats.upstream_tokens_per_forward:.2f}"
    return out


def labelled(stats: Stats) -> list[tuple[str, str]]:
    """(label, value) pairs in LABELS order."""
    values = formatted(stats)
    return [(LABELS[k], values[k]) for k in LABELS if k in values]


def scope_label(scope: str, generations: int = 0, index: int = 0, of: int = 0, within: str = "turn") -> str:
    """What a line of numbers covers, in words: "this turn (2 generations)", "this generation
    (2 of 3 in this turn)", "this generation (number 2 of this turn)" while the turn runs on
    (`within` "episode": of this episode)."""
    if scope not in SCOPES or within not in SCOPES:
        raise ValueError(f"scope must be one of {sorted(SCOPES)}, got {scope!r} (within {within!r}).")
    text = SCOPES[scope]
    if scope == "generation" and index and (of > 1 or not of):
        text += f" ({index} of {of} in {SCOPES[within]})" if of else f" (number {index} of {SCOPES[within]})"
    elif scope != "generation" and generations:
        text += f" ({generations} generation{'s' if generations != 1 else ''})"
    return text


def summary_line(stats: Stats, scope: str | None = None, generations: int = 0) -> str:
    """The one-line summary every view prints: `this turn (2 generations): answer tokens 25 ·
    forwards (NFE) 4 · ...` (without a scope: the numbers alone)."""
    numbers_text = " · ".join(f"{label} {value}" for label, value in labelled(stats))
    return f"{scope_label(scope, generations)}: {numbers_text}" if scope else numbers_text


class ModelClock:
    """Seconds spent computing, paused while a frame is out with its consumer.

    `with clock.paused(): yield frame` keeps whatever the consumer does with the frame (drawing,
    streaming, sleeping for the playback pace, another model's turn) out of model time.
    """

    def __init__(self, clock=time.perf_counter) -> None:
        self._clock = clock
        self.started = clock()
        self._paused_s = 0.0

    def elapsed(self) -> float:
        return self._clock() - self.started - self._paused_s

    def wall(self) -> float:
        return self._clock() - self.started

    @contextmanager
    def paused(self) -> Iterator[None]:
        left = self._clock()
        try:
            yield
        finally:
            self._paused_s += self._clock() - left


def total_tokens_per_forward(pairs: Iterable[tuple[int, int]]) -> float:
    """tokens per forward over many generations: (answer tokens, forwards) summed, then divided."""
    tokens = forwards = 0
    for answer_tokens, model_forwards in pairs:
        tokens, forwards = tokens + answer_tokens, forwards + model_forwards
    return tokens_per_forward(tokens, forwards)
