"""The Chat's world as its web pages beside the panel (app/world_page.py), in headless Chromium:
the page shows the very world the conversation acts on from the moment the tab opens (the
examples name what is in it), follows a tool call as it lands (the cart after add_to_cart), a
person's own change on the page reaches the conversation's world, and New chat shows a new one.

Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import re

from app.conversation_world import DEFAULT_WORLD, world_from_spec
from tests.e2e.app_fakes import running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_first_contact import open_page, shot
from tests.e2e.test_silent_failures import scripted_context, send
from world.format import render_call

pytestmark = BROWSER_MARKS


def _coat() -> tuple[str, str]:
    """(id, size) of the black coat the Chat's first example asks for, from the world a chat starts in."""
    world = world_from_spec(DEFAULT_WORLD)
    pid = next(pid for pid, p in world.products.items() if (p["color"], p["style"]) == ("black", "coat"))
    return pid, sorted(world.products[pid]["stock"])[-1]


def test_the_page_beside_the_panel_is_the_conversations_world_and_follows_its_calls(browser, tmp_path):
    from playwright.sync_api import expect

    pid, size = _coat()
    ctx = scripted_context(tmp_path, render_call("add_to_cart", {"product_id": pid, "size": size, "quantity": 1}),
                           render_call("finish", {"answer": f"Added 1 x {pid} in size {size}."}),
                           name="sprout-bd")      # a stand-in under the bundled name: its card's examples
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        frame = page.frame_locator("#chat-world-page iframe")
        # before anything is sent: the shop of the world the chat will act on, its products listed
        expect(frame.locator("#results")).to_contain_text(pid, timeout=15_000)
        expect(frame.locator("#cart-count")).to_have_text("0")
        # the examples name what this world holds (the card's own name a blue dress, which it has not)
        expect(page.locator("#chat-examples")).to_contain_text(f"Please add a black coat in size {size} to the cart.")
        expect(page.locator("#chat-examples")).not_to_contain_text("blue dress")
        send(page, "Please add a black coat in size XL to the cart.")
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=30_000)
        # the frame reloaded on the cart after the call: the item is there, as in the world the model changed
        expect(frame.locator("#cart-lines")).to_contain_text(pid, timeout=15_000)
        expect(frame.locator("#cart-count")).to_have_text("1")
        src = page.locator("#chat-world-page iframe").get_attribute("src")
        assert re.search(r"^/apps/shop/\?session=[\w-]+&v=\d+#/cart$", src), src
        session = re.search(r"session=([\w-]+)", src).group(1)
        assert ctx.world_pages.sessions.get(session).world.cart == [[pid, size, 1]]
        # the frame scrolls to its cart without scrolling the playground page (the message box stays in view):
        # the page at the top, the frame opened on its cart again
        page.evaluate("window.scrollTo(0, 0)")
        page.evaluate("""() => { const f = document.querySelector('#chat-world-page iframe');
                                 f.src = f.getAttribute('src').replace(/&v=\\d+/, '&v=999999'); }""")
        expect(frame.locator("#cart-lines")).to_contain_text(pid, timeout=15_000)
        page.wait_for_timeout(300)
        assert page.evaluate("window.scrollY") == 0
        shot(page, "chat-world-page")

        # a person's own click on the page changes the same world the next message acts on
        other = frame.locator("#results tbody tr").filter(has_not_text=pid).first
        other_id = other.locator("a").first.inner_text().strip()
        other.get_by_role("button", name="Add").click()
        expect(frame.locator("#cart-count")).to_have_text("2", timeout=10_000)
        assert [line[0] for line in ctx.world_pages.sessions.get(session).world.cart] == [pid, other_id]

        page.locator("#new-chat").click()
        expect(frame.locator("#cart-count")).to_have_text("0", timeout=15_000)     # a new chat, a new world
        page.context.close()
    ctx.close()
