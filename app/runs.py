"""The one run path of every tab: config -> the model computes in a worker thread -> frames are
shown at the chosen pace -> Stop; the tab then saves the exchange in one transaction (app/saving.py).

The worker computes ahead and puts frames on a queue; the tab's handler (a generator) reads
them through `Run.events()`, which hands each frame over with `show` telling whether to draw it
now: at most `updates_per_second` when the pace is 0, else one drawn state every `pace_ms`. With
a pace, a forward that committed many tokens of its block is drawn in parts (`parts`,
visualizer/parts.py), each part an event of its own, labelled as a part, never as a round.
The worker and the drawing take turns (app/turnstile.py), so the display cannot stretch the
model's forwards: model time is time spent computing alone, whatever the pace.

The run counts the frames it computed and the frames its handler read, per lane. Once the
worker is over (or a Compare lane is), what is still drawn is a replay of finished work, and
`mode(lane)` says "replay" instead of "live"; `behind(lane)` is how many computed frames the
display has not reached yet.

Stop is cooperative: the Stop button sets the run's flag (`RunBoard.stop`); the worker's loop
reads it through `should_stop` (engine.generate.until_stopped asks after each forward), so the
engine ends the generation in progress as a cancelled Result and the loop returns normally; the
handler, still running, draws the stopped state and saves what was decided. Nothing is left
showing "live" after Stop. When Gradio closes the handler instead (a client's cancel, New chat),
`Run.close` sets the same flag, waits for the worker and hands back what it had not read.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.trace import Frame

from .throttle import Throttle
from .turnstile import Turnstile

JOIN_S = 2.0                 # how long closing a run waits for its worker to leave the model


class RunBoard:
    """The running runs, one per (browser session, tab): what the Stop and New chat buttons reach."""

    def __init__(self) -> None:
        self._runs: dict[tuple, Run] = {}
        self._lock = threading.Lock()

    def begin(self, key: tuple, run: Run) -> None:
        with self._lock:
            self._runs[key] = run

    def end(self, key: tuple, run: Run) -> None:
        with self._lock:
            if self._runs.get(key) is run:
                del self._runs[key]
        run.ended.set()

    def stop(self, key: tuple, discard: bool = False, wait_s: float = 0.0) -> bool:
        """Ask the run of `key` to stop (with `discard`, to save what it decided and draw nothing
        more), waiting up to `wait_s` for its handler to end; False when none was running."""
        with self._lock:
            run = self._runs.get(key)
        if run is None:
            return False
        run.discarded = run.discarded or discard
        run.flag.set()
        run.ended.wait(wait_s)
        return True

    def running(self, key: tuple) -> bool:
        with self._lock:
            return key in self._runs


def run_key(request: Any, tab: str) -> tuple:
    """Which run a Stop button means: this browser session's run in this tab."""
    return getattr(request, "session_hash", None), tab


@dataclass
class Event:
    kind: str                # "frame", "step", "lane_done", "done"
    value: Any = None
    lane: int = 0            # which model's run it belongs to (Compare has two lanes)
    show: bool = True        # frames: draw now (pace and throttle allowing)
    part: int = 1            # frames: which part of the forward to draw (1-based); part 1 is the first read
    parts: int = 1           # frames: in how many parts the forward is drawn


