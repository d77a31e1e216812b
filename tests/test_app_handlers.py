"""The app's handlers called as plain (generator) functions, with fake backends in the AppContext:
streaming, Stop, bad input as sentences, storage and replay, compare, agent, exports, models."""

from __future__ import annotations

import html
import os
import time

import gradio as gr
import pytest

from app.agent_tab import AgentHandlers
from app.chat import CHAT_OUTPUTS, ChatHandlers, scrub_panel
from app.compare import CompareHandlers
from app.live import markdown_safe
from app.models_tab import ModelsHandlers
from app.sessions_tab import SessionsHandlers
from app.state import AppContext
from app.throttle import Throttle
from engine.world.format import render_call
from engine.world.tasks import make_task
from tests.e2e.app_fakes import AR_ANSWER, XSS, fake_backends, fake_context
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format

SETTINGS = (64, 16, 8, "threshold", 0.9, 0.0, 0)        # gen_length, block, steps, sampler, threshold, temp, seed
OUT = {name: i for i, name in enumerate(CHAT_OUTPUTS)}


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def ask(chat: ChatHandlers, message: str, history=None, conversation_id=None, model="fake-bd", settings=SETTINGS):
    return list(chat.submit(message, history or [], conversation_id, model, "", *settings))


def said(error: pytest.ExceptionInfo) -> str:
    """The sentence a person reads (the toast renders the escaped message as HTML)."""
    return html.unescape(error.value.message)


def grid_of(panel: str) -> str:
    """The token grid without the header line (which says live / replay)."""
    return panel[panel.index('<div class="dp-grid">'):]


def test_throttle_lets_through_at_most_the_rate_and_flags_what_it_held_back():
    now = [0.0]
    throttle = Throttle(per_second=20, clock=lambda: now[0])
    sent = []
    for t in [0.0, 0.01, 0.02, 0.049, 0.05, 0.2, 0.21]:
        now[0] = t
        sent.append(throttle.ready())
    assert sent == [True, False, False, False, True, True, False]
    assert throttle.pending


