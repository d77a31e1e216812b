"""A model trained on one request per conversation (Sprout) reads the latest request only, in the
Chat tab and through /v1; its world keeps what the earlier turns did. Other models read it all."""

from __future__ import annotations

from types import SimpleNamespace

from app.worlds import model_context

SYSTEM = {"role": "system", "content": "Be brief."}
EARLIER = [{"role": "user", "content": "Find a navy jacket."},
           {"role": "assistant", "content": '<tool_call>{"name": "search_products", "arguments": {}}</tool_call>'},
           {"role": "tool", "content": "[]"},
           {"role": "assistant", "content": "Nothing found."}]
LATEST = {"role": "user", "content": "hello, who are you?"}


def test_a_one_request_model_reads_the_system_text_and_the_latest_request():
    one = SimpleNamespace(one_request_per_chat=True)
    assert model_context(one, [SYSTEM, *EARLIER, LATEST]) == [SYSTEM, LATEST]
    step = {"role": "assistant", "content": "<tool_call>...</tool_call>"}          # the turn's own steps stay
    assert model_context(one, [*EARLIER, LATEST, step]) == [LATEST, step]
    assert model_context(one, [SYSTEM]) == [SYSTEM]


def test_other_models_read_the_whole_conversation():
    messages = [SYSTEM, *EARLIER, LATEST]
    assert model_context(SimpleNamespace(), messages) == messages
    assert model_context(SimpleNamespace(one_request_per_chat=False), messages) == messages


def test_the_sprout_backends_are_one_request_models():
    from engine.backends.sprout import SproutARBackend, SproutBackend

    assert SproutBackend.one_request_per_chat and SproutARBackend.one_request_per_chat
