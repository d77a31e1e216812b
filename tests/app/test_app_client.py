"""The launched app driven over HTTP by gradio_client, as a script or another program would:
streaming yields several updates, Stop (cancel) ends a run early, a stored turn replays with
the same frames, bad input comes back as an error sentence."""

from __future__ import annotations

import time

import pytest
from gradio_client import Client

from app.chat import CHAT_OUTPUTS
from tests.e2e.app_fakes import fake_backends, fake_context, running_app
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.task_sets import load_heldout_tasks

pytestmark = pytest.mark.slow
# the controls in the page's order (app/controls.py); a run's API takes their values positionally
CONTROLS = ("gen_length", "block_size", "steps", "sampler", "threshold", "factor", "entropy_bound", "temperature",
            "top_p", "top_k", "seed", "pace_ms", "edit_threshold", "max_post_steps", "remask", "remask_rounds",
            "remask_count", "cache")
BASE = {"gen_length": 64, "block_size": 16, "steps": 8, "sampler": "threshold", "threshold": 0.9, "factor": 1.0,
        "entropy_bound": 0.5, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": 0, "pace_ms": 0,
        "edit_threshold": 0.9, "max_post_steps": 16, "remask": "off", "remask_rounds": 2, "remask_count": 2,
        "cache": "none"}


def controls(**changes) -> tuple:
    values = {**BASE, **changes}
    return tuple(values[name] for name in CONTROLS)


CHAT = ("", False, "world", *controls())                # system prompt, random seed, tools run in, the controls
LONG = ("", False, "world", *controls(gen_length=512, block_size=8, sampler="low_confidence"))   # 512 slow forwards
TOOL_TASK = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
DELAY_S = 0.02


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tools = world_format(FakeDiffusionBackend(oracle_target([TOOL_TASK]), max_length=8192, name="fake-tools"))
    ctx = fake_context(tmp_path_factory.mktemp("client"), backends={**fake_backends(DELAY_S), "fake-tools": tools})
    with running_app(ctx) as (demo, url):
        yield ctx, Client(url, analytics_enabled=False, verbose=False)
    ctx.close()


def grid_of(panel: str) -> str:
    return panel[panel.index('<div class="dp-grid">'):]


def wait_for(condition, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_chat_call_streams_several_updates_and_replays_from_the_store(app):
    ctx, client = app
    job = client.submit("Say hi", "fake-bd", *CHAT, api_name="/chat")
    final = job.result(timeout=60)
    updates = job.outputs()
    live = [u[1] for u in updates if 'data-mode="live"' in u[1]]
    assert "dp-empty" in updates[0][1]                   # a run starts by clearing the last one's panel
    assert live and "dp-cell dp-mask" in live[0]
    # what a client gets: CHAT_OUTPUTS less the states the page keeps and the button it shows, in order
    page_only = ("history", "conversation_id", "world", "trace", "tree", "keep_end")
    shown = [name for name in CHAT_OUTPUTS if name not in page_only]
    assert len(final) == len(shown)
    final = dict(zip(shown, final))
    chatbot, panel, scrubber, heatmap, commits, status = (final[n] for n in ("chatbot", "panel", "scrubber",
                                                                              "heatmap", "commits", "status"))
    assert 'data-mode="done"' in panel and "saved as conversation" in status
    # the run's first update shows the world the calls run in, as its pages
    assert "/apps/shop/?session=" in updates[0][shown.index("world_page")]
    assert chatbot[-1]["content"][0]["text"].startswith("Hi! &lt;img")

    conversation = ctx.store.list_conversations(kind="chat")[0]
    _transcript, turns = client.predict(str(conversation["id"]), api_name="/sessions_open")[:2]
    replay_scrubber, replay_panel, _heatmap, _commits = client.predict(turns["value"], api_name="/sessions_turn")
    assert grid_of(replay_panel) == grid_of(panel)
    assert replay_scrubber["maximum"] == scrubber["maximum"] == len(
        ctx.store.get_conversation(conversation["id"])["turns"][1]["generation"].frames)


def test_cancel_stops_the_run_and_the_model_is_free_again(app):
    ctx, client = app
    backend = ctx.registry.get("fake-bd")
    before = backend.denoise_calls
    job = client.submit("Say hi", "fake-bd", *LONG, api_name="/chat")
    wait_for(lambda: len(job.outputs()) >= 2)
    job.cancel()
    wait_for(job.done)
    time.sleep(0.5)
    stopped_at = backend.denoise_calls
    time.sleep(0.5)
    assert backend.denoise_calls == stopped_at < before + 200     # it stopped, long before 512 forwards
    conversation = ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])
    assert conversation["turns"][-1]["generation"].stats.stop_reason == "cancelled"
    again = client.submit("Say hi", "fake-bd", *CHAT, api_name="/chat").result(timeout=60)
    assert 'data-mode="done"' in again[1]


