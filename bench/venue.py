"""Where a benchmark's tool calls run (`--via`): on the World itself, or through the shop's and the
office's web pages in headless Chromium (world/webmcp/venue.py), for tasks and conversations alike;
through the pages, `--webmcp` says whose WebMCP runs them (the browser's own, the polyfill, or auto),
and the report says which did (`webmcp`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

VIAS = ("world", "webmcp")
WEBMCP_MODES = ("auto", "native", "polyfill")


def venue(via: str, webmcp: str = "auto") -> Any:
    """A context manager giving the pages (a PageVenue) for `webmcp`, None for `world`."""
    if via == "world":
        return contextlib.nullcontext(None)
    if via != "webmcp":
        raise ValueError(f"Unknown --via {via!r}; choose one of {', '.join(VIAS)}.")
    from world.webmcp.driver import CHROMIUM
    from world.webmcp.venue import PageVenue

    if not Path(CHROMIUM).exists():
        raise OSError(f"--via webmcp needs Chromium at {CHROMIUM} (apt-get install -y chromium).")
    return PageVenue(webmcp=webmcp)


def via_of(pages: Any) -> str:
    return "world" if pages is None else "webmcp"


def webmcp_of(pages: Any) -> str | None:
    """native or polyfill: whose WebMCP ran the calls through the pages (None on the World)."""
    return None if pages is None else pages.driver.webmcp
