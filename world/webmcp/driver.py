"""A WebMCP consumer for the agent loop: Chromium through playwright opens pages of one origin,
lists the tools they registered (document.modelContext) and runs a call in the page that owns it;
the tool's return value is the observation.

The browser's own WebMCP is used where it has one (with its testing interface); otherwise the init
script polyfill.js provides document.modelContext as the draft spec describes, plus the consumer.
What goes wrong in a page is a typed observation, never an exception out of `call`:

    {"error": "page_error", "message": ...}       the tool threw, or the page broke
    {"error": "navigation", "url": ...}            the call navigated the page away
    {"error": "timeout", "seconds": ...}           no answer in time
    {"error": "unknown_tool", "name": ...}         no open page has that tool (now)
    {"error": "outside_origin", "url": ...}        the page tried to reach another origin (refused)

The driver stays inside one origin: `open` refuses any other (OutsideOrigin), and every request a
page makes elsewhere is aborted and kept in `refused`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from world.format import ToolSet
from world.tools import FINISH, TOOLS_BY_NAME

POLYFILL = (Path(__file__).parent / "polyfill.js").read_text(encoding="utf-8")
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling out, and a closed network refuses it.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
READY_S = 10.0


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


@dataclass
class PageTool:
    """A tool as a page registered it."""
    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    annotations: dict[str, bool] = field(default_factory=dict)
    tab: int = 0                     # which open page owns it

    def definition(self) -> dict[str, Any]:
        """In the registry's shape (world/tools.py), for the prompt and the parser."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                "annotations": dict(self.annotations)}


_CALL = """async ([name, input, ms]) => {
  const consumer = window.__webmcpConsumer;
  if (!consumer) return {__webmcp: "page_error", message: "The page has no WebMCP."};
  let timer;
  const late = new Promise(resolve => { timer = setTimeout(() => resolve({__webmcp: "timeout"}), ms); });
  try { return {answer: await Promise.race([consumer.call(name, input), late]), changes: consumer.changes}; }
  finally { clearTimeout(timer); }
}"""
_LIST = """async () => window.__webmcpConsumer
  ? {tools: await window.__webmcpConsumer.list(), changes: window.__webmcpConsumer.changes}
  : {tools: [], changes: -1}"""

# A page that offers window.startOver(url) (world/webapps/pages/webmcp-page.js) can go to another
# session of itself without a reload; any other page answers false and is loaded. Begun in every
# tab before any is awaited, so the tabs redraw side by side.
_BEGIN_START_OVER = """url => {
  window.__startingOver = typeof window.startOver === "function" ? window.startOver(url) : Promise.resolve(false);
  return true;
}"""
_END_START_OVER = """async () => (await window.__startingOver) === true"""


