"""A message over the model's context cut to the end that fits (app/keep_end.py): the cut itself,
with a chat format that wraps the message and tokens that change at the cut, and Chat's offer
after the refusal, whose cut message is then answered."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat import ChatHandlers
from app.keep_end import kept_end
from app.messages import Refusal
from tests.app.test_app_handlers import OUT, SETTINGS, named, settled
from tests.e2e.app_fakes import fake_context
from tests.fakes import FakeDiffusionBackend

MESSAGE = "The first part. " * 10 + "The end that matters."


def chars(text: str) -> list[int]:
    return [ord(c) for c in text]


def unchars(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids)


def test_the_cut_keeps_the_longest_end_whose_whole_prompt_fits():
    wrapped = lambda text: len(text) + 12                  # noqa: E731 - the chat format's own 12 tokens
    kept = kept_end(MESSAGE, wrapped, 50, chars, unchars)
    assert kept == MESSAGE[-38:] and wrapped(kept) == 50
    assert kept_end("short", wrapped, 50, chars, unchars) == "short"          # it fits: unchanged
    assert kept_end(MESSAGE, wrapped, 12, chars, unchars) == ""               # no room at all


def test_a_cut_that_changes_the_tokens_is_measured_again_until_it_fits():
    # a tokenizer whose text starting with a space costs two more tokens (a marker): the first cut
    # lands on a space and overflows by two, so the cut moves on
    def prompt_length(text: str) -> int:
        return len(text) + (2 if text.startswith(" ") else 0)
    kept = kept_end("abc def ghi", prompt_length, 4, chars, unchars)
    assert prompt_length(kept) <= 4 and "abc def ghi".endswith(kept) and kept == "ghi"


def test_chat_offers_the_cut_after_the_refusal_and_answers_it(tmp_path):
    backend = FakeDiffusionBackend("ok", max_length=200, name="fake-bd")
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    try:
        chat = ChatHandlers(context, updates_per_second=1e9)
        message = "x" * 300 + "the end"
        shown = []
        with pytest.raises(Refusal, match="prompt is .* tokens long") as refused:
            for update in chat.submit(message, [], None, None, None, "fake-bd", "", False, settings=named(SETTINGS)):
                shown.append(update)
        # kept, and offered, with the sentence itself: no update before it shows either (app/messages.py)
        assert refused.value.shows["prompt"] == message and refused.value.shows["keep_end"].visible
        assert not any(getattr(u[OUT["keep_end"]], "visible", False) is True or u[OUT["prompt"]] == message
                       for u in shown)
        kept, status, button = chat.keep_end(message, None, [], "fake-bd", "", settings=named(SETTINGS))
        assert message.endswith(kept) and kept.endswith("the end") and len(kept) < len(message)
        assert f"Kept the last {len(kept)} characters" in status and not button.visible
        final = settled(list(chat.submit(kept, [], None, None, None, "fake-bd", "", False,
                                         settings=named(SETTINGS))))[-1]
        assert final[OUT["chatbot"]][-1]["content"] == "ok" and not final[OUT["keep_end"]].visible
        assert kept in backend.tokenizer.decode(backend.prompts[-1])
        with pytest.raises(gr.Error, match="fits the context as it is"):
            chat.keep_end("short", None, [], "fake-bd", "", settings=named(SETTINGS))
        with pytest.raises(gr.Error, match="Nothing of the message fits"):
            chat.keep_end(message, None, [], "fake-bd", "", settings=named((190, 10, 8, "threshold", 0.9, 0.0, 0)))
    finally:
        context.close()
