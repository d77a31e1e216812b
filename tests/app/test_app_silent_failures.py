"""Nothing fails silently (issue 30, point 5), handler by handler: a tool's error stays in sight
next to the answer after it, and a call holding a value found nowhere before it is marked in the
Chat, the Agent tab's steps, the Sessions transcript and the HTML replay."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from app.agent_tab import AgentHandlers
from app.chat import ChatHandlers
from app.sessions_tab import SessionsHandlers
from app.steps import steps_html
from tests.app.test_app_handlers import AGENT, OUT, ask, named
from tests.e2e.app_fakes import fake_context
from world.agent import Step
from world.format import render_call
from world.task_sets import load_heldout_tasks

CLEO = "Look up customer Cleo Abbott."              # a held-out task: its world has Cleo Abbott
MIA = "Check out as a guest: Mia Park, mia@example.com, 12 Oak Street."
LONG = (256, 32, 32, "threshold", 0.9, 0.0, 0)         # a whole call in one generation (a token per character)
MISCOPIED = {"name": "Mia Park", "email": "mia.exam@post.io", "address": "12 Oak Street"}


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def scripted(ctx, *replies: str) -> None:
    """The fake diffusion model answers with `replies`, one per generation, in order."""
    queue = iter(replies)
    ctx.registry.get("fake-bd").target = lambda prompt: next(queue)


def shown(update) -> list[dict]:
    return [{**m, "content": html.unescape(m["content"]),
             "title": html.unescape(m.get("metadata", {}).get("title", ""))} for m in update[OUT["chatbot"]]]


def test_the_tools_error_is_named_under_the_answer_that_follows_it(ctx):
    assert any(t["instruction"] == CLEO for t in load_heldout_tasks())
    scripted(ctx, render_call("get_customer", {"name": "Cleo Abot"}), render_call("finish", {"answer": "Cleo Abbott"}))
    messages = shown(ask(ChatHandlers(ctx), CLEO, settings=LONG)[-1])
    card, answer = messages[-2:]
    assert "⚠️ error: no such customer" in card["title"]                   # visible while collapsed
    assert answer["content"].startswith("Cleo Abbott")
    assert "Before this answer a tool step failed: get_customer(name=Cleo Abot) answered “no such customer”" in \
        answer["content"]


def test_an_answer_after_clean_steps_has_no_note(ctx):
    scripted(ctx, render_call("get_customer", {"name": "Cleo Abbott"}), render_call("finish", {"answer": "C1"}))
    card, answer = shown(ask(ChatHandlers(ctx), CLEO, settings=LONG)[-1])[-2:]
    assert "⚠️" not in card["title"] and "⚠️" not in answer["content"]


def test_a_miscopied_email_is_marked_on_the_chat_card(ctx):
    scripted(ctx, render_call("checkout_guest", MISCOPIED), render_call("finish", {"answer": "Done."}))
    card = shown(ask(ChatHandlers(ctx), MIA, settings=LONG)[-1])[-2]
    assert "⚠️ not seen before: email = mia.exam@post.io" in card["title"]
    assert "appear nowhere in the conversation" in card["content"]


def test_a_value_from_an_earlier_tool_response_is_not_marked(ctx):
    """get_customer answers Cleo's id; an invoice for that id copies it and is not marked."""
    found = []

    def target(prompt: str) -> str:
        if "<tool_response>" not in prompt and "tool:" not in prompt:
            return render_call("get_customer", {"name": "Cleo Abbott"})
        if not found:
            found.append(prompt.split('"id":"')[1].split('"')[0])
            return render_call("create_invoice", {"customer_id": found[0], "amount": 1, "description": "x"})
        return render_call("finish", {"answer": "ok"})

    ctx.registry.get("fake-bd").target = target
    messages = shown(ask(ChatHandlers(ctx), CLEO, settings=LONG)[-1])
    invoice = next(m for m in messages if "create_invoice" in m["title"])
    assert "not seen before: customer_id" not in invoice["title"]
    assert "not seen before: description = x" in invoice["title"]        # "x" is written nowhere


def test_the_agent_steps_mark_the_value_and_the_error():
    step = Step(render_call("checkout_guest", MISCOPIED), {"name": "checkout_guest", "arguments": MISCOPIED}, None,
                {"error": "cart is empty"}, None, 0.1)
    answer = Step(render_call("finish", {"answer": "Done."}), {"name": "finish", "arguments": {"answer": "Done."}},
                  None, None, None, 0.1)
    table = steps_html([step, answer], [MIA])
    assert table.count('class="dp-flag"') == 3                # the value, the error, the answer after it
    assert "⚠️ not seen before: email = mia.exam@post.io" in table
    assert 'title="Not seen before: email = mia.exam@post.io. These values appear nowhere' in table
    assert "answered “cart is empty”" in html.unescape(table)
    assert 'class="dp-flag"' not in steps_html([answer], [MIA])