class Run:
    """One run of a tab. The worker calls `frame()` per forward and `put()` for anything else;
    the handler iterates `events()` inside `with run:`, which frees the run's Stop button when the
    handler is done (its last update drawn)."""

    def __init__(self, board: RunBoard, key: tuple, pace_ms: float = 0.0, updates_per_second: float = 20.0,
                 parts: Callable[[Frame, int], int] | None = None) -> None:
        self.board, self.key = board, key
        self.flag = threading.Event()            # Stop: the worker ends at its next forward
        self.ended = threading.Event()           # the handler is done
        self.discarded = False                   # New chat: save, but draw nothing more
        board.begin(key, self)
        self.pace_s = max(0.0, float(pace_ms or 0)) / 1000.0
        self.updates_per_second = updates_per_second
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._finished = False                   # the handler has read "done"
        self.started = time.perf_counter()
        self.parts = parts                       # (frame, lane) -> parts to draw it in, with a pace
        self.turnstile = Turnstile()             # computing and drawing take turns
        self.computed: dict[int, int] = {}       # lane -> frames the worker produced
        self.read: dict[int, int] = {}           # lane -> frames the handler has read
        self.over = threading.Event()            # the worker has returned: nothing more is computed
        self.lanes_over: set[int] = set()        # lanes whose computation ended (Compare)

    @property
    def stop_requested(self) -> bool:
        """Stop was pressed (or the handler was closed) before the run's events ended."""
        return self.flag.is_set()

    def should_stop(self) -> bool:
        """What the worker's loop asks after each forward (engine.generate.until_stopped)."""
        return self.flag.is_set()

    # -- the worker's side ------------------------------------------------------------------
    def frame(self, frame: Frame, lane: int = 0) -> None:
        """Hand one forward's frame over (called inside the generation's paused clock), letting a
        waiting draw run before the next forward."""
        self.computed[lane] = self.computed.get(lane, 0) + 1
        self._queue.put(Event("frame", frame, lane))
        self.turnstile.hand_over()

    def put(self, kind: str, value: Any = None, lane: int = 0) -> None:
        self._queue.put(Event(kind, value, lane))

    def end_lane(self, lane: int, value: Any = None) -> None:
        """The worker's lane `lane` computed its last frame (Compare: that model is done)."""
        self.lanes_over.add(lane)
        self._queue.put(Event("lane_done", value, lane))

    def mode(self, lane: int = 0) -> str:
        """"live" while the lane still computes, "replay" once what is drawn is finished work."""
        return "replay" if self.over.is_set() or lane in self.lanes_over else "live"

    def behind(self, lane: int = 0) -> int:
        """Frames of `lane` computed that the display has not read yet."""
        return self.computed.get(lane, 0) - self.read.get(lane, 0)

    def start(self, work: Callable[[Run], Any], name: str = "run") -> None:
        """Run `work(self)` in a worker thread; its return value ends the events as "done"."""

        def body() -> None:
            self.turnstile.start_computing()
            try:
                ending = Event("done", work(self))
            except BaseException as exc:  # noqa: BLE001 - handed to the handler's thread and raised there
                ending = Event("error", exc)
            finally:
                self.turnstile.stop_computing()
            self.over.set()                      # before "done": frames read after this are a replay
            self._queue.put(ending)

        self._thread = threading.Thread(target=body, name=name, daemon=True)
        self._thread.start()

    # -- the handler's side -----------------------------------------------------------------
    def events(self) -> Iterator[Event]:
        """Every event in order, frames marked `show` at the pace (with a pace and `parts`, a
        frame comes once per part: part 1 is the first time it is read); ends after "done". The
        handler's work on each event, up to asking for the next one, is a draw (the turnstile
        holds the next forward back meanwhile). A worker's exception is raised here."""
        throttle = Throttle(self.updates_per_second)
        next_show = time.monotonic()
        while True:
            event = self._queue.get()
            if event.kind == "error":
                raise event.value
            if event.kind != "frame":
                self._finished = event.kind == "done"
                with self.turnstile.drawing():
                    yield event
                if self._finished:
                    return
                continue
            self.read[event.lane] = self.read.get(event.lane, 0) + 1
            paced = self.pace_s > 0 and not self.flag.is_set()
            count = max(1, int(self.parts(event.value, event.lane))) if paced and self.parts is not None else 1
            for part in range(1, count + 1):
                if self.flag.is_set():
                    if part > 1:
                        break                        # Stop: the rest of this forward's parts are skipped
                    show = False                     # catching up after Stop: draw only the end
                elif self.pace_s > 0:
                    wait = next_show - time.monotonic()
                    if wait > 0:
                        self.flag.wait(wait)         # Stop cuts the wait short
                    next_show = time.monotonic() + self.pace_s
                    show = not self.flag.is_set()
                else:
                    show = throttle.ready()
                with self.turnstile.drawing():
                    yield dataclasses.replace(event, show=show, part=part, parts=count)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self.board.end(self.key, self)

    def close(self) -> list[Event]:
        """Stop the worker (if still going) and wait for it to leave the model; returns the frames
        and steps it left unread, in order (the last step the cancelled generation, when the worker
        stopped in time)."""
        if not self._finished:
            self.flag.set()
        self.turnstile.open()                    # nothing the handler holds may keep the worker waiting
        if self._thread is not None:
            self._thread.join(timeout=JOIN_S)
        left = []
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return left
            if event.kind in ("frame", "step"):
                left.append(event)
