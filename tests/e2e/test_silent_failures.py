"""Nothing fails silently (issue 30, point 5), in headless Chromium at 1440x960: a tool's error is
in sight next to the answer after it; a call holding an email the conversation never wrote is
marked, with words and a title, in Chat, in the Agent tab's steps and in the Sessions
transcript; a blank HTML preview says why (and the pages called blank are white in Chromium
itself, the others are not); a system prompt the model's card does not list gets a warning.

Needs /usr/bin/chromium; skipped with that reason when it is absent. Set DP_SHOTS=<folder> to
keep a screenshot of each test's page.
"""

from __future__ import annotations

import io
import re

import pytest

from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.e2e.test_first_contact import open_page, shot
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.visualizer.test_visualizer_blank_page import PAGES
from tests.world.scripted import world_format
from visualizer import sandboxed_preview
from world.format import render_call

pytestmark = BROWSER_MARKS

CLEO = "Look up customer Cleo Abbott."
MIA = "Check out as a guest: Mia Park, mia@example.com, 12 Oak Street."
MISCOPIED = {"name": "Mia Park", "email": "mia.exam@post.io", "address": "12 Oak Street"}
PIRATE = "You are a pirate. Always answer in French."


def by_tool_responses(*replies: str):
    """A target that answers the n-th reply of a turn with replies[n] (n = tool responses so far)."""
    return lambda prompt: replies[min(prompt.count("<|tool|>"), len(replies) - 1)]


def scripted_context(tmp_path, *replies: str, name: str = "fake-bd"):
    from app.state import AppContext

    model = world_format(FakeDiffusionBackend(by_tool_responses(*replies), max_length=8192, name=name))
    return AppContext.create(tmp_path / "sessions.db", model=name, baseline="fake-ar", watch=False,
                             preloaded={name: model, "fake-ar": FakeARBackend("ok", name="fake-ar")})


def send(page, message: str) -> None:
    set_number(page, "#chat-gen-length", "256")         # a whole call in one generation (a token per character)
    page.locator("#prompt textarea").fill(message)
    page.locator("#prompt textarea").press("Enter")