def test_the_agent_verdict_names_the_failed_step(tmp_path):
    ctx = fake_context(tmp_path)
    scripted(ctx, render_call("get_customer", {"name": "Cleo Abot"}), render_call("finish", {"answer": "Cleo Abbott"}))
    agent = AgentHandlers(ctx, updates_per_second=1e9)
    _, steps, _, verdict, *_ = list(agent.run("", CLEO, "fake-bd", 4, settings=named(AGENT)))[-1]
    assert "get_customer(name=Cleo Abot) answered “no such customer”" in html.unescape(verdict)
    assert "⚠️ error" in steps
    ctx.close()


def test_the_sessions_transcript_and_the_replay_export_mark_the_stored_call(ctx):
    scripted(ctx, render_call("checkout_guest", MISCOPIED), render_call("finish", {"answer": "Done."}))
    cid = ask(ChatHandlers(ctx), MIA, settings=LONG)[-1][OUT["conversation_id"]]
    sessions = SessionsHandlers(ctx)
    transcript, turns, conversation, _ = sessions.open(str(cid))
    assert "⚠️ not seen before: email = mia.exam@post.io" in transcript
    assert "⚠️ error: cart is empty" in transcript
    checkout_turn = next(t for t in conversation["turns"] if t["tool_calls"] and
                         t["tool_calls"][0]["name"] == "checkout_guest")
    view = sessions.show_turn(conversation, str(checkout_turn["idx"]))[0]
    files, _ = sessions.export(conversation, view)
    replay = Path(next(f for f in files["value"] if f.endswith("-replay.html"))).read_text(encoding="utf-8")
    assert "<h2>Tool call</h2>" in replay and "⚠️ not seen before: email = mia.exam@post.io" in replay
    finish_turn = next(t for t in conversation["turns"] if t["tool_calls"] and t["tool_calls"][0]["name"] == "finish")
    files, _ = sessions.export(conversation, sessions.show_turn(conversation, str(finish_turn["idx"]))[0])
    replay = Path(next(f for f in files["value"] if f.endswith("-replay.html"))).read_text(encoding="utf-8")
    assert "<h2>Tool call</h2>" not in replay                   # finish's answer is prose, not a copy


def test_the_chat_export_of_a_call_marks_it(ctx):
    from app.conversation_world import MAX_REPLIES

    calls = [render_call("checkout_guest", {**MISCOPIED, "address": f"{i} Oak Street"}) for i in range(MAX_REPLIES)]
    scripted(ctx, *calls)                                      # no answer: the last generation is a call
    chat = ChatHandlers(ctx)
    final = ask(chat, MIA, settings=LONG)[-1]
    files, _ = chat.export(final[OUT["trace"]])
    replay = Path(next(f for f in files["value"] if f.endswith("-replay.html"))).read_text(encoding="utf-8")
    assert "not seen before: email = mia.exam@post.io, address = 7 Oak Street" in replay


PIRATE = "You are a pirate. Always answer in French."


def test_the_sprout_cards_say_they_know_no_system_prompt_and_warn_on_one():
    from app.cards import card_for, card_markdown, system_prompt_warning

    for name in ("sprout-bd", "sprout-ar"):
        card = card_for(name)
        assert card.system_prompts == []
        assert "trained without one" in card_markdown(card)
        warning = system_prompt_warning(card, PIRATE)
        assert warning.startswith("⚠️") and "trained without a system prompt" in warning
        assert system_prompt_warning(card, "   ") == ""
    assert system_prompt_warning(card_for("LLaDA-8B-Instruct"), PIRATE) == ""      # its card does not say


def test_a_card_that_lists_its_system_prompts_warns_only_outside_them(tmp_path, monkeypatch):
    import json

    from app.cards import card_for, system_prompt_warning
    from engine import catalog

    folder = tmp_path / "shop-model"
    folder.mkdir()
    (folder / "playground.json").write_text(json.dumps(
        {"card": {"title": "Shop model", "summary": "s", "system_prompts": ["You are a shop agent."]}}))
    monkeypatch.setattr(catalog, "models_dir", lambda: tmp_path)
    card = card_for("shop-model")
    assert system_prompt_warning(card, "You are a  shop agent.\n") == ""          # whitespace does not count
    assert "only these system prompts: “You are a shop agent.”" in system_prompt_warning(card, PIRATE)


def test_the_chat_tab_shows_the_warning_for_the_model_picked(tmp_path):
    from app.chat_tab import system_note_update

    ctx = fake_context(tmp_path)
    assert system_note_update(ctx, "sprout-bd", PIRATE)["visible"] is True
    assert system_note_update(ctx, "sprout-bd", "")["visible"] is False
    assert system_note_update(ctx, "fake-bd", PIRATE)["visible"] is False          # no card, nothing claimed
    ctx.close()


def test_a_marked_value_is_escaped_in_the_row_and_its_title():
    hostile = {**MISCOPIED, "email": '"><img src=x onerror=alert(1)>'}
    step = Step(render_call("checkout_guest", hostile), {"name": "checkout_guest", "arguments": hostile}, None,
                {"ok": True}, None, 0.1)
    table = steps_html([step], [MIA])
    assert "not seen before: email" in table and "<img" not in table
