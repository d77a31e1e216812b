"""Who may talk to this server at all: the Host a request names, and the web page it comes from.

Every request, to the page, Gradio's own API (/gradio_api/, uploads included), /v1 and /apps/,
passes here first (the outermost of the middleware the app is built with, launch.serve):

- **Host.** The Host header must name this server: the address it listens on, or, on loopback,
  `localhost`, `127.0.0.1` and `[::1]`; on a wildcard address (0.0.0.0, ::) also this machine's
  name and addresses; and any name given with `--allow-host`. A page on evil.example whose name
  was re-pointed at 127.0.0.1 (DNS rebinding) sends `Host: evil.example` and is refused, so its
  script cannot pass for the app's own origin.
- **Origin.** A request that carries an Origin (every cross-site fetch, form post and WebSocket
  does) must come from the app's own origin (the checked Host) or one named with
  `--allow-origin`; `null` (a sandboxed frame, a file: page) is another origin. Requests without
  an Origin (curl, SDKs, a plain navigation) pass. A request with the server's bearer key passes.
- **CORS.** No CORS header is sent to any other origin. A preflight from an allowed origin is
  answered here (methods, the headers it asked for, no credentials); any other preflight is a 403.
  Gradio's own CORS middleware (gradio/route_utils.py CustomCORSMiddleware, Gradio 6), which
  answers preflights from any localhost origin with credentials, is told to stand aside
  (`quiet_gradio_cors`, after launch() builds it: the flag it reads when a parent app does CORS).

Refusals are one sentence, in the error shape of the routes asked (OpenAI's for /v1).
"""

from __future__ import annotations

import hmac
import json
import socket
from collections.abc import Iterable
from typing import Any

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
PREFLIGHT_HEADERS = {"access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
                     "access-control-max-age": "600"}


def host_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a Host header may carry for a server listening on `host` (ports aside)."""
    host = host.strip().strip("[]").lower()
    names = {host, *(h.strip().strip("[]").lower() for h in extra)}
    if host in LOOPBACK_NAMES or host.startswith("127."):
        names.update(LOOPBACK_NAMES)
    if host in WILDCARDS:
        names.update(LOOPBACK_NAMES)
        names.update(_machine_names())
    return frozenset(n for n in names if n)


def _machine_names() -> set[str]:
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    try:
        names.update(str(info[4][0]).lower() for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    return names


def hostname_of(host_header: str) -> str:
    """`example.com:7860` -> `example.com`; `[::1]:7860` -> `::1`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class OriginPolicy:
    """ASGI middleware. `hosts`: the names Host may carry; `settings`: an object whose
    `allowed_origins` and `api_key` are read at each request (the live app.api.ApiOptions)."""

    def __init__(self, app: Any, hosts: frozenset[str], settings: Any) -> None:
        self.app, self.hosts, self.settings = app, hosts, settings

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if hostname_of(host) not in self.hosts:
            await _refuse(scope, send, 421, "unknown_host",
                          f"This server does not answer to the name {host[:80]!r}; open it at the address it "
                          "printed, or start it with --allow-host for that name.")
            return
        origin = headers.get("origin")
        own = f"{'https' if scope.get('scheme') in ('https', 'wss') else 'http'}://{host}".lower()
        allowed = {o.rstrip("/").lower() for o in getattr(self.settings, "allowed_origins", ())}
        named = origin is not None and origin.rstrip("/").lower() in allowed
        if origin is not None and origin.rstrip("/").lower() != own and not named and not self._has_key(headers):
            await _refuse(scope, send, 403, "cross_site_request",
                          f"Requests from the page at {origin[:80]} may not use this server: start it with "
                          "--allow-origin for that origin, or send the API key.")
            return
        if scope["type"] == "http" and scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await _preflight(send, origin if named else None, headers.get("access-control-request-headers"))
            return
        if not named:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def _has_key(self, headers: dict[str, str]) -> bool:
        key = getattr(self.settings, "api_key", None)
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return bool(key) and scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())


async def _preflight(send: Any, origin: str | None, asked_headers: str | None) -> None:
    """A named origin's preflight: what it may send. Anyone else's: 403, no CORS header."""
    if origin is None:
        body = b"This origin may not use this server's API."
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    headers = [(k.encode(), v.encode()) for k, v in PREFLIGHT_HEADERS.items()]
    headers += [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
                (b"content-length", b"0")]
    if asked_headers:
        headers.append((b"access-control-allow-headers", asked_headers[:500].encode("latin-1")))
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(scope: dict[str, Any], send: Any, status: int, code: str, message: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    path = scope.get("path", "")
    error = ({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
             if path.startswith("/v1") else {"error": message, "code": code})
    body = json.dumps(error).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def quiet_gradio_cors(app: Any) -> bool:
    """Make Gradio's CORS middleware pass every request through (OriginPolicy decides instead):
    it does so when it believes a parent app configures CORS. Returns whether it was found."""
    if getattr(app, "middleware_stack", None) is None and hasattr(app, "build_middleware_stack"):
        app.middleware_stack = app.build_middleware_stack()     # what Starlette does on the first request
    node, found = getattr(app, "middleware_stack", None), False
    for _ in range(32):                          # the built chain: each middleware holds the next as .app
        if node is None:
            break
        if type(node).__name__ == "CustomCORSMiddleware":
            node._parent_configures_cors = True
            found = True
        node = getattr(node, "app", None)
    return found