def test_a_tool_error_is_named_next_to_the_answer_that_follows_it(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = scripted_context(tmp_path, render_call("get_customer", {"name": "Cleo Abot"}),
                           render_call("finish", {"answer": "Cleo Abbott"}))
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        send(page, CLEO)
        chat = page.locator("#chatbot")
        expect(chat).to_contain_text("⚠️ error: no such customer", timeout=60_000)       # the collapsed card
        expect(page.locator("#chat-status")).to_contain_text("saved as conversation", timeout=60_000)
        answer = page.locator("#chatbot .bot").last
        expect(answer).to_contain_text("Cleo Abbott")
        expect(answer).to_contain_text(
            "Before this answer a tool step failed: get_customer(name=Cleo Abot) answered “no such customer”")
        shot(page, "silent-tool-error")
        page.close()
    ctx.close()


def test_an_email_absent_from_the_conversation_is_marked_in_chat_agent_and_sessions(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = scripted_context(tmp_path, render_call("checkout_guest", MISCOPIED),
                           render_call("finish", {"answer": "Order placed."}))
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        send(page, MIA)
        chat = page.locator("#chatbot")
        expect(chat).to_contain_text("⚠️ not seen before: email = mia.exam@post.io", timeout=60_000)
        expect(page.locator("#chat-status")).to_contain_text("saved as conversation", timeout=60_000)
        expect(chat).not_to_contain_text("not seen before: name")
        chat.get_by_text(re.compile("Tool call: checkout_guest")).first.click()      # open the card
        expect(chat).to_contain_text("appear nowhere in the conversation or in an earlier tool response")
        shot(page, "silent-unseen-chat")

        page.get_by_role("tab", name="Agent").click()
        page.locator("#agent-instruction textarea").fill(MIA)
        page.locator("#agent-settings").get_by_text("Generation settings").first.click()
        set_number(page, "#agent-gen-length", "256")
        page.locator("#run-agent").click()
        flag = page.locator("#agent-step-list .dp-flag").first
        expect(flag).to_have_text("⚠️ not seen before: email = mia.exam@post.io", timeout=60_000)
        assert "appear nowhere in the conversation" in flag.get_attribute("title")
        assert flag.get_attribute("role") == "note" and flag.get_attribute("aria-label").startswith("Warning:")
        expect(page.locator("#agent-step-list")).to_contain_text("⚠️ error")        # "cart is empty"
        flag.scroll_into_view_if_needed()
        shot(page, "silent-unseen-agent")

        page.get_by_role("tab", name=re.compile("Sessions")).click()
        page.locator("#session-picker input").click()
        page.get_by_role("option", name=re.compile("chat")).first.click()
        expect(page.locator("#transcript .dp-flag").first).to_have_text(
            "⚠️ not seen before: email = mia.exam@post.io", timeout=30_000)
        page.locator("#transcript .dp-flag").first.scroll_into_view_if_needed()
        shot(page, "silent-unseen-sessions")
        page.close()
    ctx.close()


def test_a_blank_preview_says_why(browser, tmp_path):
    from playwright.sync_api import expect

    cut = "<!DOCTYPE html><html><head><title>Blue Dresses, new in"
    ctx = fake_context(tmp_path, backends={"fake-bd": FakeDiffusionBackend(cut, name="fake-bd"),
                                           "fake-ar": FakeARBackend("ok", name="fake-ar")})
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        send(page, "Write a page about blue dresses.")
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=60_000)
        page.locator("#export").click()
        notice = page.locator("#export-preview .dp-blank-preview")
        expect(notice).to_contain_text("The preview is blank: the page ends inside its <title>", timeout=30_000)
        expect(notice).to_contain_text("a longer answer length may let the model finish it")
        expect(page.locator("#export-preview iframe[sandbox='']")).to_be_visible()
        notice.scroll_into_view_if_needed()
        shot(page, "silent-blank-preview")
        page.close()
    ctx.close()


def drawn_blank(page, html: str) -> bool:
    """Whether Chromium draws the sandboxed preview of `html` as one flat colour."""
    from PIL import Image

    page.set_content(f"<!DOCTYPE html><html><body>{sandboxed_preview(html, height_px=200)}</body></html>")
    frame = page.locator("iframe")
    frame.wait_for()
    page.wait_for_timeout(150)
    image = Image.open(io.BytesIO(frame.screenshot())).convert("L")
    inner = image.crop((4, 4, image.width - 4, image.height - 4))        # inside the frame's border
    low, high = inner.getextrema()
    return high - low < 8


@pytest.mark.parametrize("name", list(PAGES))
def test_chromium_draws_the_pages_called_blank_white_and_the_others_not(browser, name):
    page_html, words = PAGES[name]
    page = browser.new_page(viewport={"width": 800, "height": 400})
    assert drawn_blank(page, page_html) is (words is not None)
    page.close()


def test_a_system_prompt_outside_the_models_card_gets_a_warning(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = scripted_context(tmp_path, "Hello.", name="sprout-bd")   # the name reads the bundled Sprout-BD's card
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        warning = page.locator("#system-warning")
        expect(warning).to_be_hidden()
        page.locator("#chat-system textarea").fill(PIRATE)
        page.locator("#chat-system textarea").press("Tab")
        expect(warning).to_be_visible(timeout=10_000)
        expect(warning).to_contain_text("Sprout-BD was trained without a system prompt")
        expect(page.locator("#chat-card")).to_contain_text("System prompt: none (it was trained without one)")
        warning.scroll_into_view_if_needed()
        shot(page, "silent-system-warning")
        page.locator("#chat-system textarea").fill("")
        page.locator("#chat-system textarea").press("Tab")
        expect(warning).to_be_hidden(timeout=10_000)
        page.close()
    ctx.close()
