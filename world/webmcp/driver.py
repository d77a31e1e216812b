"""A WebMCP consumer for the agent loop: Chromium through playwright opens pages of one origin,
lists the tools they registered (document.modelContext) and runs a call in the page that owns it;
the tool's return value is the observation.

Which WebMCP runs the tools is chosen at launch (`webmcp`, shown as `driver.webmcp`):
    native    the browser's own (Chromium 156+ launched with --enable-features=WebMCP): getTools()
              lists the page's tools, declarative forms included, and executeTool() runs the page's
              own execute (native.js is the consumer on it);
    polyfill  polyfill.js, a document.modelContext of our own that follows the browser's behaviour,
              for browsers without one;
    auto      native where the browser has it, else polyfill.
consumer.js, in every page before either, makes a call read the same in both.
What goes wrong in a page is a typed observation, never an exception out of `call`:

    {"error": "page_error", "message": ...}       the tool threw, or the page broke
    {"error": "navigation", "url": ...}            the call navigated the page away
    {"error": "timeout", "seconds": ...}           no answer in time
    {"error": "unknown_tool", "name": ...}         no open page has that tool (now)
    {"error": "outside_origin", "url": ...}        the page tried to reach another origin (refused)

After a navigation (a call that moved the page, or a page that moved by itself), the driver waits,
bounded, for the next document to load and register its tools before it lists or calls them: a call
is never run in a document that is going away, and a tool the next page registers late is found.

The driver stays inside one origin: `open` refuses any other (OutsideOrigin), and every request a
page makes elsewhere is refused and kept in `refused`: http(s) by a route (aborted), WebSockets by
the context's proxy (a dead one, the origin bypassed; page.on("websocket") reports them, workers'
included), WebRTC by the consumer (RTCPeerConnection refused and reported) and, where the driver
launches Chromium, by a flag that sends no UDP outside a proxy.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from world.webmcp.origin import OutsideOrigin, first_line, origin_of, outside_of
from world.webmcp.page_tools import PageTool, PageToolsOf

HERE = Path(__file__).parent
CONSUMER, NATIVE, POLYFILL = ((HERE / name).read_text(encoding="utf-8")
                              for name in ("consumer.js", "native.js", "polyfill.js"))
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling out, and a closed network refuses it.
# No UDP leaves but through a proxy (and there is none): WebRTC's STUN stays in.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--webrtc-ip-handling-policy=disable_non_proxied_udp"]
NATIVE_FLAG = "--enable-features=WebMCP"
NATIVE_SINCE = 156          # the first Chromium whose WebMCP has getTools / executeTool
MODES = ("native", "polyfill", "auto")
READY_S = 10.0
ARRIVE_S = 5.0              # how long a page that just loaded may take to register its first tools
QUIET_S = 0.05              # ... and how long its list must hold still to count as registered


def launch_flags(webmcp: str = "auto") -> list[str]:
    """Chromium's flags for a driver in mode `webmcp`: the browser's WebMCP on unless polyfill."""
    return FLAGS + ([] if webmcp == "polyfill" else [NATIVE_FLAG])


class WebMCPUnavailable(RuntimeError):
    """--webmcp native, on a browser without its own WebMCP."""


_CALL = """async ([name, input, ms, startOver]) => {
  const consumer = window.__webmcpConsumer;
  if (!consumer) return {answer: {__webmcp: "page_error", message: "The page has no WebMCP."}, changes: -1};
  if (startOver && !(typeof window.startOver === "function" && await window.startOver(startOver, {draw: false})))
    return {answer: {__webmcp: "no_start_over"}, changes: consumer.changes, leaving: null};
  const answer = await consumer.call(name, input, ms);
  const left = consumer.left(name);
  return {answer, changes: consumer.changes, leaving: consumer.leaving,
          left: left === undefined ? consumer.leaving : left};
}"""
# The tab's state in one round trip: its document, whether it is leaving, and its tools unless the
# driver holds them already (the same document and toolchange count).
_LIST = """async ([document_, changes]) => {
  const consumer = window.__webmcpConsumer;
  if (!consumer) return {document: null, changes: -1, leaving: null, tools: []};
  const same = consumer.document === document_ && consumer.changes === changes;
  return {document: consumer.document, changes: consumer.changes, leaving: consumer.leaving,
          tools: same ? null : await consumer.list()};
}"""
_ARRIVED = """before => !!window.__webmcpConsumer && window.__webmcpConsumer.document !== before
  && document.readyState === "complete\""""
