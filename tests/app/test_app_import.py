"""A conversation exported as JSON comes back through Import (gradio_client, over HTTP): the same
turns, texts, models, tool calls and frames, as a new conversation; a file that is not an
export is refused with a sentence and stores nothing."""

from __future__ import annotations

import json

import pytest
from gradio_client import Client, handle_file

from engine.trace import GenerationConfig
from tests.e2e.app_fakes import fake_context, running_app
from tests.visualizer.test_visualizer_traces import make_eos_result, make_result

pytestmark = pytest.mark.slow


def _comparable(conversation: dict) -> list[tuple]:
    out = []
    for t in conversation["turns"]:
        g = t["generation"]
        out.append((t["role"], t["content"], t["model"], [(c["name"], c["arguments"], c["observation"])
                                                           for c in t["tool_calls"]],
                    None if g is None else g.to_dict(), None if t["config"] is None else dict(t["config"].to_dict())))
    return out


def test_an_exported_conversation_imports_back(tmp_path):
    ctx = fake_context(tmp_path)
    store = ctx.store
    config = GenerationConfig(gen_length=8, block_size=4, steps=4, sampler="threshold")
    cid = store.create_conversation("chat", "Export <b>me</b>", model="fake-bd", meta={"system": "be brief"})
    store.add_turn(cid, "user", "Say <img src=x onerror=alert(1)>")
    store.add_turn(cid, "assistant", make_result().text, generation=make_result(), config=config, model="fake-bd",
                   tool_calls=[{"step": 0, "name": "view_cart", "arguments": {}, "observation": "{\"items\":[]}"}])
    store.add_turn(cid, "assistant", make_eos_result().text, generation=make_eos_result(), config=config,
                   model="fake-bd")
    with running_app(ctx) as (_demo, url):
        client = Client(url, analytics_enabled=False, verbose=False)
        client.predict(str(cid), api_name="/sessions_open")
        files, _preview = client.predict(api_name="/sessions_export")            # a File update: its paths
        path = next(p for p in files["value"] if p.endswith(".json"))
        assert json.loads(open(path, encoding="utf-8").read())["title"] == "Export <b>me</b>"
        result = client.predict(handle_file(path), "all", "", api_name="/sessions_import")
        status = result[2]
        assert "Imported as conversation" in status
        new_id = int(status.split("#")[1].split(" ")[0])
        with pytest.raises(Exception, match="not a conversation"):
            bad = tmp_path / "bad.json"
            bad.write_text('{"hello": 1}', encoding="utf-8")
            client.predict(handle_file(str(bad)), "all", "", api_name="/sessions_import")
    original, imported = store.get_conversation(cid), store.get_conversation(new_id)
    assert new_id != cid and imported["kind"] == "chat" and imported["title"] == original["title"]
    assert imported["meta"]["system"] == "be brief" and imported["meta"]["imported_from"]["id"] == cid
    assert _comparable(imported) == _comparable(original)
    assert len(store.list_conversations()) == 2                                  # the bad file stored nothing
    ctx.close()
