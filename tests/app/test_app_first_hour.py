"""The handlers and helpers behind issue 30's smaller faults, without a browser: ids named from the
world, task labels in words, the Models table's order, the replay pace's info line, a stored
chat read back into Chat's history exactly as it was live, Rename's sentences, Copy answer's text,
a call cut by Stop marked as such, and plots on a transparent background."""

from __future__ import annotations

import html
from types import SimpleNamespace

import gradio as gr
import pytest

from app.agent_tasks import benchmark_tasks, task_label
from app.chat import ChatHandlers
from app.chat_tab import answer_text
from app.chat_turn import CUT_CALL_NOTE, ChatTurn
from app.conversation_world import DEFAULT_WORLD, world_from_spec
from app.live import REPLAY_MS
from app.models_tab import models_table
from app.names import with_names
from app.resume import CannotResume, resume
from app.sessions_tab import SessionsHandlers, pace_info
from app.settings import PACE_MS
from app.steps import context_messages, steps_html
from engine.trace import Frame
from sessions.export_schema import MAX_TITLE_CHARS
from tests.app.test_app_handlers import OUT, ask
from tests.e2e.app_fakes import fake_context
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from visualizer.plots import commits_per_forward, decision_heatmap
from world.agent import Step
from world.task_sets import load_heldout_tasks


@pytest.fixture
def world():
    return world_from_spec(DEFAULT_WORLD)


def test_an_answer_names_each_id_the_world_holds_once(world):
    product, customer = sorted(world.products)[0], sorted(world.customers)[0]
    p = world.products[product]
    text = f"Added 1 x {product} in size L; {product} is in the cart. Customer {customer}. P0ZZ stays."
    named = with_names(text, world)
    assert named == (f"Added 1 x {product} ({p['color']} {p['style']}) in size L; {product} is in the cart. "
                     f"Customer {customer} ({world.customers[customer]['name']}). P0ZZ stays.")
    assert with_names(named, world) == named                      # already named: not named twice
    assert with_names("no ids here", world) == "no ids here" and with_names(text, None) == text


def test_task_labels_read_as_the_whole_instruction_and_its_kind():
    for task in benchmark_tasks():
        label = task_label(task)
        assert " ".join(task["instruction"].split()) in label
        assert "heldout" not in label and "_" not in label.rsplit("(", 1)[1], label
    shop = next(t for t in load_heldout_tasks() if t["intent"] == "shop_out_of_stock")
    assert task_label(shop).endswith("(shop: out of stock)")


def test_the_models_table_lists_the_models_on_this_machine_first():
    rows = [{"name": n, "kind": "diffusion", "driver": "x", "source": "preset", "available": a, "description": ""}
            for n, a in (("far-1", False), ("here-1", True), ("far-2", False), ("here-2", True))]
    table = models_table(rows)
    order = [table.index(name) for name in ("here-1", "here-2", "far-1", "far-2")]
    assert order == sorted(order)


def test_the_replay_pace_says_what_it_shows_and_what_zero_means():
    info = pace_info()
    assert f"{PACE_MS} ms unless you change it" in info and f"0 plays at {REPLAY_MS} ms" in info
    assert "0 = the default" not in info


def test_a_stored_chat_reads_back_as_the_history_it_was_live(tmp_path):
    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    final = ask(ChatHandlers(context, updates_per_second=1e9), task["instruction"],
                settings=(128, 32, 32, "threshold", 0.9, 0.0, 0))[-1]
    conversation = context.store.get_conversation(final[OUT["conversation_id"]])
    state = resume(conversation)
    live = final[OUT["history"]]
    assert context_messages(state["history"]) == context_messages(live)     # what the model reads next
    assert [e.get("shown") for e in state["history"]] == [e.get("shown") for e in live]
    assert state["chatbot"] == final[OUT["chatbot"]]
    assert state["world"].end_state() == final[OUT["world"]].end_state()
    assert state["conversation_id"] == conversation["id"] and state["model"] == "fake-bd"
    context.close()


def test_only_a_chat_can_be_continued_in_chat():
    with pytest.raises(CannotResume, match="Open a conversation first"):
        resume(None)
    with pytest.raises(CannotResume, match="only chats can be continued"):
        resume({"id": 3, "kind": "agent", "turns": [], "meta": {}})


