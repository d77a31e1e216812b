"""The Agent tab's and the Chat's tool calls run in the playground's own web pages (/apps/, app/web_apps.py):
one headless Chromium per AppContext (world/webmcp/driver.py), started on first use and closed
with the app, drives the shop and the office pages under the very page session the frame beside
the panel shows (app/world_page.py), so the person watches the page the agent acts on.

Playwright's sync API belongs to the thread that started it, and a run's worker is a new thread
each time, so every browser action goes through one thread of its own; one run uses the pages at
a time (a second one is told so, in a sentence). The driver refuses any origin but the app's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from world.format import ToolSet
from world.state import World
from world.webmcp.driver import PageToolsOf, WebMCPDriver, first_line
from world.webmcp.venue import APPS

from .world_page import WorldPages, page_for

BUSY_S = 5.0
WORLD, PAGES = "world", "pages"
WHERE_CHOICES = [("the built-in world", WORLD), ("its web pages (WebMCP)", PAGES)]


class PagesUnavailable(Exception):
    """Why the tools cannot run in the web pages now: one sentence for the person."""


class PageBrowser:
    """The app's browser on its own pages; `visit(key)` lends it to one run."""

    def __init__(self, world_pages: WorldPages, url_of: Callable[[], str],
                 driver_factory: Callable[..., Any] = WebMCPDriver, timeout_s: float = 10.0) -> None:
        self.world_pages, self._url_of = world_pages, url_of
        self._factory, self.timeout_s = driver_factory, timeout_s
        self._driver: Any = None
        self._base = ""
        self._pool: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()
        self._busy = threading.Lock()

    def _do(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._thread().submit(fn, *args).result()

    def _thread(self) -> ThreadPoolExecutor:
        """The one thread every browser action runs on (made on first use)."""
        with self._guard:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="webmcp-driver")
            return self._pool

    def _start(self) -> None:
        if self._driver is not None:
            return
        base = (self._url_of() or "").rstrip("/")
        if not base:
            raise PagesUnavailable("The web pages are not served by this app, so the tools can run only in the "
                                   "built-in world.")
        try:
            self._driver = self._factory(base, timeout_s=self.timeout_s).__enter__()
        except Exception as exc:  # noqa: BLE001 - a missing or broken Chromium becomes a sentence
            raise PagesUnavailable(f"The browser that runs the web pages could not start ({first_line(exc)}); "
                                   "pick 'the built-in world' to run the tools there.") from None
        self._base = base

    def warm(self, where: str) -> None:
        """Start the browser in the background once a person picks the pages (`where` is PAGES), so
        the first run does not wait seconds for it; a start that fails is tried again, and said, by
        the run's `visit`."""
        if where == PAGES and self._driver is None and self._url_of():
            self._thread().submit(self._start)

    @property
    def webmcp(self) -> str:
        """native or polyfill: whose WebMCP the browser runs the pages' tools on ("" before it starts)."""
        return self._driver.webmcp if self._driver is not None else ""

    @contextmanager
    def visit(self, key: tuple) -> Iterator[Visit]:
        """The pages for one run of (browser session, tab) `key`, the browser started if need be."""
        if not self._busy.acquire(timeout=BUSY_S):
            raise PagesUnavailable("The web pages are busy with another run (an agent's or a chat turn); try again "
                                   "when it ends, or pick 'the built-in world'.")
        try:
            self._do(self._start)
            yield Visit(self, key)
        finally:
            self._busy.release()

    def close(self) -> None:
        if self._pool is None:
            return
        if self._driver is not None:
            self._do(self._driver.close)
            self._driver = None
        self._pool.shutdown(wait=False)
        self._pool = None


class Visit:
    """One run's use of the pages (world.agent's `pages`): its World goes under the key's page
    session, both apps open on it, and each call runs in the page that registered the tool."""

    def __init__(self, pages: PageBrowser, key: tuple) -> None:
        self.pages, self.key = pages, key
        self.session = pages.world_pages.session_for(key)

    @property
    def webmcp(self) -> str:
        return self.pages.webmcp

    def url(self, app: str, view: str = "") -> str:
        return f"{self.pages._base}/apps/{app}/?session={quote(self.session, safe='')}{view}"

    def episode(self, _task: dict[str, Any], world: World) -> InThread:
        self.pages.world_pages.sessions.add(world, self.session)
        driver = self.pages._driver

        def open_apps() -> PageToolsOf:
            # tabs on this session already (the chat's last turn, the tab's last run) are not loaded
            # again: every call reads the session's World on the server, whichever World it now is;
            # tabs on another session (another chat's) start over on this one in place
            driver.open_tabs([self.url(app) for app in APPS], keep_open=True, start_over=True)
            return PageToolsOf(driver)

        try:
            return InThread(self.pages._do(open_apps), self.pages._do)
        except Exception as exc:  # noqa: BLE001 - a page that does not load becomes a sentence
            raise PagesUnavailable(f"The web pages did not open ({first_line(exc)}).") from None

    def screenshot(self, path: Path, call: dict[str, Any] | None, result: Any = None) -> Path | None:
        """A PNG of the page `call` leads to (the order after a checkout) as the session's World is
        now; None when the browser could not take it (the run is kept all the same)."""
        app, view = page_for(call, result)
        try:
            return self.pages._do(self.pages._driver.screenshot, path, self.url(app, view))
        except Exception:  # noqa: BLE001 - a missing picture is said in the status, not raised
            return None


class InThread:
    """world.agent.PageTools whose every browser action runs on the driver's thread."""

    def __init__(self, inner: PageToolsOf, do: Callable[..., Any]) -> None:
        self._inner, self._do = inner, do

    @property
    def tools(self) -> ToolSet:
        return self._do(lambda: self._inner.tools)

    def execute(self, call: dict[str, Any]) -> Any:
        return self._do(self._inner.execute, call)


def screenshot_html(path: Path) -> str:
    """The page's final state as the tab shows it: the PNG inline (the app's policy allows data:
    images), with what it is."""
    import base64

    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return ('<figure class="dp-page-shot" id="agent-page-shot"><img alt="The page as the run left it" '
            f'src="data:image/png;base64,{data}"><figcaption>The page as the run left it, taken by the browser '
            'that ran the tools (also under Answer files).</figcaption></figure>')