_PROBE = """() => typeof document.modelContext?.getTools === "function"
  && typeof document.modelContext?.executeTool === "function\""""

# A page that offers window.startOver(url) (world/webapps/pages/webmcp-page.js) can go to another
# session of itself without a reload; any other page answers false and is loaded. Begun in every
# tab before any is awaited, so the tabs redraw side by side. A start-over that fails (a session
# the page cannot draw) answers false too, caught at once: left for _END_START_OVER's await, the
# rejection could be reported as unhandled first, a page error, depending on which came first.
_BEGIN_START_OVER = """url => {
  const going = typeof window.startOver === "function" ? window.startOver(url) : Promise.resolve(false);
  window.__startingOver = going.catch(() => false);
  return true;
}"""
_END_START_OVER = """async () => (await window.__startingOver) === true"""


@dataclass
class _Listing:
    """What the driver last read of a tab: its document, toolchange count and tools."""
    document: str | None
    changes: int
    tools: list[dict[str, Any]]


class WebMCPDriver:
    """Pages of `origin` in one headless Chromium (its own, or a playwright `browser` given, of which
    it opens one context); use as a context manager. `webmcp`: native, polyfill or auto (module
    docstring); a browser given should be launched with launch_flags(webmcp)."""

    def __init__(self, origin: str, *, executable: str = CHROMIUM, timeout_s: float = 10.0,
                 browser: Any = None, init_scripts: tuple[str, ...] = (), webmcp: str = "auto") -> None:
        if webmcp not in MODES:
            raise ValueError(f"Unknown WebMCP mode {webmcp!r}; choose one of {', '.join(MODES)}.")
        self.origin = origin_of(origin)
        self._given_browser, self._init_scripts = browser, init_scripts     # init_scripts run after the WebMCP
        self.executable, self.timeout_s, self.wanted = executable, timeout_s, webmcp
        self.webmcp = ""                      # native or polyfill, once launched
        self.refused: list[str] = []          # what the pages tried to reach outside the origin
        self.page_errors: list[str] = []      # uncaught errors in the pages
        self.call_ms: list[float] = []        # browser time of every call, for the benchmark
        self.pages: list[Any] = []
        self._listed: list[_Listing | None] = []      # per tab, when read
        self._changed: set[int] = set()       # tabs whose page said its tools or document changed since
        self._start_over: dict[int, str] = {}  # tab -> the URL it goes to in place before its next call
        self._playwright = self._browser = self._context = None
        self._dead_proxy: socket.socket | None = None

    # -- life --------------------------------------------------------------------------------
    def __enter__(self) -> WebMCPDriver:
        from playwright.sync_api import sync_playwright

        try:
            if self._given_browser is None:
                self._playwright = sync_playwright().start()
                self._browser = self._playwright.chromium.launch(executable_path=self.executable,
                                                                 args=launch_flags(self.wanted))
            browser = self._given_browser or self._browser
            self._context = browser.new_context(proxy=self._proxy())
            self.webmcp = self._choose(browser)
            self._context.expose_binding("__webmcpRefused", lambda _source, what: self.refused.append(str(what)[:300]))
            self._context.expose_binding("__webmcpChanged", self._page_changed)
            for script in (CONSUMER, NATIVE if self.webmcp == "native" else POLYFILL, *self._init_scripts):
                self._context.add_init_script(script=script)
            self._context.route(outside_of(self.origin), self._guard)
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for closing in (self._context, self._browser, self._dead_proxy):
            if closing is not None:
                try:
                    closing.close()
                except Exception:  # noqa: BLE001 - closing a browser that already went is no error
                    pass
        if self._playwright is not None:
            self._playwright.stop()
        self._playwright = self._browser = self._context = self._dead_proxy = None
        self.pages, self._listed = [], []

    def _proxy(self) -> dict[str, str]:
        """Everything but the origin goes to a proxy that answers nobody: a port this driver holds
        bound and never listens on. That is what stops WebSockets (no route sees them in a worker)."""
        self._dead_proxy = socket.socket()
        self._dead_proxy.bind(("127.0.0.1", 0))
        parts = urlsplit(self.origin)
        return {"server": f"http://127.0.0.1:{self._dead_proxy.getsockname()[1]}",
                "bypass": f"{parts.hostname}:{parts.port}"}

    def _choose(self, browser: Any) -> str:
        """native or polyfill, as asked; auto asks a page of the origin (answered here, never
        fetched) whether the browser has its own WebMCP."""
        if self.wanted == "polyfill":
            return "polyfill"
        page = self._context.new_page()
        try:
            probe = f"{self.origin}/__webmcp_probe__"
            page.route(probe, lambda route: route.fulfill(content_type="text/html", body="<!doctype html>"))
            page.goto(probe, wait_until="commit", timeout=READY_S * 1000)
            native = bool(page.evaluate(_PROBE))
        finally:
            page.close()
        if native or self.wanted == "auto":
            return "native" if native else "polyfill"
        raise WebMCPUnavailable(f"This browser (Chromium {browser.version}) has no WebMCP of its own: it needs "
                                f"Chromium {NATIVE_SINCE} or newer launched with {NATIVE_FLAG}; "
                                "--webmcp polyfill or auto runs the pages without it.")

    def _guard(self, route: Any) -> None:
        """Only URLs outside the origin reach here (outside_of); the check is kept as the rule."""
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and origin_of(url) != self.origin:
            self.refused.append(url)
            if route.request.is_navigation_request():
                route.fulfill(status=204)       # no content: the navigation ends and the document stays
            else:                               # (an abort would leave an error page, the proxy set)
                route.abort("blockedbyclient")
        else:
            route.continue_()

    def _page_changed(self, source: dict[str, Any]) -> None:
        """A page's consumer says its tools or its document changed (consumer.js): its listing is read
        again before the tools are next given (current_tools). The page pushes it, so a step that
        changed nothing costs no round trip to the browser."""
        if source.get("page") in self.pages:
            self._changed.add(self.pages.index(source["page"]))

    def _socket_opened(self, websocket: Any) -> None:
        """A WebSocket elsewhere is reported (the dead proxy stops it)."""
        if origin_of(websocket.url.replace("ws", "http", 1)) != self.origin:
            self.refused.append(websocket.url)

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
        self._listed[tab] = None
        self._start_over.pop(tab, None)
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
            self._listed[tab] = None
            self._start_over.pop(tab, None)
            self.pages[tab].goto(urls[tab], wait_until="commit", timeout=READY_S * 1000)

        starting: list[int] = []
        for tab, url in enumerate(urls):
            page = self.pages[self._tab(tab)]
            if keep_open and not _moved(page.url, url):
                continue
            if start_over and _same_path(page.url, url) and _evaluated(page, _BEGIN_START_OVER, url):
                starting.append(tab)
                self._start_over.pop(tab, None)
            else:
                load(tab)
        started = set()
        for tab in starting:
            if _evaluated(self.pages[tab], _END_START_OVER) is True:
                started.add(tab)                            # same document, same tools: the listing holds
            else:                                                          # it could not: load it
                load(tab)
        for tab in range(len(urls)):
            if tab not in started:       # a tab that started over is drawn: its document never left
                self.pages[tab].wait_for_selector(ready, state="attached", timeout=READY_S * 1000)

    def start_over_on_call(self, urls: list[str]) -> None:
        """As open_tabs(urls, start_over=True), but a tab on the same page goes to its URL only when
        a call next runs in it, in that call's own round trip, and draws what the call's answer
        brings: a tab the task never calls is never redrawn. Any other tab is loaded now."""
        load = []
        for tab, url in enumerate(urls):
            self.check_url(url)
            if tab < len(self.pages) and _same_path(self.pages[tab].url, url) and self._listed[tab] is not None:
                self._start_over[tab] = url
            else:
                load.append(tab)
        if load:
            self.open_tabs([urls[tab] if tab in load else self.pages[tab].url for tab in range(len(urls))],
                           keep_open=True)
            for tab in load:
                self._start_over.pop(tab, None)

    def _tab(self, tab: int | None) -> int:
        """`tab`, or a new tab when it is None or not open yet."""
        if tab is not None and tab < len(self.pages):
            return tab
        page = self._context.new_page()
        page.on("pageerror", lambda error: self.page_errors.append(str(error)[:500]))
        page.on("websocket", self._socket_opened)
        self.pages.append(page)
        self._listed.append(None)
        return len(self.pages) - 1

    def wait_for_tools(self, tab: int = 0, seconds: float = READY_S) -> list[PageTool]:
        """The tools tab `tab` registered, once it has any (a page may register them after its load
        event, when it has fetched what it needs), or [] after `seconds`."""
        deadline = time.perf_counter() + seconds
        while True:
            found = [tool for tool in self.tools() if tool.tab == tab]
            if found or time.perf_counter() > deadline:
                return found
            self.pages[tab].wait_for_timeout(25)

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
        """Every tool the open pages registered, read now, in tab order; a name a later tab repeats
        is the first tab's."""
        for tab in range(len(self.pages)):
            self._changed.discard(tab)
            self._read(tab)
        return self._known()

    def current_tools(self) -> list[PageTool]:
        """The tools as tools() gives them, read again only in tabs never read or whose page said
        it changed since (a toolchange, a navigation, a new document: consumer.js tells the driver);
        what the agent loop reads each step. The page's word arrives with the driver's next exchange
        with the browser, so a change between two calls is seen by the call after it at the latest
        (a call to a name not listed reads every tab first)."""
        for tab in range(len(self.pages)):
            if tab in self._changed or self._listed[tab] is None:
                self._changed.discard(tab)
                self._read(tab)
        return self._known()

    def _known(self) -> list[PageTool]:
        """The tools as last read (tools() reads them again)."""
        found: dict[str, PageTool] = {}
        for tab, listing in enumerate(self._listed):
            for tool in listing.tools if listing is not None else ():
                found.setdefault(tool["name"], PageTool(
                    name=tool["name"], description=tool.get("description") or "",
                    input_schema=tool.get("inputSchema") or {}, title=tool.get("title"),
                    annotations=tool.get("annotations") or {}, tab=tab))
        return list(found.values())

    def _read(self, tab: int) -> None:
        """Tab `tab`'s tools, read again where its document or its toolchange count moved on; a tab
        that is leaving (or has just left) is first followed to its next document (_arrive)."""
        page, known = self.pages[tab], self._listed[tab]
        try:
            state = page.evaluate(_LIST, [known.document, known.changes] if known else [None, -1])
        except Exception:  # noqa: BLE001 - playwright's errors: the document went while being read
            self._arrive(tab, known.document if known else None)
            return
        if state["leaving"] is not None:
            self._leave(tab, state["document"], state["leaving"])
            return
        if known is not None and state["document"] != known.document:      # it moved by itself
            self._settle(tab)
            return
        if state["tools"] is not None:
            self._listed[tab] = _Listing(state["document"], state["changes"], state["tools"])

    def _leave(self, tab: int, document_: str | None, url: str) -> None:
        """The document in tab `tab` began a navigation to `url`: followed to the next one; one to
        another origin was refused (the route guard), so the document stays."""
        if origin_of(url) != self.origin:
            if url not in self.refused:
                self.refused.append(url)
            _evaluated(self.pages[tab], "() => window.__webmcpConsumer?.stay()")
            self._listed[tab] = None
            return
        self._arrive(tab, document_)

    def _arrive(self, tab: int, before: str | None) -> None:
        """Wait (bounded) for a document other than `before` to load in tab `tab`, then for its tools."""
        try:
            self.pages[tab].wait_for_function(_ARRIVED, arg=before, polling=10, timeout=READY_S * 1000)
        except Exception:  # noqa: BLE001 - a page that never loads is reported by the next call
            pass
        self._settle(tab)

    def _settle(self, tab: int) -> None:
        """The tab's new document's tools, once it has registered some and the list has held still
        for QUIET_S (a page may register them after its load event), or what it has after ARRIVE_S."""
        self._listed[tab] = None
        deadline, page = time.perf_counter() + ARRIVE_S, self.pages[tab]
        last, since = None, time.perf_counter()
        while True:
            try:
                state = page.evaluate(_LIST, [None, -1])
            except Exception:  # noqa: BLE001 - still navigating: try again
                state = None
            now = time.perf_counter()
            if state is not None and state["leaving"] is None:
                mark = (state["document"], state["changes"])
                if mark != last:
                    last, since = mark, now
                listing = _Listing(state["document"], state["changes"], state["tools"])
                if (state["tools"] and now - since >= QUIET_S) or now > deadline:
                    self._listed[tab] = listing
                    return
            elif now > deadline:
                return
            page.wait_for_timeout(10)

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool in the page that registered it; its return value, or a typed error."""
        owner = next((t for t in self._known() if t.name == name), None)
        if owner is None:                     # not as last read: read again (a page may have moved on)
            owner = next((t for t in self.tools() if t.name == name), None)
        if owner is None:
            return {"error": "unknown_tool", "name": name}
        answer = self._run(owner.tab, name, arguments)
        if isinstance(answer, dict) and answer.get("__webmcp") == "leaving":
            # the document was going away, and the call did not run: run it where the tool is now
            owner = next((t for t in self.tools() if t.name == name), None)
            if owner is None:
                return {"error": "unknown_tool", "name": name}
            answer = self._run(owner.tab, name, arguments)
        return answer

    def _run(self, tab: int, name: str, arguments: dict[str, Any]) -> Any:
        page, listing = self.pages[tab], self._listed[tab]
        before, refused_before = page.url, len(self.refused)
        start_over = self._start_over.pop(tab, None)
        started = time.perf_counter()
        try:
            ran = page.evaluate(_CALL, [name, arguments, int(self.timeout_s * 1000), start_over])
            if ran["answer"].get("__webmcp") == "no_start_over":        # it could not: load it, then call
                self.open(start_over, tab)
                ran = page.evaluate(_CALL, [name, arguments, int(self.timeout_s * 1000), None])
        except Exception as error:  # noqa: BLE001 - playwright's errors: a page that went away or broke
            moved = _moved(page.url, before) or "destroyed" in str(error) or "navigat" in str(error)
            ran = {"answer": {"__webmcp": "navigation" if moved else "page_error",
                              "message": first_line(error)[:300]}, "changes": -1, "leaving": None}
            if moved:
                self._arrive(tab, listing.document if listing else None)
        self.call_ms.append((time.perf_counter() - started) * 1000)
        answer, leaving = ran["answer"], ran.get("leaving")
        if leaving is not None and answer.get("__webmcp") != "leaving":
            # the page is going: followed to the next document. The call is a navigation when it
            # was going by the time the tool's execute settled (consumer.js `left`), whether or not
            # the answer got back before the document went: that was a race, not the page's word
            self._leave(tab, listing.document if listing else None, leaving)
            if ran.get("left") is not None and origin_of(ran["left"]) == self.origin:
                answer = {"__webmcp": "navigation"}
        elif listing is not None and ran["changes"] != listing.changes:      # a toolchange since it was read
            self._listed[tab] = None
        outside = self.refused[refused_before:]
        if outside:
            return {"error": "outside_origin", "url": outside[-1][:200]}
        kind = answer.get("__webmcp")
        if kind == "navigation":
            return {"error": "navigation", "url": page.url[:200]}
        if kind == "timeout":
            return {"error": "timeout", "seconds": self.timeout_s}
        if kind == "unknown_tool":
            return {"error": "unknown_tool", "name": name}
        if kind == "page_error":
            return {"error": "page_error", "message": answer.get("message", "")}
        if kind == "leaving":
            return answer
        return answer.get("value")


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

__all__ = ["CHROMIUM", "FLAGS", "MODES", "NATIVE_FLAG", "NATIVE_SINCE", "OutsideOrigin", "PageTool", "PageToolsOf",
           "WebMCPDriver", "WebMCPUnavailable", "first_line", "launch_flags", "origin_of", "outside_of"]
