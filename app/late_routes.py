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

API, APPS = "/v1/", "/apps/"
HOLD_S = 30.0
POLL_S = 0.02


class LateRoutes:
    def __init__(self, app: Any, mounted: threading.Event) -> None:
        self.app = app
        self.mounted = mounted

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        prefix = self._late(scope) if scope["type"] in ("http", "websocket") and not self.mounted.is_set() else None
        if prefix is not None:
            waited = 0.0
            while not self.mounted.is_set() and waited < HOLD_S:
                await asyncio.sleep(POLL_S)
                waited += POLL_S
            if not self.mounted.is_set() and scope["type"] == "http":
                await _starting(send, prefix)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _late(scope: dict[str, Any]) -> str | None:
        """Which of the late prefixes the request is for, or None."""
        path, root = scope.get("path", ""), scope.get("root_path", "").rstrip("/")
        return next((p for p in (API, APPS) if path.startswith(p) or path.startswith(root + p)), None)


STARTING = "The playground is still starting; try again in a few seconds."


async def _starting(send: Any, prefix: str | None) -> None:
    # each in the error shape of its routes: OpenAI's for /v1, the web apps' own (world/webapps/server.py)
    error = ({"error": {"message": STARTING, "type": "server_error", "param": None, "code": "starting"}}
             if prefix == API else {"error": STARTING, "code": "starting"})
    body = json.dumps(error).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"5")]})
    await send({"type": "http.response.body", "body": body})
