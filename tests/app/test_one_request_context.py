"""What a model reads of a conversation. Weights that declare they were trained on one request
per conversation (playground.json "context": "latest_request", as the Sprout twins shipped before
issue 49's campaign did) read the latest request only, in the Chat tab, through /v1 and in the
conversation benchmark; their world keeps what the earlier turns did. Every other model, the
shipped twins now among them, reads it all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.conversation_world import model_context
from engine.backends.base import BackendError, Capabilities
from engine.backends.sprout import declared_context, load

SYSTEM = {"role": "system", "content": "Be brief."}
EARLIER = [{"role": "user", "content": "Find a navy jacket."},
           {"role": "assistant", "content": '<tool_call>{"name": "search_products", "arguments": {}}</tool_call>'},
           {"role": "tool", "content": "[]"},
           {"role": "assistant", "content": "Nothing found."}]
LATEST = {"role": "user", "content": "hello, who are you?"}
MODELS = Path(__file__).resolve().parents[2] / "models"


def test_a_one_request_model_reads_the_system_text_and_the_latest_request():
    one = SimpleNamespace(one_request_per_chat=True)
    assert model_context(one, [SYSTEM, *EARLIER, LATEST]) == [SYSTEM, LATEST]
    step = {"role": "assistant", "content": "<tool_call>...</tool_call>"}          # the turn's own steps stay
    assert model_context(one, [*EARLIER, LATEST, step]) == [LATEST, step]
    assert model_context(one, [SYSTEM]) == [SYSTEM]


def test_other_models_read_the_whole_conversation():
    messages = [SYSTEM, *EARLIER, LATEST]
    assert model_context(Capabilities(), messages) == messages                  # the default
    assert model_context(SimpleNamespace(one_request_per_chat=False), messages) == messages


def test_the_shipped_twins_read_the_conversation_and_loading_reads_the_declared_rule(tmp_path):
    assert declared_context(MODELS / "sprout-bd") == declared_context(MODELS / "sprout-ar") == "conversation"
    assert not load(MODELS / "sprout-bd", "cpu").one_request_per_chat      # trained on conversations
    one_request = tmp_path / "sprout-one-request"
    shutil.copytree(MODELS / "sprout-bd", one_request)
    settings = json.loads((one_request / "playground.json").read_text())
    settings["context"] = "latest_request"
    (one_request / "playground.json").write_text(json.dumps(settings))
    assert load(one_request, "cpu").one_request_per_chat          # weights trained on one request each
    del settings["context"]
    (one_request / "playground.json").write_text(json.dumps(settings))
    assert declared_context(one_request) == "conversation"            # the default: the whole conversation


def test_an_unknown_context_is_a_sentence(tmp_path):
    (tmp_path / "playground.json").write_text(json.dumps({"context": "everything"}))
    with pytest.raises(BackendError, match="must be one of conversation, latest_request"):
        declared_context(tmp_path)
