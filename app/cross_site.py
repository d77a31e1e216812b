"""Who may make this server act: the rule every state-changing endpoint applies (/v1, the web apps).

A page on another site can send a "simple" request (POST with Content-Type text/plain or a form)
without a CORS preflight; it cannot read the answer, but the server would still run and store.
So, unless the caller proved itself with the configured bearer key:
- a request that carries an Origin must come from this app's own origin (scheme://host of the
  request) or one named with --allow-origin; browsers always send Origin on cross-site POSTs;
- a request with a body must say Content-Type application/json, which no page can send to
  another site without a preflight, and the preflight finds no CORS headers here.
Clients outside a browser (curl, SDKs) send no Origin and pass.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.requests import Request

BODY_METHODS = ("POST", "PUT", "PATCH")   # a DELETE with a body is rare; its Origin is still checked


@dataclass(frozen=True)
class Refusal:
    status: int          # 403 foreign origin, 415 not JSON
    code: str
    message: str         # one sentence for the caller


def has_valid_key(request: Request, api_key: str | None) -> bool:
    if not api_key:
        return False
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), api_key.encode())


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}".lower()


def refusal(request: Request, allowed_origins: Iterable[str] = (), api_key: str | None = None) -> Refusal | None:
    """Why this request may not act (None: it may)."""
    if has_valid_key(request, api_key):
        return None
    origin = request.headers.get("origin")
    allowed = {own_origin(request), *(o.rstrip("/").lower() for o in allowed_origins)}
    if origin is not None and origin.rstrip("/").lower() not in allowed:
        return Refusal(403, "cross_site_request",
                       f"Requests from the page at {origin[:80]} may not act on this server: start it with "
                       "--allow-origin for that origin, or send the API key.")
    if request.method in BODY_METHODS:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return Refusal(415, "unsupported_media_type",
                           f"The body must be sent as Content-Type application/json, not {kind[:60] or 'nothing'}.")
    return None
