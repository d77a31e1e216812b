"""In headless Chromium: the chat as chat apps keep it. An earlier message is edited in its bubble,
which makes a branch; both branches are browsed with the arrows beside the answer, and the live
panel follows the version the chat shows. Every message has its own copy button."""

from __future__ import annotations

import re

from tests.e2e.app_fakes import fake_backends, fake_context
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_first_contact import shot
from tests.e2e.test_first_hour import app_page
from tests.fakes import FakeDiffusionBackend

pytestmark = BROWSER_MARKS


def context(tmp_path):
    """A diffusion fake whose answer names its prompt's length: each branch answers differently."""
    model = FakeDiffusionBackend(lambda prompt: f"Answer {len(prompt)}.", name="fake-bd")
    return fake_context(tmp_path, backends={**fake_backends(), "fake-bd": model})


def send(page, message: str) -> None:
    from playwright.sync_api import expect

    page.locator("#prompt textarea").fill(message)
    page.locator("#prompt textarea").press("Enter")
    expect(page.locator("#chatbot")).to_contain_text(message, timeout=30_000)
    expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=30_000)
    expect(page.locator("#chat-status")).to_contain_text("saved", timeout=30_000)


def panel_answer(page) -> str:
    """The answer as the live panel's grid holds it ("Answer␣76.": spaces drawn as ␣)."""
    return re.search(r"Answer␣\d+\.", page.locator("#live-panel .dp-panel").text_content()).group(0)


def users(page) -> list[str]:
    return [t.strip() for t in page.locator("#chatbot .message-row.user-row").all_inner_texts()]


def test_an_edited_earlier_message_makes_a_branch_and_both_are_browsed_with_the_panel_in_step(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = context(tmp_path)
    with app_page(browser, ctx) as page:
        send(page, "first question")
        send(page, "second question")
        old_branch = panel_answer(page)
        # the pencil on the first message: its text in the bubble, changed, submitted
        page.locator("#chatbot .message-row.user-row").first.hover()
        page.locator("#chatbot button[aria-label='Edit']").first.click()
        page.locator("#chatbot textarea").first.fill("first, edited")
        page.locator("#chatbot button[aria-label='Submit']").first.click()
        versions = page.locator("#chatbot .dp-versions")
        expect(versions).to_have_count(1, timeout=30_000)
        expect(versions).to_contain_text("version 2/2", timeout=30_000)
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=30_000)
        assert users(page) == ["first, edited"]          # the branch: nothing followed the edit yet
        new_branch = panel_answer(page)
        assert new_branch != old_branch
        shot(page, "chat-branch-edited")
        versions.get_by_role("link", name="◀").click()
        expect(versions).to_contain_text("version 1/2")
        expect(page.locator("#chatbot")).to_contain_text("second question")
        assert users(page) == ["first question", "second question"]
        expect(page.locator("#live-panel .dp-panel")).to_contain_text(old_branch)   # the panel of the answer shown
        versions.get_by_role("link", name="▶").click()
        expect(versions).to_contain_text("version 2/2")
        expect(page.locator("#chatbot")).not_to_contain_text("second question")
        expect(page.locator("#live-panel .dp-panel")).to_contain_text(new_branch)
        send(page, "third question")                     # the branch goes on from the edit
        assert users(page) == ["first, edited", "third question"]
        turns = ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])["turns"]
        assert [t["content"] for t in turns if t["role"] == "user"] == [
            "first question", "second question", "first, edited", "third question"]    # every version stored
    ctx.close()


def test_every_message_has_its_own_copy_button(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = context(tmp_path)
    with app_page(browser, ctx, permissions=["clipboard-read", "clipboard-write"]) as page:
        send(page, "first question")
        send(page, "second question")
        rows = page.locator("#chatbot .message-row")
        tools = page.locator("#chatbot .message-buttons")       # each message's buttons, right after it
        expect(rows).to_have_count(4)
        expect(tools).to_have_count(4)
        for row in range(4):
            expect(tools.nth(row).get_by_role("button", name="Copy message")).to_have_count(1)
        text = rows.nth(1).inner_text().strip()                 # the first answer
        assert re.fullmatch(r"Answer \d+\.", text), text
        page.evaluate("navigator.clipboard.writeText('')")
        rows.nth(1).hover()
        tools.nth(1).get_by_role("button", name="Copy message").click()
        # the write resolves after the click returns: read until it lands (evaluate awaits readText)
        copied = ""
        for _ in range(50):
            copied = page.evaluate("navigator.clipboard.readText()")
            if copied:
                break
            page.wait_for_timeout(100)
        assert copied == text
    ctx.close()
