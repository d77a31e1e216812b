"""The Agent tab's tools run in the web pages (app/page_venue.py), with a fake driver standing in
for Chromium: each call runs against the World under the tab's page session (what /apps/ serves
to the frame), so the frame, the grader and the store all see what the calls did."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlsplit

import gradio as gr
import pytest

from app.agent_tab import AgentHandlers
from app.page_venue import PAGES, PageBrowser
from app.sessions_tab import SessionsHandlers
from tests.app.test_app_handlers import AGENT, named
from tests.e2e.app_fakes import fake_context
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import conversation_oracle_target, oracle_target, world_format
from world.office_six import load_office_six
from world.task_sets import seed_demo_task
from world.tools import FINISH, TOOLS, call_tool
from world.webmcp.driver import OutsideOrigin, PageTool

ORIGIN = "http://127.0.0.1:7999"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
KEY = (None, "agent")


class FakeDriver:
    """The WebMCPDriver's surface over the page sessions, no browser: a call runs on the World of
    the session the open tab shows, under its lock, as /apps/api/s/ID/call does."""

    def __init__(self, origin: str, sessions, log: dict, timeout_s: float = 10.0) -> None:
        self.origin, self.sessions, self.log = origin.rstrip("/"), sessions, log
        self.webmcp = "polyfill"           # as the real driver says which WebMCP it launched with

    def __enter__(self) -> FakeDriver:
        return self

    def _check(self, url: str) -> None:
        if not url.startswith(self.origin + "/"):
            raise OutsideOrigin(url)

    def open(self, url: str, tab: int | None = None, ready: str | None = None) -> int:
        self._check(url)
        self.log.setdefault("opened", []).append(url)
        return tab or 0

    def open_tabs(self, urls: list[str], keep_open: bool = False, start_over: bool = False) -> None:
        for tab, url in enumerate(urls):
            self.open(url, tab)

    def tools(self) -> list[PageTool]:
        return [PageTool(t["name"], t["description"], t["inputSchema"], annotations=t["annotations"])
                for t in TOOLS if t["name"] != FINISH]

    current_tools = tools                  # what the agent loop reads each step (no page changes here)

    def call(self, name: str, arguments: dict) -> object:
        self.log.setdefault("threads", set()).add(threading.current_thread().name)
        self.log.setdefault("calls", []).append(name)
        session = parse_qs(urlsplit(self.log["opened"][-1]).query)["session"][0]
        held = self.sessions.get(session)
        with held.lock:
            return call_tool(held.world, name, arguments)

    def screenshot(self, path, url: str):
        self._check(url)
        self.log["shot_url"] = url
        path.write_bytes(PNG)
        return path

    def close(self) -> None:
        self.log["closed"] = True


def pages_context(tmp_path, backend, log: dict, start_fails: bool = False):
    ctx = fake_context(tmp_path, backends={"fake-bd": backend})
    ctx.app_url = ORIGIN + "/"

    def factory(origin: str, timeout_s: float):
        if start_fails:
            raise RuntimeError("BrowserType.launch: Executable doesn't exist at /usr/bin/chromium\n"
                               "Traceback (most recent call last):\n  File x")
        return FakeDriver(origin, ctx.world_pages.sessions, log, timeout_s)

    ctx.page_browser = PageBrowser(ctx.world_pages, lambda: ctx.app_url, driver_factory=factory)
    return ctx


def the_model(target) -> FakeDiffusionBackend:
    return world_format(FakeDiffusionBackend(target, max_length=8192, name="fake-bd"))


def test_black_tshirt_checkout_runs_in_the_tabs_page_session_and_keeps_a_picture(tmp_path):
    task = seed_demo_task()
    assert task["instruction"].startswith("Find me a black T-shirt in size L, add it to the cart, and check out")
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([task])), log)
    updates = list(AgentHandlers(ctx, updates_per_second=1e9).run_scenario("black-tshirt", "fake-bd", 8,
                                                                           settings=named(AGENT)))
    _, steps, world, verdict, preview, files, status, frame = updates[-1]
    assert "Success" in verdict, verdict
    assert log["calls"] == ["search_products", "add_to_cart", "checkout_guest"]
    assert log["threads"] == {next(iter(log["threads"]))} and next(iter(log["threads"])).startswith("webmcp-driver")
    # the calls changed the World under the tab's page session: the one the frame shows
    session = ctx.world_pages.session_for(KEY)
    assert all(f"session={session}" in url for url in log["opened"]) and f"session={session}" in frame
    order, = ctx.world_pages.sessions.get(session).world.orders
    (product_id, size, _quantity), = order["items"]
    product = ctx.world_pages.sessions.get(session).world.products[product_id]
    assert (product["color"], product["style"], size) == ("black", "t-shirt", "L")
    order_id = order["id"]
    assert f"#/order/{order_id}" in frame and f"#/order/{order_id}" in log["shot_url"]
    # the page's final state: a PNG under the export dir, shown, listed, and named in the stored meta
    stored = ctx.store.get_conversation(ctx.store.list_conversations(kind="agent")[0]["id"])
    shot = stored["meta"]["page_screenshot"]
    assert shot.startswith(str(ctx.export_dir)) and open(shot, "rb").read() == PNG
    assert stored["meta"]["tools_in"] == PAGES and stored["meta"]["scenario"] == "black-tshirt"
    assert stored["meta"]["webmcp"] == "polyfill"
    assert stored["meta"]["success"] is True and "data:image/png;base64," in preview
    assert files["value"] == [shot] and "Stored as agent run" in status
    # replayable in the Sessions tab as other agent runs are
    *_, opened = SessionsHandlers(ctx).open(str(stored["id"]))
    assert "4 with a trace" in opened  # search, add, checkout, finish
    ctx.close()
    assert log["closed"] is True


def test_six_office_requests_in_a_row_each_graded_and_stored_request_by_request(tmp_path):
    chain = load_office_six()[0]
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(conversation_oracle_target([chain])), log)
    *_, (_, steps, world, verdict, preview, files, status, frame) = AgentHandlers(
        ctx, updates_per_second=1e9).run_scenario("office-six", "fake-bd", 8, settings=named(AGENT))
    assert verdict.count("✅") == 7 and "All requests succeeded" in verdict, verdict
    assert len(set(log["opened"])) == 2 and 'data-app="office"' in frame
    stored = ctx.store.get_conversation(ctx.store.list_conversations(kind="agent")[0]["id"])
    users = [t["content"] for t in stored["turns"] if t["role"] == "user"]
    assert users == [turn["instruction"] for turn in chain["turns"]]
    assert [r["success"] for r in stored["meta"]["requests"]] == [True] * 6
    assert stored["meta"]["page_screenshot"].endswith(".png")
    ctx.close()


def test_a_wrong_model_fails_the_checkout_in_the_pages(tmp_path):
    """The verdict comes from the World the pages changed: a model that only searches fails."""
    task = seed_demo_task()
    idle = the_model('<tool_call>{"name":"search_products","arguments":{"query":"shirt"}}</tool_call>')
    log: dict = {}
    ctx = pages_context(tmp_path, idle, log)
    verdict = list(AgentHandlers(ctx, updates_per_second=1e9).run("", task["instruction"],
                                                                  "fake-bd", 3, PAGES, settings=named(AGENT)))[-1][3]
    assert "Success" not in verdict and log["calls"] == ["search_products"]
    ctx.close()


def test_a_browser_that_cannot_start_is_one_sentence_and_nothing_is_saved(tmp_path):
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([seed_demo_task()])), log, start_fails=True)
    with pytest.raises(gr.Error) as caught:
        list(AgentHandlers(ctx).run_scenario("black-tshirt", "fake-bd", 8, settings=named(AGENT)))
    said = caught.value.message
    assert "could not start" in said and "built-in world" in said
    assert "Traceback" not in said and "\n" not in said
    assert ctx.store.list_conversations(kind="agent") == [] and "calls" not in log
    with pytest.raises(gr.Error, match="built-in world or in its web pages"):
        list(AgentHandlers(ctx).run("", "Show my cart.", "fake-bd", 2, "elsewhere", settings=named(AGENT)))
    ctx.close()


def test_without_a_served_app_the_pages_say_so(tmp_path):
    ctx = fake_context(tmp_path)
    with pytest.raises(gr.Error, match="not served by this app"):
        list(AgentHandlers(ctx).run("", "Show my cart.", "fake-bd", 2, PAGES, settings=named(AGENT)))
    ctx.close()
