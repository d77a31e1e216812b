"""The one origin the WebMCP driver keeps to: how an origin is spelled, the URLs outside it, and
the error for a URL the driver will not open."""

from __future__ import annotations

import re
from urllib.parse import urlsplit


class OutsideOrigin(ValueError):
    """A URL outside the origin the driver was opened for."""


def first_line(error: BaseException) -> str:
    """What a playwright error says, in one line short enough for a sentence to a person."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:160]


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def outside_of(origin: str) -> re.Pattern[str]:
    """The URLs outside `origin` (as origin_of spells it): an http(s) URL whose scheme, host and
    port are not the origin's. Chromium drops a default port from a URL, so for 80 / 443 the port is
    optional. Given to playwright as a regex, the browser matches it itself: a request to the origin
    never leaves the browser to be looked at (a catch-all route would send every one of the page's
    own fetches to Python and back first), and one elsewhere is still stopped."""
    parts = urlsplit(origin)
    default = {"http": 80, "https": 443}.get(parts.scheme) == parts.port
    port = f"(?::{parts.port})?" if default else f":{parts.port}"
    own = re.escape(f"{parts.scheme}://{parts.hostname}") + port + "(?=[/?#]|$)"
    return re.compile(f"^(?!{own})https?://", re.IGNORECASE)
