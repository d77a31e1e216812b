"""Batch a fast stream of frames into at most `per_second` UI updates.

A model on a GPU can finish a forward every few milliseconds; sending each frame to the browser
would swamp it. The handler asks `ready()` after every frame and sends an update only when it
says so; after the last frame it always sends one more (the final state is never dropped).
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Throttle:
    def __init__(self, per_second: float = 20.0, clock: Callable[[], float] = time.monotonic) -> None:
        if per_second <= 0:
            raise ValueError(f"per_second must be positive, got {per_second}.")
        self.interval = 1.0 / per_second
        self.clock = clock
        self._last: float | None = None
        self.pending = False            # a frame arrived that no update has shown yet

    def ready(self) -> bool:
        """Call once per frame: True when an update may go out now (and counts it as sent)."""
        now = self.clock()
        if self._last is None or now - self._last >= self.interval:
            self._last = now
            self.pending = False
            return True
        self.pending = True
        return False
