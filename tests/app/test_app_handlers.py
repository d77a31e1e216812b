"""The app's handlers called as plain (generator) functions, with fake backends in the AppContext:
streaming, Stop, bad input as sentences, storage and replay, compare, agent, exports, models."""

from __future__ import annotations

import html
import os
import time

import gradio as gr
import pytest
import torch
from safetensors.torch import save_file

from app.agent_tab import AgentHandlers
from app.chat import CHAT_OUTPUTS, ChatHandlers, stored_world
from app.compare import CompareHandlers
from app.conversation_world import DEFAULT_WORLD, world_from_spec
from app.live import markdown_safe
from app.models_tab import ModelsHandlers
from app.sessions_tab import SessionsHandlers
from app.state import AppContext
from app.throttle import Throttle
from app.trace_panel import scrub_panel
from engine.model_access import ModelAccess
from tests.e2e.app_fakes import AR_ANSWER, XSS, fake_backends, fake_context
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.format import render_call
from world.start import world_for
from world.task_sets import load_heldout_tasks
from world.tasks import make_task

NAMES = ("gen_length", "block_size", "steps", "sampler", "threshold", "temperature", "seed")
SETTINGS = (64, 16, 8, "threshold", 0.9, 0.0, 0)
AGENT = (256, 32, 32, "threshold", 0.9)


def named(values) -> dict:
    """Control values as the tabs get them: one mapping, name -> value."""
    return dict(zip(NAMES, values))
OUT = {name: i for i, name in enumerate(CHAT_OUTPUTS)}


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def ask(chat: ChatHandlers, message: str, history=None, conversation_id=None, model="fake-bd", settings=SETTINGS,
        world=None, tree=None, random_seed=False):
    return settled(list(chat.submit(message, history or [], conversation_id, world, tree, model, "",
                                    random_seed, settings=named(settings))))


def settled(updates: list) -> list:
    """The updates, the last one replaced by what the page shows at the end: each output's last
    value that was not a skip (the plots come in an update of their own, after the rest)."""
    final = list(updates[-1])
    for update in reversed(updates):
        for i, value in enumerate(update):
            if final[i] == gr.skip() and value != gr.skip():
                final[i] = value
    return [*updates[:-1], tuple(final)]


def live_updates(updates) -> list:
    """The updates drawn while the turn streamed: live, or a replay once the model was done."""
    return [u for u in updates if isinstance(u[OUT["panel"]], str)
            and ('data-mode="live"' in u[OUT["panel"]] or 'data-mode="replay"' in u[OUT["panel"]])]


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
    live = live_updates(updates)
    assert len(live) > 2
    assert "dp-cell dp-mask" in live[0][OUT["panel"]]
    assert 'data-mode="done"' in final[OUT["panel"]] and "dp-cell dp-mask" not in final[OUT["panel"]]
    view = final[OUT["trace"]]
    assert len(live) == len(view.frames) and view.result.text.startswith("Hi! ")
    # the hostile token is one escaped cell in the grid and escaped text in the chat
    assert XSS not in final[OUT["panel"]] and "&lt;img src=x onerror=alert(1)&gt;" in final[OUT["panel"]]
    assert final[OUT["chatbot"]][-1]["content"] == markdown_safe(view.result.text)
    assert XSS not in final[OUT["chatbot"]][-1]["content"]
    history = final[OUT["history"]]
    assert history == [{"role": "user", "content": "Say hi"},
                       {"role": "assistant", "content": view.result.text, "shown": view.result.text}]
    assert "saved as conversation" in final[OUT["status"]]


def test_default_rate_still_sends_a_live_update_and_the_final_one(ctx):
    updates = ask(ChatHandlers(ctx), "Say hi")
    assert len(live_updates(updates)) >= 1 and 'data-mode="done"' in updates[-1][OUT["panel"]]


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
    assert said(error).startswith("There is no model 'no-such-model' in this server's catalog")


