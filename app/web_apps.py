"""The shop and the office web apps (world/webapps/) on the playground's own server, at /apps/.

Their worlds are kept per session id (world.webapps.sessions); a page opened by hand gets a
session on the Chat's world (app/conversation_world.py DEFAULT_WORLD: every style stocked). A call that changes
a world passes the rule every state-changing endpoint here applies (app/cross_site.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from world.webapps.server import routes
from world.webapps.sessions import WorldSessions

from . import cross_site
from .conversation_world import DEFAULT_WORLD, world_from_spec


def mount(app: Any, allowed_origins: Iterable[str] = (), api_key: str | None = None,
          sessions: WorldSessions | None = None) -> WorldSessions:
    """Serve /apps/ on the running FastAPI `app` (ahead of Gradio's own routes); returns the sessions."""
    sessions = sessions or WorldSessions(lambda: world_from_spec(DEFAULT_WORLD))
    origins = tuple(allowed_origins)

    def guard(request: Any) -> tuple[int, str, str] | None:
        refused = cross_site.refusal(request, origins, api_key)
        return None if refused is None else (refused.status, refused.code, refused.message)

    app.router.routes[0:0] = routes(sessions, guard)
    return sessions
