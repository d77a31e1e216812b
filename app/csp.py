"""The Content-Security-Policy of the playground page: what the browser may load and run.

Escaping (visualizer/escape.py) keeps model text inert; this is the second line. Even if some
text did become an element, the browser fetches images only from the app (and data:/blob: URLs
the page makes itself), connects only to the app, runs only the app's scripts, frames only the
app and the sandboxed srcdoc preview, and sends forms nowhere else.

Gradio's page carries a few inline <script> blocks (its config). Each HTML response gets a fresh
nonce written into its inline scripts and into the policy, so those run and no injected one
does. 'unsafe-eval' is there because Gradio 6's gr.HTML (the live panel, the tables) compiles
its template with `new Function`; it lets the app's own scripts evaluate strings, not markup
add scripts: inline handlers (`onerror=`) and injected <script> stay blocked. Styles stay
'unsafe-inline': Gradio sets styles inline everywhere, and a style cannot fetch anything that
img-src and font-src do not allow.
"""

from __future__ import annotations

import re
import secrets
import threading
from typing import Any

POLICY = (
    "default-src 'self'",
    "script-src 'self' 'nonce-{nonce}' 'unsafe-eval'",   # gr.HTML compiles its templates with new Function
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",        # blob: and data: are made by the page itself (plots, downloads)
    "font-src 'self' data:",
    "connect-src 'self'",
    "media-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "frame-src 'self' about:",           # the sandboxed HTML preview is an srcdoc frame
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
)
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)(?=[\s>])", re.IGNORECASE)


def policy(nonce: str) -> str:
    """The header for a response whose inline scripts carry `nonce` ("none": no inline script runs)."""
    text = "; ".join(POLICY).format(nonce=nonce)
    return text.replace(" 'nonce-none'", "") if nonce == "none" else text


def add_nonce(html: bytes, nonce: str) -> bytes:
    """Every inline <script> of the page's own HTML gets nonce=...; scripts with a src load from 'self'."""
    return _INLINE_SCRIPT.sub(b'<script nonce="' + nonce.encode() + b'"', html)


OWN_POLICY = "/apps/"     # the web apps (engine/webapps/server.py) send their own, stricter policy


class ContentSecurityPolicy:
    """ASGI middleware: HTML responses get the policy (and nonces); the rest pass unchanged, and
    so do the web apps under /apps/, whose pages carry their own policy (no inline script, no eval)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        root = scope.get("root_path", "").rstrip("/")
        if scope["type"] != "http" or scope.get("path", "").startswith(root + OWN_POLICY):
            await self.app(scope, receive, send)
            return
        # The page is served at the root. Any other HTML (an exported answer opened from the app)
        # gets the policy without a nonce, so none of its inline scripts run.
        page = scope.get("path", "/").rstrip("/") == scope.get("root_path", "").rstrip("/")
        nonce = secrets.token_urlsafe(18) if page else "none"
        start: dict[str, Any] | None = None
        body: list[bytes] = []

        async def send_with_policy(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    await send(message)
                    return
                start = message                           # held until the whole page is here
                return
            if start is None:
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            html = b"".join(body)
            if page:                                      # only the app's own page gets nonces
                html = add_nonce(html, nonce)
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() not in (b"content-length", b"content-security-policy")]
            headers += [(b"content-length", str(len(html)).encode()),
                        (b"content-security-policy", policy(nonce).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": html, "more_body": False})

        await self.app(scope, receive, send_with_policy)


def page_middleware(mounted: threading.Event | None = None, hosts: frozenset[str] | None = None,
                    settings: Any = None) -> list[Any]:
    """The middleware the playground's FastAPI app is built with (Gradio's launch(app_kwargs=)).
    With `hosts`, the Host and Origin of every request are checked first (app/origin_policy.py;
    `settings` has the live allowed_origins and api_key). With `mounted`, requests for /v1 and
    /apps/ wait until it is set (app/late_routes.py)."""
    from starlette.middleware import Middleware

    from .api.stray_paths import StrayApiPaths
    from .late_routes import LateRoutes
    from .origin_policy import OriginPolicy
    from .toasts import BrowserToasts

    policy = [Middleware(OriginPolicy, hosts=hosts, settings=settings)] if hosts is not None else []
    late = [Middleware(LateRoutes, mounted=mounted)] if mounted is not None else []
    return [*policy, *late, Middleware(StrayApiPaths), Middleware(ContentSecurityPolicy), Middleware(BrowserToasts)]
