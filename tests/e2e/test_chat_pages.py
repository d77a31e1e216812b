"""The Chat tab with "Tools run in: its web pages (WebMCP)", in headless Chromium: a chat turn's
tool calls run in the shop page of the chat's own world, in the app's browser (app/page_venue.py),
and the frame the person sees below the panel reaches the cart, then the order's confirmation.

A scripted model (the oracle of a held-out task, whose instruction as the first message opens
that task's world) makes the calls; the app's browser holds the checkout call back until the test
has seen the cart, so both states are seen in the person's browser. Needs /usr/bin/chromium.
"""

from __future__ import annotations

from tests.e2e.app_fakes import running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.e2e.test_agent_pages import GatedDriver, cart_then_order, gated_context
from tests.e2e.test_first_contact import open_page, shot
from world.task_sets import load_heldout_tasks

pytestmark = BROWSER_MARKS


def test_a_chat_turn_runs_its_calls_in_the_page_the_person_sees(browser, tmp_path):
    from playwright.sync_api import expect

    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_buy")
    gate = GatedDriver.gate
    ctx = gated_context(tmp_path, task)
    try:
        with running_app(ctx) as (_demo, url):
            page = open_page(browser, url)
            set_number(page, "#chat-gen-length", "256")       # a whole call in one generation (a token a character)
            set_number(page, "#chat-pace-ms", "0")
            page.locator("#chat-where").get_by_text("its web pages (WebMCP)").click()
            page.locator("#prompt textarea").fill(task["instruction"])
            page.locator("#send").click()
            world = cart_then_order(page, ctx, "#chat-world-page", task["slots"]["qty"], "chat-pages")
            (_pid, size, quantity), = world.orders[0]["items"]
            assert (size, quantity) == (task["slots"]["size"], task["slots"]["qty"])
            mode = ctx.page_browser.webmcp                      # native on Chromium 156+, else polyfill
            expect(page.locator("#chat-status")).to_contain_text(f"in the web pages ({mode} WebMCP)", timeout=60_000)
            expect(page.locator("#chatbot")).to_contain_text(world.orders[0]["id"])
            stored = ctx.store.list_conversations(kind="chat")[0]["meta"]
            assert stored["tools_in"] == "pages" and stored["webmcp"] == mode
            assert ctx.page_browser._driver.refused == []      # the app's browser stayed on the app's origin
            shot(page, "chat-pages-order")
            page.context.close()
    finally:
        gate.set()
        ctx.close()