def test_chat_streams_several_updates_then_the_finished_answer(ctx):
    chat = ChatHandlers(ctx, updates_per_second=1e9)      # every frame becomes an update
    updates = ask(chat, "Say hi")
    final = updates[-1]
    assert len(updates) > 2
    assert 'data-mode="live"' in updates[0][OUT["panel"]] and "dp-mask" in updates[0][OUT["panel"]]
    assert 'data-mode="done"' in final[OUT["panel"]] and "dp-mask" not in final[OUT["panel"]]
    view = final[OUT["trace"]]
    assert len(updates) == len(view.frames) + 1 and view.result.text.startswith("Hi! ")
    # the hostile token is one escaped cell in the grid and escaped text in the chat
    assert XSS not in final[OUT["panel"]] and "&lt;img src=x onerror=alert(1)&gt;" in final[OUT["panel"]]
    assert final[OUT["chatbot"]][-1]["content"] == markdown_safe(view.result.text)
    assert XSS not in final[OUT["chatbot"]][-1]["content"]
    history = final[OUT["history"]]
    assert history == [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": view.result.text}]
    assert "saved as conversation" in final[OUT["status"]]


def test_default_rate_still_sends_a_live_update_and_the_final_one(ctx):
    updates = ask(ChatHandlers(ctx), "Say hi")
    assert len(updates) >= 2 and 'data-mode="live"' in updates[0][OUT["panel"]]


@pytest.mark.parametrize("settings, words", [
    ((100, 48, 8, "threshold", 0.9, 0.0, 0), "does not divide generation length 100"),
    ((64, 4, 8, "low_confidence", 0.9, 0.0, 0), "exceed the block size"),
    ((64, 16, 8, "threshold", 0.0, 0.0, 0), "Threshold must be a number between 0 and 1"),
    ((64, 16, 8.5, "threshold", 0.9, 0.0, 0), "Steps per block must be a whole number"),
], ids=["block-does-not-divide", "steps-over-block", "zero-threshold", "fractional-steps"])
def test_impossible_settings_are_a_sentence(ctx, settings, words):
    with pytest.raises(gr.Error) as error:
        ask(ChatHandlers(ctx), "hi", settings=settings)
    assert words in said(error)


@pytest.mark.parametrize("message", ["", "   \n"], ids=["empty", "blank"])
def test_empty_prompt_is_a_sentence(ctx, message):
    with pytest.raises(gr.Error, match="prompt is empty"):
        ask(ChatHandlers(ctx), message)


def test_unknown_model_is_a_sentence(ctx):
    with pytest.raises(gr.Error) as error:
        ask(ChatHandlers(ctx), "hi", model="no-such-model")
    assert said(error).startswith("Unknown model 'no-such-model': not a preset")


def test_broken_model_is_a_sentence_and_the_message_is_escaped(tmp_path):
    def loader(name, device):
        raise RuntimeError("safetensors header is corrupt <b>")

    context = AppContext.create(tmp_path / "s.db", preloaded={}, watch=False, loader=loader)
    with pytest.raises(gr.Error) as error:
        ask(ChatHandlers(context), "hi", model="broken")
    assert "could not be loaded" in said(error) and "&lt;b&gt;" in error.value.message


def test_prompt_longer_than_the_context_is_a_sentence(tmp_path):
    context = fake_context(tmp_path, backends={"fake-bd": FakeDiffusionBackend("ok", max_length=100)})
    with pytest.raises(gr.Error, match="prompt is .* tokens long"):
        ask(ChatHandlers(context), "x" * 200)


def test_stop_keeps_the_partial_answer_as_a_cancelled_turn_and_frees_the_model(ctx):
    chat = ChatHandlers(ctx, updates_per_second=1e9)
    stream = chat.submit("Say hi", [], None, "fake-bd", "", *SETTINGS)
    first = next(stream)
    second = next(stream)
    stream.close()                                        # what Gradio does on Stop
    conversation = ctx.store.get_conversation(first[OUT["conversation_id"]])
    answer = conversation["turns"][-1]
    assert answer["generation"].stats.stop_reason == "cancelled" and len(answer["generation"].frames) == 2
    panel, scrubber, _heatmap, _commits, status = chat.stopped(second[OUT["trace"]])
    assert 'data-mode="stopped"' in panel and scrubber.maximum == 2 and "Stopped after 2 forwards" in status
    assert ask(chat, "again", conversation_id=conversation["id"])[-1][OUT["trace"]].result.stats.stop_reason == "eos"


def test_a_stored_turn_replays_the_same_frames(ctx):
    final = ask(ChatHandlers(ctx), "Say hi")[-1]
    live = final[OUT["trace"]]
    sessions = SessionsHandlers(ctx)
    _, turns, conversation, _ = sessions.open(str(final[OUT["conversation_id"]]))
    view, scrubber, panel, heatmap, commits = sessions.show_turn(conversation, turns.value)
    assert view.frames == live.frames and view.pieces == live.pieces
    assert grid_of(panel) == grid_of(final[OUT["panel"]])
    assert scrubber.maximum == len(live.frames) and heatmap is not None and commits is not None
    for n in (1, len(live.frames) // 2, len(live.frames)):
        assert grid_of(scrub_panel(view, n)) == grid_of(live.panel(upto=n - 1))


def test_regenerate_and_edit_keep_every_stored_turn(ctx):
    chat = ChatHandlers(ctx)
    final = ask(chat, "Say hi")[-1]
    history, cid = final[OUT["history"]], final[OUT["conversation_id"]]
    again = list(chat.regenerate(history, cid, "fake-bd", "", *SETTINGS))[-1]
    assert len(again[OUT["history"]]) == 2
    text, kept, shown = chat.edit_last(again[OUT["history"]])
    assert text == "Say hi" and kept == [] and shown == []
    ask(chat, "Say hi, edited", kept, cid)
    roles = [t["role"] for t in ctx.store.get_conversation(cid)["turns"]]
    assert roles == ["user", "assistant"] * 3
    with pytest.raises(gr.Error, match="no answer to regenerate"):
        list(chat.regenerate([], None, "fake-bd", "", *SETTINGS))


def test_unwritable_database_is_a_notice_and_chat_still_answers(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    context = AppContext.create(blocker / "sessions.db", model="fake-bd", preloaded=fake_backends(), watch=False)
    assert context.store is None and "Cannot open the session database" in context.notices[0]
    with pytest.warns(UserWarning, match="not saved"):
        final = ask(ChatHandlers(context), "Say hi")[-1]
    assert final[OUT["trace"]].result.text.startswith("Hi!")
    with pytest.raises(gr.Error, match="no session store"):
        SessionsHandlers(context).open("1")


def test_missing_default_model_is_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path / "models"))
    context = AppContext.create(tmp_path / "s.db", model="sprout-bd", baseline="sprout-ar", watch=False)
    assert any("'sprout-bd' is not available" in n and "no folder" in n for n in context.notices)


def test_exports_write_replay_latex_and_the_answer_code(ctx, tmp_path):
    chat = ChatHandlers(ctx)
    shown, preview = chat.export(ask(chat, "Say hi")[-1][OUT["trace"]])
    files = shown["value"]
    assert shown["visible"]
    names = [os.path.basename(f) for f in files]
    assert names == ["say-hi-replay.html", "say-hi-tokens.tex"] and preview == ""
    page = open(files[0], encoding="utf-8").read()
    assert "Content-Security-Policy" in page and XSS not in page
    assert "\\documentclass" in open(files[1], encoding="utf-8").read()

    html_answer = "<!DOCTYPE html><html><body><h1>Shop</h1><script>alert(3)</script></body></html>"
    context = fake_context(tmp_path / "html", backends={"fake-bd": FakeDiffusionBackend(html_answer)})
    page_chat = ChatHandlers(context)
    final = ask(page_chat, "Write a page", settings=(96, 16, 8, "threshold", 0.9, 0.0, 0))[-1]
    files, preview = page_chat.export(final[OUT["trace"]])
    files = files["value"]
    assert files[-1].endswith("-answer.html") and open(files[-1]).read().strip() == html_answer
    assert preview.startswith('<iframe sandbox=""') and "<script>" not in preview
    with pytest.raises(gr.Error, match="no finished answer"):
        chat.export(None)


def test_compare_races_both_models_interleaved_and_stores_the_pair(ctx):
    updates = list(CompareHandlers(ctx, updates_per_second=1e9).run("Say hi", "fake-bd", "fake-ar", *SETTINGS))
    panel_a, panel_b, table, race, status = updates[-1]
    assert len(updates) > 2 and 'data-mode="done"' in panel_a and 'data-mode="done"' in panel_b
    assert "time (own)" in table and race is not None and "Stored as comparison" in status
    conversation = ctx.store.list_conversations(kind="compare")[0]
    turns = ctx.store.get_conversation(conversation["id"])["turns"]
    assert [t["model"] for t in turns] == [None, "fake-bd", "fake-ar"]
    assert turns[2]["content"] == AR_ANSWER and "interleaved" in conversation["meta"]["schedule"]
    for turn in turns[1:]:                   # each clock counts only that model's forwards
        stats, frames = turn["generation"].stats, turn["generation"].frames
        assert frames[-1].elapsed_s == pytest.approx(stats.seconds, abs=0.05)
    with pytest.raises(gr.Error, match="two different models"):
        list(CompareHandlers(ctx).run("hi", "fake-bd", "fake-bd", *SETTINGS))


def test_agent_runs_benchmark_document_and_typed_tasks_live_and_stores_them(tmp_path):
    task, document = make_task("office_sum", "heldout", 7), make_task("doc_html", "heldout", 2)
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    typed = FakeDiffusionBackend(render_call("finish", {"answer": "Your cart is empty."}), max_length=8192)
    writer = FakeDiffusionBackend(oracle_target([document]), max_length=8192)
    context = fake_context(tmp_path, backends={"fake-bd": backend, "fake-typed": typed, "fake-doc": writer})
    agent = AgentHandlers(context, updates_per_second=1e9)
    agent.tasks.update({task["id"]: task, document["id"]: document})
    updates = list(agent.run(task["id"], "", "fake-bd", 8, 256, 32, 32, "threshold", 0.9))
    panel, steps, world, verdict, preview, files, status = updates[-1]
    assert any('data-mode="live"' in u[0] for u in updates if isinstance(u[0], str))
    assert "Success" in verdict and "sum_amounts" in steps and "cart" in world
    stored = context.store.get_conversation(context.store.list_conversations(kind="agent")[0]["id"])
    assert stored["meta"]["success"] is True and stored["meta"]["task_id"] == task["id"]
    assert [c["name"] for t in stored["turns"] for c in t["tool_calls"]] == ["sum_amounts", "finish"]
    _, _, world, verdict, preview, files, _ = list(agent.run(document["id"], "", "fake-doc", 1, 256, 32, 32,
                                                             "threshold", 0.9))[-1]
    assert "Success" in verdict and preview.startswith('<iframe sandbox=""') and "note" in world
    assert [os.path.basename(f) for f in files["value"]][-1].endswith("-answer.html")
    verdict = list(agent.run("", "Please show my cart.", "fake-typed", 1, 256, 32, 32, "threshold", 0.9))[-1][3]
    assert "Your cart is empty." in verdict and "no grader" in verdict
    with pytest.raises(gr.Error, match="instruction is empty"):
        list(agent.run("", "  ", "fake-bd", 8, 256, 32, 32, "threshold", 0.9))


def test_sessions_list_search_export_and_delete(ctx):
    chat, sessions = ChatHandlers(ctx), SessionsHandlers(ctx)
    cid = ask(chat, "Tell me about <script>zebras</script>")[-1][OUT["conversation_id"]]
    ask(chat, "Something else")
    table, picker, status = sessions.refresh("all", "")
    assert "2 conversation(s)" in status and "<script>" not in table and "&lt;script&gt;" in table
    table, picker, status = sessions.refresh("chat", "zebras")
    assert [value for _, value in picker.choices] == [str(cid)]
    _, turns, conversation, _ = sessions.open(str(cid))
    view = sessions.show_turn(conversation, turns.value)[0]
    files = sessions.export(conversation, view)[0]["value"]
    assert files[0].endswith(".json") and any(f.endswith("-replay.html") for f in files)
    others = [r["id"] for r in ctx.store.list_conversations() if r["id"] != cid]
    sessions.delete(str(cid), "all", "")
    assert [r["id"] for r in ctx.store.list_conversations()] == others


def test_a_new_checkpoint_folder_appears_without_a_restart(tmp_path, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("DP_MODELS_DIR", str(models))
    loads: list[str] = []

    def loader(name, device):
        loads.append(name)
        return FakeDiffusionBackend("ok", name=name)

    def wait_for_change(seen: int) -> None:
        deadline = time.monotonic() + 10
        while context.registry.version == seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert context.registry.version > seen, "the watcher saw no change"

    context = AppContext.create(tmp_path / "s.db", preloaded=fake_backends(), watch=True, loader=loader)
    try:
        handlers = ModelsHandlers(context)
        seen = context.registry.version
        assert "sprout-new" not in handlers.table()
        folder = models / "sprout-new"
        folder.mkdir()
        (folder / "config.json").write_text('{"model_type": "sprout", "causal": false}')
        (folder / "model.safetensors").write_bytes(b"v1")
        wait_for_change(seen)
        table, chat_picker, *_ = handlers.poll(seen)
        assert "sprout-new" in table and "sprout-new" in [v for _, v in chat_picker.choices]
        assert all(update == gr.skip() for update in handlers.poll(context.registry.version))  # nothing new
        context.registry.get("sprout-new")
        seen = context.registry.version
        (folder / "model.safetensors.tmp").write_bytes(b"v2")        # a training run's atomic save
        os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
        wait_for_change(seen)
        context.registry.get("sprout-new")
        assert loads == ["sprout-new", "sprout-new"]                 # the new weights load on next use
    finally:
        context.close()