def test_broken_model_is_a_sentence_and_the_message_is_escaped(tmp_path):
    def loader(name, device):
        raise RuntimeError("safetensors header is corrupt <b>")

    context = AppContext.create(tmp_path / "s.db", preloaded={}, watch=False, loader=loader,
                                access=ModelAccess(allow_paths=True))
    with pytest.raises(gr.Error) as error:
        ask(ChatHandlers(context), "hi", model=str(tmp_path / "broken"))
    assert "could not be loaded" in said(error) and "corrupt <b>" in said(error)   # plain text; toasts escape it


def test_prompt_longer_than_the_context_is_a_sentence(tmp_path):
    context = fake_context(tmp_path, backends={"fake-bd": FakeDiffusionBackend("ok", max_length=100)})
    with pytest.raises(gr.Error, match="prompt is .* tokens long"):
        ask(ChatHandlers(context), "x" * 200)


def test_stop_keeps_the_partial_answer_as_a_stopped_turn_and_frees_the_model(ctx):
    chat = ChatHandlers(ctx, updates_per_second=1e9)
    long = (512, 8, 8, "low_confidence", 0.9, 0.0, 0)     # one token per forward
    ctx.registry.get("fake-bd").target = "abc " * 120
    stream = chat.submit("Say hi", [], None, None, None, "fake-bd", "", False, settings=named(long), key=("s", "chat"))
    updates = [next(stream) for _ in range(4)]
    assert 'data-mode="live"' in updates[-1][OUT["panel"]]
    assert ctx.runs.stop(("s", "chat"))                   # what the Stop button does
    final = settled(list(stream))[-1]
    assert 'data-mode="stopped"' in final[OUT["panel"]] and final[OUT["status"]].startswith("Stopped.")
    conversation = ctx.store.get_conversation(final[OUT["conversation_id"]])
    answer = conversation["turns"][-1]
    assert answer["generation"].stats.stop_reason == "cancelled" and 3 <= len(answer["generation"].frames) < 100
    assert not ctx.runs.running(("s", "chat")) and not ctx.runs.stop(("s", "chat"))   # idle: Stop does nothing
    ctx.registry.get("fake-bd").target = "ok"
    assert ask(chat, "again", conversation_id=conversation["id"])[-1][OUT["trace"]].result.stats.stop_reason == "eos"


