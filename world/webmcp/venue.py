"""An agent episode's world behind the web apps: the venue serves the shop and the office
(world/webapps/) on a loopback port, keeps one Chromium (world/webmcp/driver.py) with a tab per
app, and for each episode puts the task's World under a new session and shows it in both tabs (loaded
the first time, started over in place after that, each tab in the round trip of its first call).

The model may call what the two pages registered, plus finish (the agent's own: it ends the turn
and changes nothing a page shows). Both apps are open, as a person with the shop and the office in
two tabs, so a call the built-in world would run (view_cart in an office task) runs here too and
the transcripts stay comparable. The World object is the one the grader reads.

    with PageVenue() as venue:
        transcript = run_episode(backend, task, config, pages=venue)
        venue.driver.call_ms      # browser milliseconds of every call
"""

from __future__ import annotations

from typing import Any

from world.state import World
from world.webapps.server import serve_in_thread
from world.webapps.sessions import WorldSessions
from world.webmcp.driver import PageToolsOf, WebMCPDriver

APPS = ("shop", "office")        # tab order: the prompt lists the shop's tools, then the office's, as the registry does


class PageVenue:
    """The web apps and a browser on them, for as many episodes as the block runs."""

    def __init__(self, timeout_s: float = 10.0, browser: Any = None, webmcp: str = "auto", lazy: bool = True) -> None:
        self.sessions = WorldSessions()
        self.timeout_s, self.browser, self.webmcp, self.lazy = timeout_s, browser, webmcp, lazy
        self.driver: WebMCPDriver | None = None
        self.url = ""
        self._served: Any = None
        self._session: str | None = None

    def __enter__(self) -> PageVenue:
        self._served = serve_in_thread(self.sessions)
        self.url = self._served.__enter__()
        try:
            self.driver = WebMCPDriver(self.url, timeout_s=self.timeout_s, browser=self.browser,
                                       webmcp=self.webmcp).__enter__()
        except Exception:
            self._served.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.driver is not None:
            self.driver.close()
        if self._served is not None:
            self._served.__exit__(*exc)

    def episode(self, task: dict[str, Any], world: World) -> PageToolsOf:
        if self._session is not None:
            self.sessions.drop(self._session)
        self._session = self.sessions.add(world)
        # the tabs of the task before go to the new session in place: a reload of both pages cost
        # most of a short task's time, and the page after start-over is what a load shows. Lazily:
        # a tab goes there in the round trip of its first call, drawn by that call's answer, and a
        # tab the task never calls is left alone (opening both cost as much as the calls)
        urls = [f"{self.url}/apps/{app}/?session={self._session}" for app in APPS]
        if self.lazy:
            self.driver.start_over_on_call(urls)
        else:
            self.driver.open_tabs(urls, start_over=True)
        return PageToolsOf(self.driver)