def test_a_chat_turn_that_calls_tools_stores_its_steps_and_replays_them(app):
    ctx, client = app
    client = Client(client.src, analytics_enabled=False, verbose=False)    # a new browser session: a new chat
    final = client.predict(TOOL_TASK["instruction"], "fake-tools", "", False, "world",
                           *controls(gen_length=128, block_size=32, steps=32), api_name="/chat")
    chatbot, status = final[0], final[6]
    titles = [m["metadata"]["title"] for m in chatbot if m.get("metadata") and m["metadata"].get("title")]
    assert len(titles) == 2 and titles[0].startswith("Tool call: search_products") and "2 tool call(s)" in status
    assert "tool_call" not in str(chatbot)
    conversation = ctx.store.get_conversation(ctx.store.list_conversations(kind="chat")[0]["id"])
    calls = [c["name"] for t in conversation["turns"] for c in t["tool_calls"]]
    assert calls == ["search_products", "add_to_cart", "finish"]
    _transcript, turns = client.predict(str(conversation["id"]), api_name="/sessions_open")[:2]
    stored = [t for t in conversation["turns"] if t["generation"] is not None]
    assert len(turns["choices"]) == len(stored) == 3              # every step's generation replays
    for (_label, idx), turn in zip(turns["choices"], stored):
        scrubber, panel, _heatmap, _commits = client.predict(idx, api_name="/sessions_turn")
        assert 'data-mode="replay"' in panel and scrubber["maximum"] == len(turn["generation"].frames)


def test_compare_streams_both_sides(app):
    _ctx, client = app
    job = client.submit("Say hi", "fake-bd", "fake-ar", *controls(), api_name="/compare")
    panel_a, panel_b, table, _race, status = job.result(timeout=60)
    assert len(job.outputs()) > 1 and "fake-ar" in table and "Stored as comparison" in status


@pytest.mark.parametrize("args, words", [
    (("", "fake-bd", *CHAT), "prompt is empty"),
    (("hi", "fake-bd", "", False, "world", *controls(gen_length=100, block_size=48)), "does not divide"),
    (("hi", "nope", *CHAT), "There is no model 'nope'"),
], ids=["empty", "impossible-sliders", "unknown-model"])
def test_bad_input_comes_back_as_a_sentence(app, args, words):
    _ctx, client = app
    with pytest.raises(Exception, match=words):
        client.predict(*args, api_name="/chat")


def test_launch_defaults_and_a_clear_error_for_a_missing_gpu(capsys):
    import torch

    import launch

    args = launch.parse_args([])
    assert (args.model, args.baseline, args.host, args.port, args.device) == (
        "sprout-bd", "sprout-ar", "127.0.0.1", 7860, "auto")
    assert args.db.endswith("sessions.db")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert launch.main(["--device", "cuda"]) == 2
    assert "no CUDA GPU is visible" in capsys.readouterr().err
