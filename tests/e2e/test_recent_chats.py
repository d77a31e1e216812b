"""In headless Chromium: the Chat tab's recent chats. Two chats are stored; the first is opened
from the list and goes on, renamed, and the second is deleted, all without leaving the tab."""

from __future__ import annotations

import re

from tests.e2e.app_fakes import fake_context
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_chat_branches import send, users
from tests.e2e.test_first_contact import shot
from tests.e2e.test_first_hour import app_page

pytestmark = BROWSER_MARKS


def pick(page, label_start: str) -> None:
    """The chat whose label starts so, picked; again if the list was redrawn under the click."""
    from playwright.sync_api import expect

    box = page.locator("#chat-recent input")
    for _ in range(3):
        box.click()
        page.get_by_role("option").filter(has_text=label_start).first.click()
        if box.input_value().startswith(label_start):
            return
    expect(box).to_have_value(re.compile("^" + re.escape(label_start)))


def test_a_recent_chat_is_opened_continued_renamed_and_another_deleted(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with app_page(browser, ctx) as page:
        send(page, "first question")
        page.locator("#new-chat").click()
        expect(page.locator("#chatbot")).not_to_contain_text("first question")
        send(page, "second question")
        first, second = (row["id"] for row in reversed(ctx.store.list_conversations(kind="chat")))
        page.locator("#chat-recent-box").get_by_text("Recent chats").first.click()
        pick(page, f"#{first} · first question")
        page.locator("#chat-recent-open").click()
        expect(page.locator("#chat-status")).to_contain_text(f"Continuing conversation #{first}")
        assert users(page) == ["first question"]
        send(page, "a follow-up")
        assert [t["content"] for t in ctx.store.get_conversation(first)["turns"] if t["role"] == "user"] == [
            "first question", "a follow-up"]
        page.locator("#chat-recent-title input, #chat-recent-title textarea").first.fill("Renamed chat")
        pick(page, f"#{first} ·")
        page.locator("#chat-recent-rename").click()
        expect(page.locator("#chat-status")).to_contain_text(f"Renamed chat #{first} to “Renamed chat”")
        assert ctx.store.get_conversation(first)["title"] == "Renamed chat"
        pick(page, f"#{second} · second question")
        page.locator("#chat-recent-delete").click()
        expect(page.locator("#chat-status")).to_contain_text(f"Deleted chat #{second}.")
        assert [row["id"] for row in ctx.store.list_conversations(kind="chat")] == [first]
        page.locator("#chat-recent-delete").click()              # nothing picked now: a sentence, no modal
        expect(page.locator("#chat-status")).to_contain_text("Pick a chat in Recent chats first")
        expect(page.locator(".toast-body.error, .modal")).to_have_count(0)
        assert users(page) == ["first question", "a follow-up"]  # the chat stayed in sight throughout
        shot(page, "recent-chats")
    ctx.close()
