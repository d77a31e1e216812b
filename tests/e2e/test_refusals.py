"""In headless Chromium at 1440x960 (issue 46, point 1): a refused message is a sentence in the
status line under the box, the conversation stays in sight, and the typed text stays in the box.
Refused: an empty message, a message over the model's context, a model that is not on this
machine (which is refused before the panel could promise a load). No Gradio error modal, no red
"Error" badge over the conversation. Set DP_SHOTS=<folder> to keep a screenshot of each refusal."""

from __future__ import annotations

import re

from engine import catalog
from tests.e2e.app_fakes import fake_backends, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_first_contact import choose, open_page, shot
from tests.fakes import FakeARBackend, FakeDiffusionBackend

pytestmark = BROWSER_MARKS
LONG_MESSAGE = "Please read all of this. " * 200          # 5,000 characters: a token each for the fake


def no_error_badges(page) -> None:
    """Neither Gradio's modal toast nor the "Error" badge it lays over an event's outputs."""
    assert page.locator(".toast-body, [data-testid='toast-body']").count() == 0
    assert page.locator("#chatbot .error, #live-panel .error").count() == 0


def test_each_refusal_is_a_sentence_under_the_box_and_nothing_typed_or_said_is_lost(browser, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    monkeypatch.setattr(catalog, "cached_snapshot", lambda _hf_id: None)     # no preset's weights here
    backends = {**fake_backends(), "fake-bd": FakeDiffusionBackend("Hello there.", name="fake-bd", max_length=1024),
                "fake-ar": FakeARBackend("Hi.", name="fake-ar")}
    ctx = fake_context(tmp_path, backends=backends)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        box, status, chat = page.locator("#prompt textarea"), page.locator("#chat-status"), page.locator("#chatbot")
        box.fill("Say hello")
        page.locator("#send").click()
        expect(chat).to_contain_text("Hello there.", timeout=60_000)
        expect(status).to_contain_text("forwards", timeout=60_000)

        # empty: the sentence, and the conversation as it was
        page.locator("#send").click()
        expect(status).to_contain_text("The prompt is empty", timeout=20_000)
        expect(chat).to_contain_text("Hello there.")
        no_error_badges(page)
        shot(page, "refused-empty")

        # over the context: how long it is and what fits; the chat back as it was, the text in the box
        box.fill(LONG_MESSAGE)
        page.locator("#send").click()
        expect(status).to_contain_text(re.compile(r"The prompt is \d[\d,]* tokens long.*fits at most \d+"),
                                       timeout=60_000)
        expect(box).to_have_value(LONG_MESSAGE)
        expect(chat).to_contain_text("Hello there.")
        expect(chat).not_to_contain_text("Please read all of this.")
        no_error_badges(page)
        shot(page, "refused-over-context")
        # the offer: the end that fits, in the box to be read, then sent and answered
        page.locator("#keep-end").click()
        expect(status).to_contain_text("Kept the last", timeout=20_000)
        kept = box.input_value()
        assert LONG_MESSAGE.endswith(kept) and 0 < len(kept) < len(LONG_MESSAGE), len(kept)
        expect(page.locator("#keep-end")).to_be_hidden()
        page.locator("#send").click()
        expect(status).to_contain_text("saved as conversation", timeout=60_000)
        expect(chat).to_contain_text("Please read all of this.")

        # a model that is not on this machine: refused before anything promises a load
        choose(page, "#chat-model", re.compile(r"^LLaDA-8B-Instruct \(diffusion, not on this machine\)"))
        box.fill("Hello")
        page.locator("#send").click()
        expect(status).to_contain_text("LLaDA-8B-Instruct cannot answer here: its weights (GSAI-ML/LLaDA-8B-Instruct) "
                                       "are not on this machine", timeout=20_000)
        expect(status).to_contain_text("huggingface-cli download GSAI-ML/LLaDA-8B-Instruct")
        expect(box).to_have_value("Hello")
        expect(chat).to_contain_text("Hello there.")
        assert page.locator("#live-panel [data-mode='loading']").count() == 0
        no_error_badges(page)
        shot(page, "refused-not-on-this-machine")
        page.close()
    stored = ctx.store.list_conversations()
    ctx.close()
    assert len(stored) == 1                       # the one answered turn; no refusal stored a row