def test_a_closed_stream_saves_what_was_decided(ctx):
    chat = ChatHandlers(ctx, updates_per_second=1e9)
    stream = chat.submit("Say hi", [], None, None, None, "fake-bd", "", False, settings=named(SETTINGS))
    next(stream), next(stream), next(stream)
    stream.close()                                        # what Gradio does on a client's cancel / New chat
    turns = ctx.store.get_conversation(ctx.store.list_conversations()[0]["id"])["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert turns[1]["generation"].stats.stop_reason == "cancelled"


def test_a_run_that_fails_before_its_first_forward_writes_nothing(tmp_path):
    context = fake_context(tmp_path, backends={"fake-bd": FakeDiffusionBackend("ok", max_length=100)})
    with pytest.raises(gr.Error):
        ask(ChatHandlers(context), "x" * 200)
    assert context.store.list_conversations() == []


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


def test_regenerate_keeps_versions_and_an_edit_branches_keeping_every_stored_turn(ctx):
    chat = ChatHandlers(ctx)
    final = ask(chat, "Say hi")[-1]
    history, cid = final[OUT["history"]], final[OUT["conversation_id"]]
    state = (cid, final[OUT["world"]], final[OUT["tree"]], "fake-bd", "", False)
    warm = named((64, 16, 8, "threshold", 0.9, 0.7, 0))
    again = settled(list(chat.regenerate(history, *state, settings=warm)))[-1]
    fork = again[OUT["tree"]].root
    seeds = [item.seed for item in fork.items]
    assert len(again[OUT["history"]]) == 2 and len(fork.items) == 2 and fork.at == 1
    assert seeds[0] is None and seeds[1] is not None and f"seed {seeds[1]}" in again[OUT["status"]]
    assert f"version 2/2 · seed {seeds[1]}" in again[OUT["chatbot"]][-1]["content"]
    assert "version" not in final[OUT["chatbot"]][-1]["content"]          # one version: no arrows
    third = settled(list(chat.regenerate(again[OUT["history"]], cid, again[OUT["world"]], again[OUT["tree"]],
                                         "fake-bd", "", False, settings=warm)))[-1]
    assert third[OUT["tree"]].root.items[2].seed != seeds[1]          # a new seed each time
    shown, back, _world, older, trace, panel, _scrubber, preview = chat.show_version("0:-1", third[OUT["tree"]])
    shown, back, _world, older, trace, panel, _scrubber, preview = chat.show_version("0:-1", older)
    assert older.root.at == 0 and "version 1/3" in shown[-1]["content"] and back[-1] == history[-1]
    assert trace is final[OUT["trace"]] and panel == final[OUT["panel"]]    # the panel shows the version shown
    assert not preview.visible                                          # not a page: no page preview
    # an edit of the message: a fourth version of the exchange, the edited text its message
    edited = settled(list(chat.edit((0, "Say hi, edited"), back, cid, _world, older, "fake-bd", "", False,
                                    settings=named(SETTINGS))))[-1]
    assert [m["content"] for m in edited[OUT["history"]] if m["role"] == "user"] == ["Say hi, edited"]
    assert edited[OUT["tree"]].root.at == 3 and "version 4/4" in edited[OUT["chatbot"]][-1]["content"]
    roles = [t["role"] for t in ctx.store.get_conversation(cid)["turns"]]
    assert roles == ["user", "assistant"] * 4
    assert chat.show_version("not a pick", edited[OUT["tree"]]) == (gr.skip(),) * 8
    with pytest.raises(gr.Error, match="no answer to regenerate"):
        list(chat.regenerate([], None, None, None, "fake-bd", "", False, settings=named(SETTINGS)))


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
    updates = settled(list(CompareHandlers(ctx, updates_per_second=1e9).run("Say hi", "fake-bd", "fake-ar",
                                                                            settings=named(SETTINGS))))
    panel_a, panel_b, table, race, status = updates[-1]
    assert len(updates) > 2 and 'data-mode="done"' in panel_a and 'data-mode="done"' in panel_b
    assert "<th>model time</th>" in table and "<th>answer tokens</th>" in table    # engine/metrics.py labels
    assert race is not None and "Stored as comparison" in status
    conversation = ctx.store.list_conversations(kind="compare")[0]
    turns = ctx.store.get_conversation(conversation["id"])["turns"]
    assert [t["model"] for t in turns] == [None, "fake-bd", "fake-ar"]
    assert turns[2]["content"] == AR_ANSWER and "interleaved" in conversation["meta"]["schedule"]
    for turn in turns[1:]:                   # each clock counts only that model's forwards
        stats, frames = turn["generation"].stats, turn["generation"].frames
        assert frames[-1].elapsed_s == pytest.approx(stats.seconds, abs=0.05)
    with pytest.raises(gr.Error, match="two different models"):
        list(CompareHandlers(ctx).run("hi", "fake-bd", "fake-bd", settings=named(SETTINGS)))


def test_agent_runs_benchmark_document_and_typed_tasks_live_and_stores_them(tmp_path):
    task, document = make_task("office_sum", "heldout", 7), make_task("doc_html", "heldout", 2)
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    typed = FakeDiffusionBackend(render_call("finish", {"answer": "Your cart is empty."}), max_length=8192)
    writer = FakeDiffusionBackend(oracle_target([document]), max_length=8192)
    context = fake_context(tmp_path, backends={"fake-bd": backend, "fake-typed": typed, "fake-doc": writer})
    agent = AgentHandlers(context, updates_per_second=1e9)
    agent.tasks.update({task["id"]: task, document["id"]: document})
    updates = list(agent.run(task["id"], "", "fake-bd", 8, settings=named(AGENT)))
    panel, steps, world, verdict, preview, files, status, world_page = updates[-1]
    assert any('data-mode="live"' in u[0] for u in updates if isinstance(u[0], str))
    assert "Success" in verdict and "sum_amounts" in steps and "cart" in world
    # the task's world as its pages, on the office after an office tool, kept under the tab's session
    assert 'data-app="office"' in world_page and "/apps/office/?session=" in world_page
    session = context.world_pages.session_for((None, "agent"))
    assert context.world_pages.sessions.get(session).world.invoices == world_for(task).invoices
    stored = context.store.get_conversation(context.store.list_conversations(kind="agent")[0]["id"])
    assert stored["meta"]["success"] is True and stored["meta"]["task_id"] == task["id"]
    assert [c["name"] for t in stored["turns"] for c in t["tool_calls"]] == ["sum_amounts", "finish"]
    _, steps, world, verdict, preview, files, _, world_page = list(agent.run(document["id"], "", "fake-doc", 1,
                                                                             settings=named(AGENT)))[-1]
    assert "Success" in verdict and preview.startswith('<iframe sandbox=""') and "note" in world
    assert "does not touch the world" in world_page
    assert "text answer: an HTML page" in steps and "error: ?" not in steps        # the document step's result
    assert [os.path.basename(f) for f in files["value"]][-1].endswith("-answer.html")
    verdict = list(agent.run("", "Please show my cart.", "fake-typed", 1, settings=named(AGENT)))[-1][3]
    assert "Your cart is empty." in verdict and "no grader" in verdict
    with pytest.raises(gr.Error, match="instruction is empty"):
        list(agent.run("", "  ", "fake-bd", 8, settings=named(AGENT)))


def test_sessions_list_search_export_and_delete(ctx):
    chat, sessions = ChatHandlers(ctx), SessionsHandlers(ctx)
    cid = ask(chat, "Tell me about <script>zebras</script>")[-1][OUT["conversation_id"]]
    ask(chat, "Something else")
    table, picker, status = sessions.refresh("all", "")
    assert "2 conversation(s)" in status and ["Something else", "Tell me about <script>zebras</script>"] == sorted(
        row[2] for row in table["data"])                              # plain text cells: the Dataframe shows text
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
        save_file({"w": torch.zeros(1)}, str(folder / "model.safetensors"))
        wait_for_change(seen)
        table, chat_picker, *_ = handlers.poll(seen)
        assert "sprout-new" in table and "sprout-new" in [v for _, v in chat_picker.choices]
        assert all(update == gr.skip() for update in handlers.poll(context.registry.version))  # nothing new
        context.registry.get("sprout-new")
        seen = context.registry.version
        save_file({"w": torch.ones(1)}, str(folder / "model.safetensors.tmp"))   # a training run's atomic save
        os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
        wait_for_change(seen)
        context.registry.get("sprout-new")
        assert loads == ["sprout-new", "sprout-new"]                 # the new weights load on next use
    finally:
        context.close()


def test_chat_runs_tool_calls_on_the_conversations_world_and_answers_in_text(tmp_path):
    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    chat = ChatHandlers(context, updates_per_second=1e9)
    final = ask(chat, task["instruction"], settings=(128, 32, 32, "threshold", 0.9, 0.0, 0))[-1]
    shown = final[OUT["chatbot"]]
    cards = [m for m in shown if m.get("metadata")]
    titles = [m["metadata"]["title"].split("(")[0] for m in cards]
    assert titles == ["Tool call: search_products", "Tool call: add_to_cart"]
    assert "response:" in cards[0]["content"] and all("tool_call" not in m["content"] for m in shown)
    answer = shown[-1]
    assert "metadata" not in answer and answer["content"] and "<" not in answer["content"]
    world = final[OUT["world"]]
    assert len(world.cart) == 1                           # the call ran on the conversation's world
    conversation = context.store.get_conversation(final[OUT["conversation_id"]])
    assert conversation["meta"]["world"]["task_id"] == task["id"]
    assert [t["role"] for t in conversation["turns"]] == ["user", "assistant", "tool", "assistant", "tool",
                                                          "assistant"]
    assert [c["name"] for t in conversation["turns"] for c in t["tool_calls"]] == [
        "search_products", "add_to_cart", "finish"]
    assert stored_world(conversation).end_state() == world.end_state()     # the world is stored with it
    # the world persists into the next turn, and the model reads the whole conversation
    backend.target = render_call("finish", {"answer": "Done."})
    again = ask(chat, "view my cart", final[OUT["history"]], final[OUT["conversation_id"]], world=world,
                tree=final[OUT["tree"]])[-1]
    assert again[OUT["world"]] is world and len(world.cart) == 1 and again[OUT["chatbot"]][-1]["content"] == "Done."
    assert backend.tokenizer.decode(backend.prompts[-1]).count("<tool_call>") >= 3


def test_a_one_request_model_reads_only_the_new_message_and_keeps_its_world(tmp_path):
    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    backend.one_request_per_chat = True                   # as Sprout was before issue 49: one request per chat
    chat = ChatHandlers(fake_context(tmp_path, backends={"fake-bd": backend}), updates_per_second=1e9)
    final = ask(chat, task["instruction"], settings=(128, 32, 32, "threshold", 0.9, 0.0, 0))[-1]
    world = final[OUT["world"]]
    backend.target = render_call("finish", {"answer": "Done."})
    again = ask(chat, "view my cart", final[OUT["history"]], final[OUT["conversation_id"]], world=world,
                tree=final[OUT["tree"]])[-1]
    assert again[OUT["world"]] is world and len(world.cart) == 1 and again[OUT["chatbot"]][-1]["content"] == "Done."
    prompt = backend.tokenizer.decode(backend.prompts[-1])
    assert "view my cart" in prompt and task["instruction"] not in prompt and "<tool_call>" not in prompt
    assert again[OUT["history"]][0]["content"] == task["instruction"]       # the person still sees it all


def test_no_answer_within_the_tool_steps_is_said_as_the_api_says_it(ctx):
    from app.conversation_world import MAX_REPLIES, no_answer_note

    ctx.registry.get("fake-bd").target = render_call("view_cart", {})
    final = ask(ChatHandlers(ctx), "Show my cart", settings=(64, 16, 16, "threshold", 0.9, 0.0, 0))[-1]
    shown = final[OUT["chatbot"]]
    assert len([m for m in shown if m.get("metadata")]) == MAX_REPLIES
    assert shown[-1]["content"] == markdown_safe(no_answer_note(MAX_REPLIES))
    assert "gave no answer: no answer after 8 tool steps (the limit is 8)" in html.unescape(shown[-1]["content"])


def test_a_malformed_call_is_a_parse_error_card_not_an_answer(ctx):
    backend = ctx.registry.get("fake-bd")
    replies = iter(['<tool_call>{"name": "view_cart", "arguments": </tool_call>', "Your cart is empty."])
    backend.target = lambda prompt: next(replies)
    final = ask(ChatHandlers(ctx), "Show my cart")[-1]
    card, answer = final[OUT["chatbot"]][-2:]
    assert card["metadata"]["title"] == "Parse error: malformed_json" and "not valid JSON" in card["content"]
    assert answer["content"].startswith("Your cart is empty.") and "metadata" not in answer
    assert "Before this answer a tool step failed: a reply did not parse (malformed_json)" in answer["content"]


def test_new_chat_starts_a_new_conversation_world_and_context(ctx):
    chat = ChatHandlers(ctx)
    first = ask(chat, "Say hi")[-1]
    reset = dict(zip(CHAT_OUTPUTS, chat.new_chat()))
    assert reset["history"] == [] and reset["conversation_id"] is None
    # a new world (a new chat's, the one the pages beside the panel now show), not the last one
    assert reset["world"] is not first[OUT["world"]] and reset["world"].cart == []
    assert reset["world"].products == world_from_spec(DEFAULT_WORLD).products
    assert "/apps/shop/?session=" in reset["world_page"]
    second = ask(chat, "Say hi again", reset["history"], reset["conversation_id"])[-1]
    assert second[OUT["conversation_id"]] != first[OUT["conversation_id"]]
    assert "Say hi\n" not in ctx.registry.get("fake-bd").tokenizer.decode(ctx.registry.get("fake-bd").prompts[-1])


def test_every_tab_offers_the_models_card_and_examples():
    from app.cards import card_for

    bundled = card_for("sprout-bd")
    heldout = {t["instruction"] for t in load_heldout_tasks()}
    assert 4 <= len(bundled.prompts) <= 6 and set(bundled.prompts) <= heldout
    assert bundled.trained_on and bundled.can and bundled.cannot
    preset = card_for("LLaDA-8B-Instruct")
    assert "LLaDA" in preset.summary and 4 <= len(preset.prompts) <= 6 and not set(preset.prompts) & heldout


def test_picking_a_model_shows_its_card_and_an_agent_example_picks_its_graded_task(ctx):
    from app.widgets import card_update

    markdown, examples = card_update(ctx, "sprout-ar")
    assert "Sprout-AR" in markdown and "Trained on" in markdown
    prompts = [sample[0] for sample in examples["samples"]]
    task = next(t for t in load_heldout_tasks() if t["instruction"] == prompts[0])
    agent = AgentHandlers(ctx)
    assert agent.pick_example([prompts[0]]) == (task["id"], prompts[0])        # graded, in its own world
    assert agent.pick_example(["Write a haiku."]) == ("", "Write a haiku.")  # typed: no grader


def test_compare_races_the_whole_turn_and_marks_each_side_finished_when_it_is(tmp_path):
    from tests.fakes import FakeARBackend

    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    backends = {"fake-bd": world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd")),
                "fake-ar": world_format(FakeARBackend(oracle_target([task]), max_length=8192, name="fake-ar"))}
    context = fake_context(tmp_path, backends=backends)
    updates = settled(list(CompareHandlers(context, updates_per_second=1e9).run(
        task["instruction"], "fake-bd", "fake-ar", settings=named((128, 32, 32, "threshold", 0.9, 0.0, 0)))))
    panels = [(a, b) for a, b, *_ in updates if isinstance(a, str) and isinstance(b, str)]
    # the diffusion side (fewer forwards) is drawn finished while the AR side is still being drawn
    assert any('data-mode="done"' in a and 'data-mode="done"' not in b for a, b in panels)
    panel_a, panel_b, table, _race, status = updates[-1]
    assert 'data-mode="done"' in panel_a and 'data-mode="done"' in panel_b
    assert table.count("this turn (3 generations)") == 2 and table.count('data-side-state="finished"') == 2
    assert status.startswith("this turn: fake-bd took") and "(3 generation(s))" in status
    turns = context.store.get_conversation(context.store.list_conversations(kind="compare")[0]["id"])["turns"]
    for model in ("fake-bd", "fake-ar"):                      # every call of the turn, then finish, per side
        calls = [c["name"] for t in turns if t["model"] == model for c in t["tool_calls"]]
        assert calls == ["search_products", "add_to_cart", "finish"], (model, calls)
    context.close()


def test_a_chat_turns_numbers_say_what_they_cover(tmp_path):
    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    final = ask(ChatHandlers(context, updates_per_second=1e9), task["instruction"],
                settings=(128, 32, 32, "threshold", 0.9, 0.0, 0))[-1]
    assert final[OUT["status"]].startswith("this turn (3 generations): answer tokens ")
    assert "<b>this generation (3 of 3 in this turn)</b>" in final[OUT["panel"]]
    assert final[OUT["heatmap"]].layout.title.subtitle.text == "this generation (3 of 3 in this turn)"
    context.close()