class WebMCPDriver:
    """Pages of `origin` in one headless Chromium (its own, or a playwright `browser` given, of which
    it opens one context); use as a context manager."""

    def __init__(self, origin: str, *, executable: str = CHROMIUM, timeout_s: float = 10.0,
                 browser: Any = None, init_scripts: tuple[str, ...] = ()) -> None:
        self.origin = origin_of(origin)
        self._given_browser, self._init_scripts = browser, init_scripts     # init_scripts run after the polyfill
        self.executable, self.timeout_s = executable, timeout_s
        self.refused: list[str] = []          # URLs the pages tried to reach outside the origin
        self.page_errors: list[str] = []      # uncaught errors in the pages
        self.call_ms: list[float] = []        # browser time of every call, for the benchmark
        self.pages: list[Any] = []
        self._listed: list[tuple[int, list[dict[str, Any]]] | None] = []   # per tab: (changes, tools) when read
        self._playwright = self._browser = self._context = None

    # -- life --------------------------------------------------------------------------------
    def __enter__(self) -> WebMCPDriver:
        from playwright.sync_api import sync_playwright

        try:
            if self._given_browser is None:
                self._playwright = sync_playwright().start()
                self._browser = self._playwright.chromium.launch(executable_path=self.executable, args=FLAGS)
            self._context = (self._given_browser or self._browser).new_context()
            for script in (POLYFILL, *self._init_scripts):
                self._context.add_init_script(script=script)
            self._context.route(outside_of(self.origin), self._guard)
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for closing in (self._context, self._browser):
            if closing is not None:
                try:
                    closing.close()
                except Exception:  # noqa: BLE001 - closing a browser that already went is no error
                    pass
        if self._playwright is not None:
            self._playwright.stop()
        self._playwright = self._browser = self._context = None
        self.pages, self._listed = [], []

    def _guard(self, route: Any) -> None:
        """Only URLs outside the origin reach here (outside_of); the check is kept as the rule."""
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and origin_of(url) != self.origin:
            self.refused.append(url)
            route.abort("blockedbyclient")
        else:
            route.continue_()

    # -- pages -------------------------------------------------------------------------------
    def check_url(self, url: str) -> None:
        if origin_of(url) != self.origin:
            self.refused.append(url)
            raise OutsideOrigin(f"{url[:120]} is outside {self.origin}; the driver opens only the app's own pages.")

    def open(self, url: str, tab: int | None = None, ready: str | None = "body[data-ready]") -> int:
        """Load `url` in tab `tab` (a new tab if None) and wait for `ready`; returns the tab."""
        self.check_url(url)
        tab = self._tab(tab)
        page = self.pages[tab]
        page.goto(url, wait_until="load", timeout=READY_S * 1000)
        if ready:
            page.wait_for_selector(ready, state="attached", timeout=READY_S * 1000)
        return tab

    def open_tabs(self, urls: list[str], ready: str = "body[data-ready]", keep_open: bool = False,
                  start_over: bool = False) -> None:
        """Load urls[k] in tab k, all at once: every navigation starts before any is waited for,
        so the pages load side by side (two tabs: faster than `open` one after the other).
        keep_open: a tab that shows that document already (the URL but its #fragment) stays as it is.
        start_over: a tab on the same page (the path) that offers window.startOver goes to the URL
        in place, as a load would show it but without one (a task's world swapped in)."""
        for url in urls:
            self.check_url(url)

        def load(tab: int) -> None:
            self.pages[tab].goto(urls[tab], wait_until="commit", timeout=READY_S * 1000)

        starting: list[int] = []
        for tab, url in enumerate(urls):
            page = self.pages[self._tab(tab)]
            if keep_open and not _moved(page.url, url):
                continue
            if start_over and _same_path(page.url, url) and _evaluated(page, _BEGIN_START_OVER, url):
                starting.append(tab)
            else:
                load(tab)
        started = set()
        for tab in starting:
            self._forget(tab)
            if _evaluated(self.pages[tab], _END_START_OVER) is True:
                started.add(tab)
            else:                                                          # it could not: load it
                load(tab)
        for tab in range(len(urls)):
            if tab not in started:       # a tab that started over is drawn: its document never left
                self.pages[tab].wait_for_selector(ready, state="attached", timeout=READY_S * 1000)

    def _tab(self, tab: int | None) -> int:
        """`tab`, or a new tab when it is None or not open yet."""
        if tab is not None and tab < len(self.pages):
            return tab
        page = self._context.new_page()
        page.on("pageerror", lambda error: self.page_errors.append(str(error)[:500]))
        self.pages.append(page)
        self._listed.append(None)
        tab = len(self.pages) - 1
        page.on("framenavigated", lambda frame, tab=tab: self._forget(tab) if frame.parent_frame is None else None)
        return tab

    def wait_for_tools(self, tab: int = 0, seconds: float = READY_S) -> list[PageTool]:
        """The tools tab `tab` registered, once it has any (a page may register them after its load
        event, when it has fetched what it needs), or [] after `seconds`."""
        deadline = time.perf_counter() + seconds
        while True:
            self._forget(tab)
            found = [tool for tool in self.tools() if tool.tab == tab]
            if found or time.perf_counter() > deadline:
                return found
            self.pages[tab].wait_for_timeout(50)

    def screenshot(self, path: str | Path, url: str, size: tuple[int, int] = (900, 640)) -> Path:
        """A PNG of `url` (a page of the origin) as it is now, in a tab of its own (the tabs the
        tools run in keep their tools and their place)."""
        self.check_url(url)
        page = self._context.new_page()
        try:
            page.set_viewport_size({"width": size[0], "height": size[1]})
            page.goto(url, wait_until="load", timeout=READY_S * 1000)
            page.wait_for_selector("body[data-ready]", state="attached", timeout=READY_S * 1000)
            page.screenshot(path=str(path))
        finally:
            page.close()
        return Path(path)

    def tools(self) -> list[PageTool]:
        """Every tool the open pages registered, in tab order; a name a later tab repeats is the
        first tab's."""
        found: dict[str, PageTool] = {}
        for tab, page in enumerate(self.pages):
            if self._listed[tab] is None:
                listed = page.evaluate(_LIST)
                self._listed[tab] = (listed["changes"], listed["tools"])
            for tool in self._listed[tab][1]:
                found.setdefault(tool["name"], PageTool(
                    name=tool["name"], description=tool.get("description") or "",
                    input_schema=tool.get("inputSchema") or {}, title=tool.get("title"),
                    annotations=tool.get("annotations") or {}, tab=tab))
        return list(found.values())

    def _forget(self, tab: int) -> None:
        if tab < len(self._listed):
            self._listed[tab] = None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool in the page that registered it; its return value, or a typed error."""
        owner = next((t for t in self.tools() if t.name == name), None)
        if owner is None:
            return {"error": "unknown_tool", "name": name}
        page = self.pages[owner.tab]
        before, refused_before = page.url, len(self.refused)
        started = time.perf_counter()
        try:
            answer = page.evaluate(_CALL, [name, arguments, int(self.timeout_s * 1000)])
        except Exception as error:  # noqa: BLE001 - playwright's errors: a page that went away or broke
            moved = _moved(page.url, before) or "destroyed" in str(error) or "navigat" in str(error)
            answer = {"__webmcp": "navigation" if moved else "page_error", "message": str(error).splitlines()[0][:300]}
        self.call_ms.append((time.perf_counter() - started) * 1000)
        if isinstance(answer, dict) and "changes" in answer:   # a toolchange since the list was read
            listed = self._listed[owner.tab]
            if listed is not None and listed[0] != answer["changes"]:
                self._forget(owner.tab)
            answer = answer["answer"]
        outside = self.refused[refused_before:]
        if outside:
            return {"error": "outside_origin", "url": outside[-1][:200]}
        kind = answer.get("__webmcp") if isinstance(answer, dict) else None
        if kind == "navigation" or _moved(page.url, before):
            self._settle(page, before)
            return {"error": "navigation", "url": page.url[:200]}
        if kind == "timeout":
            return {"error": "timeout", "seconds": self.timeout_s}
        if kind == "unknown_tool":
            return {"error": "unknown_tool", "name": name}
        if kind == "page_error":
            return {"error": "page_error", "message": answer.get("message", "")}
        return answer["value"] if isinstance(answer, dict) and "value" in answer else answer

    def _settle(self, page: Any, before: str) -> None:
        """After a navigation, the new document loaded (its tools registered) or given up on."""
        try:
            page.wait_for_url(lambda url: _moved(url, before), wait_until="load", timeout=READY_S * 1000)
        except Exception:  # noqa: BLE001 - a page that never loads is reported by the next call
            pass


def _evaluated(page: Any, script: str, *arg: Any) -> Any:
    """What `script` gives in `page`, or False when it throws (a page that failed to start over is
    loaded instead: the load shows what is wrong)."""
    try:
        return page.evaluate(script, *arg)
    except Exception:  # noqa: BLE001 - playwright's errors: the page broke or went away
        return False


def _document(url: str) -> str:
    """The URL but its #fragment: what a load fetches."""
    return url.split("#", 1)[0]


def _same_path(now: str, wanted: str) -> bool:
    """The same page (scheme, host and path), whatever its query and #fragment."""
    return _document(now).split("?", 1)[0] == _document(wanted).split("?", 1)[0]


def _moved(now: str, before: str) -> bool:
    """A navigation to another document: a change of the URL beyond its #fragment."""
    return _document(now) != _document(before)


class PageToolsOf:
    """The agent loop's view of the open pages (world.agent.PageTools): the tools they registered,
    read now, plus finish (the agent's own: it ends the turn and changes nothing a page shows);
    each call runs in its page."""

    def __init__(self, driver: WebMCPDriver) -> None:
        self.driver = driver
        self._known: ToolSet | None = None

    @property
    def tools(self) -> ToolSet:
        """The tools as the pages register them now (a navigation or a toolchange changes them)."""
        listed = [t.definition() for t in self.driver.tools()] + [TOOLS_BY_NAME[FINISH]]
        if self._known is None or self._known.tools != listed:
            self._known = ToolSet(listed)
        return self._known

    def execute(self, call: dict[str, Any]) -> Any:
        return self.driver.call(call["name"], call["arguments"])
