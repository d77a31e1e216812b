"""Model time the display cannot inflate: the model computing and the page drawing take turns.

A run's worker computes between the frames it hands over; the tab's handler draws them. On a
CPU both want the same cores (and the same interpreter lock), so a busy display would stretch
every forward it overlaps, and the model clock (engine/metrics.py `ModelClock`, wall time
outside the frame hand-over) would count the stretch as model time. Here the worker holds the
turnstile while it computes and lets go only while it hands a frame over; the handler holds it
while it draws (Gradio's post-processing of the update included, up to the handler's next
step). A draw waits for the forward in progress to end; the next forward waits for a draw that
is waiting or running. Every wait of the worker falls inside the hand-over, where the model
clock is paused, so model time is time spent computing alone.

Nothing here orders the worker's lanes among themselves (Compare interleaves its two models in
one thread); `open()` lets everybody through for good (the run is closing).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Turnstile:
    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._computing = 0              # workers inside a computation
        self._drawing = 0                # draws in progress
        self._waiting = 0                # draws waiting for a computation to end
        self._open = False

    def start_computing(self) -> None:
        """The worker begins computing: first every draw asked for so far runs to its end."""
        with self._turn:
            while (self._drawing or self._waiting) and not self._open:
                self._turn.wait()
            self._computing += 1

    def stop_computing(self) -> None:
        with self._turn:
            self._computing = max(0, self._computing - 1)
            self._turn.notify_all()

    def hand_over(self) -> None:
        """Between two forwards: let a waiting draw run, then go on computing."""
        self.stop_computing()
        self.start_computing()

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """The display draws: waits for the forward in progress, and holds the next one back."""
        with self._turn:
            self._waiting += 1
            try:
                while self._computing and not self._open:
                    self._turn.wait()
            finally:
                self._waiting -= 1
            self._drawing += 1
        try:
            yield
        finally:
            with self._turn:
                self._drawing -= 1
                self._turn.notify_all()

    def open(self) -> None:
        """No more turns: nothing waits any longer (a closing run must never block its worker)."""
        with self._turn:
            self._open = True
            self._turn.notify_all()
