"""The Chat follow-up with the bundled Sprout-BD in headless Chromium (issue 49): "Look up customer
Cleo Abbott.", then "Now invoice her for $40." The second message names nobody; the customer's id
is only in the first turn's tool response, so the invoice lands on Cleo Abbott's id only if the
bundled weights read the whole conversation (playground.json "context": "conversation").

The first message is a held-out task's own words, so the chat starts in that task's world, where
Cleo Abbott is a customer (app/conversation_world.py world_spec_for). Greedy decoding (the bundled
settings): the same calls every run. Needs /usr/bin/chromium; loads the bundled twins on the CPU.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine.backends.sprout import declared_context
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_first_contact import last_conversation, shot
from tests.e2e.test_first_hour import app_page
from world.start import world_for
from world.task_sets import load_heldout_tasks
from world.tools import FINISH

pytestmark = [*BROWSER_MARKS, pytest.mark.slow]
MODELS = Path(__file__).resolve().parents[2] / "models"
LOOKUP, FOLLOW_UP = "Look up customer Cleo Abbott.", "Now invoice her for $40."


def calls(turns: list[dict]) -> list[tuple[str, dict, dict]]:
    """(name, arguments, the tool's response) of every call in `turns`, in order."""
    out = []
    for turn in turns:
        for c in turn["tool_calls"]:
            args = c["arguments"] if isinstance(c["arguments"], dict) else json.loads(c["arguments"])
            out.append((c["name"], args, json.loads(c["observation"]) if c["observation"] else {}))
    return out


def ask(page, ctx, message: str) -> list[tuple[str, dict, dict]]:
    """Send `message` with Enter; the calls of the turns stored after it, once one is `finish`."""
    page.locator("#prompt textarea").fill(message)
    page.locator("#prompt textarea").press("Enter")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if ctx.store.list_conversations(kind="chat"):
            turns = last_conversation(ctx, "chat")["turns"]
            asked = [k for k, t in enumerate(turns) if t["role"] == "user" and t["content"] == message]
            made = calls(turns[asked[-1] + 1:]) if asked else []
            if any(name == FINISH for name, _, _ in made):
                return made
        page.wait_for_timeout(500)
    raise AssertionError(f"no answer to {message!r} within 240 s")


def test_a_follow_up_invoices_the_customer_the_first_message_looked_up(browser, tmp_path):
    from playwright.sync_api import expect

    from app.state import AppContext

    assert declared_context(MODELS / "sprout-bd") == "conversation"
    task = next(t for t in load_heldout_tasks() if t["instruction"] == LOOKUP)
    cleo_id, = [cid for cid, c in world_for(task).customers.items() if c["name"] == "Cleo Abbott"]
    ctx = AppContext.create(tmp_path / "sessions.db", watch=False)
    try:
        with app_page(browser, ctx) as page:
            expect(page.locator("#chat-card")).to_contain_text("Sprout-BD")       # the bundled default
            lookup = ask(page, ctx, LOOKUP)
            assert lookup[0][:2] == ("get_customer", {"name": "Cleo Abbott"}) and lookup[0][2]["id"] == cleo_id
            follow_up = ask(page, ctx, FOLLOW_UP)
            invoices = [(args, made) for name, args, made in follow_up if name == "create_invoice"]
            assert len(invoices) == 1, follow_up
            (args, created), = invoices
            assert args["customer_id"] == cleo_id and float(args["amount"]) == 40
            assert created["id"].startswith("V")                       # the world made the invoice
            expect(page.locator("#chatbot")).to_contain_text(created["id"], timeout=30_000)
            shot(page, "chat-follow-up")
    finally:
        ctx.close()
