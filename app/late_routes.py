"""ASGI middleware: /v1 and /apps/ wait for their routes instead of answering 404.

Gradio's launch() starts the server and checks its own page before it returns; only then can
launch.serve add the web apps (/apps/) and the API (/v1) to the running app. A request for either
that arrives in between (a browser opened on the printed URL, a client that polled the page) would
get a 404 for a route that appears a moment later. Those requests are held until serve says the
routes are in, for at most HOLD_S; every other path (Gradio's own start-up checks included, which
run before launch() returns) passes at once, so holding cannot deadlock the start.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

LATE_PREFIXES = ("/v1/", "/apps/")
HOLD_S = 30.0
POLL_S = 0.02


class LateRoutes:
    def __init__(self, app: Any, mounted: threading.Event) -> None:
        self.app = app
        self.mounted = mounted

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self.mounted.is_set() and self._late(scope):
            waited = 0.0
            while not self.mounted.is_set() and waited < HOLD_S:
                await asyncio.sleep(POLL_S)
                waited += POLL_S
            if not self.mounted.is_set() and scope["type"] == "http":
                await _starting(send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _late(scope: dict[str, Any]) -> bool:
        path, root = scope.get("path", ""), scope.get("root_path", "").rstrip("/")
        return any(path.startswith(prefix) or path.startswith(root + prefix) for prefix in LATE_PREFIXES)


async def _starting(send: Any) -> None:
    body = json.dumps({"error": {"message": "The playground is still starting; try again in a few seconds.",
                                 "type": "server_error", "param": None, "code": "starting"}}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"5")]})
    await send({"type": "http.response.body", "body": body})
