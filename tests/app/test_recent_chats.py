"""The Chat tab's recent chats (app/recent_chats.py): the newest stored chats, opened to go on
with, renamed and deleted; every refusal a sentence in the status line, never an error modal."""

from __future__ import annotations

import threading

import gradio as gr
import pytest

from app.chat import ChatHandlers
from app.recent_chats import RECENT, RecentChats
from app.resume import RESUME_OUTPUTS
from app.saving import Exchange, save
from app.widgets import said_in_status
from sessions import TurnRecord
from tests.app.test_app_handlers import OUT, ask, named
from tests.e2e.app_fakes import fake_context

STATUS = RESUME_OUTPUTS.index("status")


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def chats(ctx, *messages: str) -> list[int]:
    chat = ChatHandlers(ctx)
    return [ask(chat, message)[-1][OUT["conversation_id"]] for message in messages]


def test_the_list_holds_the_newest_chats_only_and_keeps_a_choice_still_stored(ctx):
    first, second = chats(ctx, "first question", "second question")
    recent = RecentChats(ctx)
    listing = recent.listing(str(first))
    assert [value for _label, value in listing.choices] == [str(second), str(first)]
    assert listing.choices[0][0].startswith(f"#{second} · second question · fake-bd · ")
    assert listing.value == str(first) and recent.listing("999").value is None
    agent = save(ctx, Exchange("agent", "an agent run", "fake-bd", meta={}, turns=[TurnRecord("user", "buy")]))
    assert str(agent) not in [value for _label, value in recent.listing().choices]   # Sessions lists those
    for n in range(RECENT):
        chats(ctx, f"question {n}")
    assert len(recent.listing().choices) == RECENT


def test_open_rename_and_delete(ctx):
    first, second = chats(ctx, "first question", "second question")
    recent = RecentChats(ctx)
    opened = dict(zip(RESUME_OUTPUTS, recent.open(str(first))))
    assert opened["conversation_id"] == first and opened["history"][0]["content"] == "first question"
    assert opened["tree"] is None and f"#{first}" in opened["status"]
    picker, box, status = recent.rename(str(first), "  My   chat ")
    assert ctx.store.get_conversation(first)["title"] == "My chat" and box == "" and "My chat" in status
    assert picker.value == str(first)
    picker, status, current = recent.delete(str(second), second)      # the chat on screen
    assert current is None and "next message starts a new stored chat" in status
    assert [value for _label, value in picker.choices] == [str(first)]
    picker, status, current = recent.delete(str(first), None)
    assert current == gr.skip() and picker.choices == []
    _picker, status, _current = recent.delete(str(first), None)
    assert "deleted already" in status


def test_refusals_are_sentences_in_the_status_line(ctx):
    recent = RecentChats(ctx)
    page_open = said_in_status(recent.open, len(RESUME_OUTPUTS), STATUS)
    refused = page_open(None)
    assert "Pick a chat" in refused[STATUS] and all(v == gr.skip() for i, v in enumerate(refused) if i != STATUS)
    assert "no conversation 77" in page_open("77")[STATUS]
    assert "not a chat number" in said_in_status(recent.rename, 3, 2)("x", "title")[2]
    assert "title is empty" in said_in_status(recent.rename, 3, 2)("1", "   ")[2]
    with pytest.raises(gr.Error):                        # the handler itself raises; the page's form says it
        recent.delete(None, None)


def test_opening_a_chat_stops_and_saves_the_answer_being_generated(ctx):
    first, = chats(ctx, "first question")
    chat = ChatHandlers(ctx, updates_per_second=1e9)
    ctx.registry.get("fake-bd").target = "abc " * 120
    slow = named((512, 8, 8, "low_confidence", 0.9, 0.0, 0))            # one token per forward
    stream = chat.submit("a long one", [], None, None, None, "fake-bd", "", False, settings=slow, key=("s", "chat"))
    next(stream)
    drawn = threading.Thread(target=lambda: list(stream))      # the server draws the turn meanwhile
    drawn.start()
    assert ctx.runs.running(("s", "chat"))
    opened = dict(zip(RESUME_OUTPUTS, RecentChats(ctx).open(str(first), ("s", "chat"))))
    drawn.join(timeout=30)
    assert not drawn.is_alive() and not ctx.runs.running(("s", "chat")) and opened["conversation_id"] == first
    stored = ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])
    assert stored["title"] == "a long one"                                     # saved, as stopped
    assert stored["turns"][-1]["generation"].stats.stop_reason == "cancelled"