def test_rename_stores_the_title_and_refuses_an_empty_or_long_one(tmp_path):
    context = fake_context(tmp_path)
    final = ask(ChatHandlers(context, updates_per_second=1e9), "hello")[-1]
    cid = str(final[OUT["conversation_id"]])
    sessions = SessionsHandlers(context)
    _list, _picker, status, _transcript, opened = sessions.rename(cid, "  A  better   title ", "all", "")
    assert context.store.get_conversation(int(cid))["title"] == "A better title" == opened["title"]
    assert "Renamed" in status
    for title, words in (("   ", "title is empty"), ("x" * (MAX_TITLE_CHARS + 1), "at most")):
        with pytest.raises(gr.Error) as error:
            sessions.rename(cid, title, "all", "")
        assert words in html.unescape(error.value.message)
    with pytest.raises(gr.Error):
        sessions.rename(None, "t", "all", "")
    context.close()


def test_copy_answer_is_the_last_answer_as_read():
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "<tool_call>…", "title": "Tool call: x", "shown": "call: x"},
               {"role": "tool", "content": "{}"},
               {"role": "assistant", "content": "Added P1.", "shown": "Added P1 (red belt)."},
               {"role": "assistant", "content": "", "shown": "(a note)", "note": True}]
    assert answer_text(history) == "Added P1 (red belt)."
    with pytest.raises(gr.Error, match="no answer to copy"):
        answer_text(history[:3])


def cancelled_step(text: str) -> Step:
    result = SimpleNamespace(stats=SimpleNamespace(stop_reason="cancelled", nfe=2))
    return Step(text, None, None, None, result, 0.1)


def test_a_call_cut_by_stop_is_marked_not_shown_as_written():
    half = '<tool_call>{"name":"add_to_cart","arguments":{"product_id":"P20'
    assert "cut off by Stop" in steps_html([cancelled_step(half)])
    turn = ChatTurn.__new__(ChatTurn)                  # only what entries() reads
    turn.steps, turn.structured, turn.stopped, turn.known = [cancelled_step(half)], False, True, []
    entries = turn.entries(None, "")
    assert [e["shown"] for e in entries] == [CUT_CALL_NOTE] and "P20" not in str(entries)


def test_plots_are_transparent_with_the_legend_above_the_plot_area():
    frame = Frame(nfe=1, block=0, round=0, committed=[(0, 5, 0.9)], canvas=[5], elapsed_s=0.1)
    for figure in (commits_per_forward([frame]), decision_heatmap([frame], {5: "a"}, 1, 1)):
        assert figure.layout.paper_bgcolor == "rgba(0,0,0,0)" and figure.layout.plot_bgcolor == "rgba(0,0,0,0)"
    for scope in ("", "this generation"):
        layout = commits_per_forward([frame], scope=scope).layout
        legend_top_px = (1 - layout.legend.y) * layout.height             # yref "container": of the figure
        title_top_px = (1 - layout.title.y) * layout.height
        assert layout.legend.yref == "container" and layout.legend.yanchor == "top"
        assert legend_top_px >= title_top_px + 30 + (20 if scope else 0)   # below the title and its scope line
        # every entry fits above the plot area, even one per row (a plot about 320 px wide)
        assert legend_top_px + 22 * len(commits_per_forward([frame]).data) <= layout.margin.t


def test_a_scenario_puts_its_whole_instruction_in_the_box_before_it_runs():
    from app.agent_scenarios import scenario_instruction
    from world.office_six import load_office_six
    from world.task_sets import seed_demo_task

    task = seed_demo_task()
    shown = scenario_instruction("black-tshirt")
    assert shown == task["instruction"]
    for value in (task["slots"]["name"], task["slots"]["email"], task["slots"]["address"]):
        assert value in shown                                 # the guest's details, read before any call
    requests = [turn["instruction"] for turn in load_office_six()[0]["turns"]]
    assert scenario_instruction("office-six").splitlines() == [f"{k}. {r}" for k, r in enumerate(requests, 1)]
    assert scenario_instruction("no-such-scenario") == ""
