"""Error and warning messages are plain text; they become HTML only on their way to a browser.

Gradio's page renders the message of gr.Error / gr.Warning / gr.Info as HTML (a toast), and the
same message reaches API callers (gradio_client, curl) as text. So handlers raise plain
sentences (app/messages.py), and this middleware escapes the message fields of the event stream
(`/gradio_api/queue/data`) when a browser reads it: browsers mark every request with
`Sec-Fetch-Mode`, which scripts cannot set and other clients do not send.
"""

from __future__ import annotations

import json
from typing import Any

from visualizer.escape import html_text

STREAM_SUFFIX = "/queue/data"
_TEXT_FIELDS = ("error", "title", "log", "message")


def escape_event(event: bytes) -> bytes:
    """One server-sent event with its message fields HTML-escaped; anything else as it was."""
    lines = event.split(b"\n")
    for i, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        try:
            data = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(data, dict):
            lines[i] = b"data: " + json.dumps(_escaped(data), ensure_ascii=False).encode()
    return b"\n".join(lines)


def _escaped(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for key in _TEXT_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = html_text(out[key])
    if isinstance(out.get("output"), dict):
        out["output"] = _escaped(out["output"])
    return out


def _from_browser(scope: dict[str, Any]) -> bool:
    return any(name.lower() == b"sec-fetch-mode" for name, _ in scope.get("headers", []))


class BrowserToasts:
    """ASGI middleware: escapes toast text in the event stream a browser reads (module docstring)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope.get("path", "").endswith(STREAM_SUFFIX) or not _from_browser(scope):
            await self.app(scope, receive, send)
            return
        pending = b""

        async def send_escaped(message: dict[str, Any]) -> None:
            nonlocal pending
            if message["type"] != "http.response.body":
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [(k, v) for k, v in message.get("headers", [])
                                                      if k.lower() != b"content-length"]}
                await send(message)
                return
            pending += message.get("body", b"")
            more = message.get("more_body", False)
            *complete, pending = pending.split(b"\n\n")
            if not more and pending:
                complete, pending = [*complete, pending], b""
            body = b"".join(escape_event(event) + b"\n\n" for event in complete)
            await send({"type": "http.response.body", "body": body, "more_body": more})

        await self.app(scope, receive, send_escaped)
