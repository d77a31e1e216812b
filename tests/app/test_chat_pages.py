"""The Chat tab's "Tools run in: its web pages (WebMCP)": a turn's tool calls run through the app's
browser (a fake driver here, as in tests/app/test_agent_pages.py) on the World under the chat's
page session, which is the conversation's own World: the frame, the next turn and the store all
see what the pages did."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat import ChatHandlers
from app.page_venue import PAGES, WORLD
from tests.app.test_agent_pages import pages_context, the_model
from tests.app.test_app_handlers import OUT, named, settled
from tests.world.scripted import oracle_target
from world.task_sets import load_heldout_tasks

KEY = (None, "chat")
LONG = (256, 32, 32, "threshold", 0.9, 0.0, 0)        # a whole call in one generation
# a held-out task's instruction as the first message opens that task's world (app/chat.py)
BUY = next(t for t in load_heldout_tasks() if t["intent"] == "shop_buy")


def turn(chat: ChatHandlers, message: str, where: str, world=None, history=None, conversation_id=None):
    return settled(list(chat.submit(message, history or [], conversation_id, world, None, "fake-bd", "", False,
                                    where, settings=named(LONG), key=KEY)))


def test_a_chat_turn_runs_its_calls_in_the_pages_of_the_world_it_shows(tmp_path):
    task = BUY
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([task])), log)
    final = turn(ChatHandlers(ctx, updates_per_second=1e9), task["instruction"], PAGES)[-1]
    assert log["calls"] == ["search_products", "add_to_cart", "checkout_guest"]
    assert next(iter(log["threads"])).startswith("webmcp-driver")
    session = ctx.world_pages.session_for(KEY)
    assert all(f"session={session}" in url for url in log["opened"])
    # the World the pages changed is the conversation's own: the tab keeps it for the next turn
    world = final[OUT["world"]]
    assert world is ctx.world_pages.sessions.get(session).world
    order, = world.orders
    assert f"#/order/{order['id']}" in final[OUT["world_page"]]
    assert "3 tool call(s) in the web pages (polyfill WebMCP)" in final[OUT["status"]]
    stored = ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])
    assert stored["meta"]["tools_in"] == PAGES and stored["meta"]["webmcp"] == "polyfill"
    assert [c["name"] for t in stored["turns"] for c in t["tool_calls"]] == [
        "search_products", "add_to_cart", "checkout_guest", "finish"]
    ctx.close()


def test_the_built_in_world_runs_no_browser_and_reaches_the_same_world(tmp_path):
    task = BUY
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([task])), log)
    final = turn(ChatHandlers(ctx, updates_per_second=1e9), task["instruction"], WORLD)[-1]
    assert "calls" not in log and "opened" not in log
    assert len(final[OUT["world"]].orders) == 1 and "in the web pages" not in final[OUT["status"]]
    assert ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])["meta"]["tools_in"] == WORLD
    ctx.close()


def test_a_browser_that_cannot_start_is_a_sentence_and_the_message_comes_back(tmp_path):
    task = BUY
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([task])), log, start_fails=True)
    chat = ChatHandlers(ctx, updates_per_second=1e9)
    updates = []
    with pytest.raises(gr.Error) as caught:
        for update in chat.submit(task["instruction"], [], None, None, None, "fake-bd", "", False, PAGES,
                                  settings=named(LONG), key=KEY):
            updates.append(update)
    said = caught.value.message
    assert "could not start" in said and "built-in world" in said and "Traceback" not in said
    assert caught.value.shows["prompt"] == task["instruction"]       # what was typed is not lost, with the sentence
    assert not updates                                               # nothing drawn before it
    assert ctx.store.list_conversations(kind="chat") == [] and "calls" not in log
    with pytest.raises(gr.Error, match="built-in world or in its web pages"):
        turn(chat, "Show my cart.", "elsewhere")
    ctx.close()


def test_pages_held_by_another_run_are_a_sentence_for_the_chat(tmp_path, monkeypatch):
    import app.page_venue

    monkeypatch.setattr(app.page_venue, "BUSY_S", 0.05)
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([BUY])), log)
    with ctx.page_browser.visit((None, "agent")):                    # an agent run holds the app's browser
        with pytest.raises(gr.Error, match="busy with another run"):
            turn(ChatHandlers(ctx, updates_per_second=1e9), BUY["instruction"], PAGES)
    assert "calls" not in log and ctx.store.list_conversations(kind="chat") == []
    final = turn(ChatHandlers(ctx, updates_per_second=1e9), BUY["instruction"], PAGES)[-1]   # free again
    assert len(final[OUT["world"]].orders) == 1
    ctx.close()


def test_picking_the_pages_starts_the_browser_before_the_first_turn(tmp_path):
    log: dict = {}
    started = []
    ctx = pages_context(tmp_path, the_model(oracle_target([BUY])), log)
    factory = ctx.page_browser._factory
    ctx.page_browser._factory = lambda *a, **k: started.append(1) or factory(*a, **k)
    ctx.page_browser.warm(WORLD)                          # the built-in world needs no browser
    ctx.page_browser._thread().submit(lambda: None).result()
    assert started == []
    ctx.page_browser.warm(PAGES)
    ctx.page_browser._thread().submit(lambda: None).result()     # the start ran on the driver's thread
    assert started == [1]
    turn(ChatHandlers(ctx, updates_per_second=1e9), BUY["instruction"], PAGES)
    assert started == [1] and log["calls"][0] == "search_products"     # the turn used it, started once
    ctx.close()


def test_a_failed_background_start_is_said_by_the_turn(tmp_path):
    log: dict = {}
    ctx = pages_context(tmp_path, the_model(oracle_target([BUY])), log, start_fails=True)
    ctx.page_browser.warm(PAGES)
    ctx.page_browser._thread().submit(lambda: None).result()
    with pytest.raises(gr.Error, match="could not start"):
        turn(ChatHandlers(ctx, updates_per_second=1e9), BUY["instruction"], PAGES)
    ctx.close()
