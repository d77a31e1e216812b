"""ASGI middleware: a path that only looks like /v1 (`//v1/chat/completions`, `/v1`) gets an
OpenAI error object, not the framework's `{"detail": "Not Found"}`, so every client of /v1 reads
one shape of error. Real /v1 routes (app/api/routes.py) pass untouched."""

from __future__ import annotations

import json
import re
from typing import Any

_STRAY = re.compile(r"^/{2,}v1(/|$)|^/v1$")


class StrayApiPaths:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not _STRAY.match(path):
            await self.app(scope, receive, send)
            return
        wanted = re.sub(r"/{2,}", "/", path)[:80]
        body = json.dumps({"error": {"message": f"There is no route {path[:80]}; did you mean {wanted}/ routes "
                                                "such as /v1/chat/completions (one slash)?",
                                     "type": "invalid_request_error", "param": None, "code": "unknown_url"}}).encode()
        await send({"type": "http.response.start", "status": 404,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
