"""A site of fixed HTML pages served on loopback, for the WebMCP page tests (a third-party page
and the one it navigates to)."""

from __future__ import annotations

import contextlib

from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from world.webapps.server import serve_app_in_thread


@contextlib.contextmanager
def static_site(pages: dict[str, str]):
    """Serve path -> HTML; yields the site's base URL."""
    app = Starlette(routes=[Route(path, lambda _r, html=html: HTMLResponse(html)) for path, html in pages.items()])
    with serve_app_in_thread(app) as url:
        yield url
