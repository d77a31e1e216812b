"""The Agent tab's guest checkout through the playground's own web pages, in headless Chromium:
the app's browser (app/page_venue.py) runs each tool call in the shop page under the tab's page
session, and the frame the person sees beside the panel reaches what the calls made: the cart
with the shirt, then the order's confirmation; the page's final picture is shown at the end.

A scripted model (the oracle of the held-out task) makes the calls; the app's browser holds the
checkout call back until the test has seen the cart (outside any forward, so the panel keeps
drawing), so both states are seen in the person's browser. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import re
import threading

from app.page_venue import PageBrowser
from app.state import AppContext
from tests.e2e.app_fakes import running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.e2e.test_first_contact import open_page, shot
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.task_sets import seed_demo_task
from world.webmcp.driver import WebMCPDriver

pytestmark = BROWSER_MARKS


class GatedDriver(WebMCPDriver):
    """The app's driver, its checkout call held until `gate` opens."""
    gate = threading.Event()

    def call(self, name: str, arguments: dict) -> object:
        if name == "checkout_guest":
            self.gate.wait(60)
        return super().call(name, arguments)


def gated_context(tmp_path, task: dict) -> AppContext:
    """An app whose model is the task's oracle and whose browser holds the checkout (gate closed)."""
    GatedDriver.gate.clear()
    model = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    ctx = AppContext.create(tmp_path / "sessions.db", model="fake-bd", baseline="fake-bd", watch=False,
                            preloaded={"fake-bd": model})
    ctx.page_browser = PageBrowser(ctx.world_pages, lambda: ctx.app_url, driver_factory=GatedDriver)
    return ctx


def cart_then_order(page, ctx, box: str, quantity: int, name: str):
    """The frame in `box` shows the cart with `quantity` items while the checkout is held, then,
    the gate opened, the order's confirmation; returns the World under the frame's session."""
    from playwright.sync_api import expect

    frame = page.frame_locator(f"{box} iframe")
    expect(frame.locator("#cart-count")).to_have_text(str(quantity), timeout=60_000)
    session = re.search(r"session=([\w-]+)", page.locator(f"{box} iframe").get_attribute("src"))[1]
    world = ctx.world_pages.sessions.get(session).world
    (pid, _size, _), = world.cart
    expect(frame.locator("#cart-lines")).to_contain_text(pid)
    shot(page, f"{name}-cart")
    GatedDriver.gate.set()
    expect(frame.locator("#confirmation")).to_be_visible(timeout=60_000)
    expect(frame.locator("#confirmation")).to_contain_text(world.orders[0]["id"])
    return world


def test_the_checkout_scenario_runs_in_the_page_the_person_sees(browser, tmp_path):
    from playwright.sync_api import expect

    task, gate = seed_demo_task(), GatedDriver.gate
    ctx = gated_context(tmp_path, task)
    try:
        with running_app(ctx) as (_demo, url):
            page = open_page(browser, url, tab="Agent")
            page.locator("#agent-settings").click()
            set_number(page, "#agent-gen-length", "256")      # a whole call in one generation (a token a character)
            set_number(page, "#agent-pace-ms", "0")           # each step drawn as soon as it is computed
            page.locator("#agent-where").get_by_text("its web pages (WebMCP)").click()
            page.locator("#agent-scenario-black-tshirt").click()
            # the whole instruction is in the box before the run: the name, email and address the
            # model's calls will use are there to read, not first seen inside a tool call
            box = page.locator("#agent-instruction textarea")
            expect(box).to_have_value(task["instruction"], timeout=10_000)
            box.scroll_into_view_if_needed()
            shot(page, "agent-scenario-instruction")
            # the shirt in the cart, as the call in the app's own browser put it there, then the order
            world = cart_then_order(page, ctx, "#agent-world-page", 1, "agent-pages")
            (pid, size, _), = world.orders[0]["items"]
            assert (world.products[pid]["color"], world.products[pid]["style"], size) == ("black", "t-shirt", "L")
            expect(page.locator("#agent-verdict")).to_contain_text("Success", timeout=60_000)
            expect(page.locator("#agent-page-shot img")).to_be_visible()
            mode = ctx.page_browser.webmcp                      # native on Chromium 156+, else polyfill
            expect(page.locator("#agent-status")).to_contain_text(f"Tools ran in the web pages ({mode} WebMCP).")
            expect(page.locator("#agent-status")).to_contain_text("Stored as agent run")
            stored = ctx.store.list_conversations(kind="agent")[0]["meta"]
            assert stored["tools_in"] == "pages" and stored["page_screenshot"].endswith(".png")
            assert stored["webmcp"] == mode and mode in ("native", "polyfill")
            assert ctx.page_browser._driver.refused == []      # the app's browser stayed on the app's origin
            shot(page, "agent-pages-order")
            page.context.close()
    finally:
        gate.set()
        ctx.close()
