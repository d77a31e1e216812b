"""The worlds the web apps act on, one per session id (the `session` in a page's URL).

A session id is an unguessable token; the registry keeps the most recent MAX_SESSIONS and forgets
the oldest. Each world has its own lock: a page's calls and a reader of the end state (the
grader) never see half a tool call.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from world.state import World, make_world

MAX_SESSIONS = 256


@dataclass
class WorldSession:
    world: World
    lock: threading.Lock = field(default_factory=threading.Lock)


def background_world() -> World:
    return make_world(0, "heldout")


class WorldSessions:
    """session id -> World. `new_world` makes the world of a session a person opens by hand."""

    def __init__(self, new_world: Callable[[], World] = background_world, limit: int = MAX_SESSIONS) -> None:
        self._new_world, self._limit = new_world, limit
        self._sessions: OrderedDict[str, WorldSession] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, world: World | None = None, session_id: str | None = None) -> str:
        """Keep `world` (a fresh one if None) under a new id (or `session_id`); returns the id."""
        session_id = session_id or secrets.token_urlsafe(12)
        with self._lock:
            self._sessions[session_id] = WorldSession(world if world is not None else self._new_world())
            self._sessions.move_to_end(session_id)
            while len(self._sessions) > self._limit:
                self._sessions.popitem(last=False)
        return session_id

    def get(self, session_id: str) -> WorldSession | None:
        with self._lock:
            found = self._sessions.get(session_id)
            if found is not None:
                self._sessions.move_to_end(session_id)
            return found

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)
