"""The launched app driven over HTTP by gradio_client, as a script or another program would:
streaming yields several updates, Stop (cancel) ends a run early, a stored turn replays with
the same frames, bad input comes back as an error sentence."""

from __future__ import annotations

import time

import pytest
from gradio_client import Client

from tests.e2e.app_fakes import fake_context, running_app

pytestmark = pytest.mark.slow
CHAT = ("", 64, 16, 8, "threshold", 0.9, 0.0, 0)      # system, gen_length, block, steps, sampler, threshold, temp, seed
LONG = ("", 512, 8, 8, "low_confidence", 0.9, 0.0, 0)  # one token per forward: 512 slow forwards
DELAY_S = 0.02


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ctx = fake_context(tmp_path_factory.mktemp("client"), delay_s=DELAY_S)
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
    assert len(updates) > 1
    assert 'data-mode="live"' in updates[0][1] and "dp-mask" in updates[0][1]
    chatbot, panel, scrubber, heatmap, commits, _prompt, status = final
    assert 'data-mode="done"' in panel and "saved as conversation" in status
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


def test_compare_streams_both_sides(app):
    _ctx, client = app
    job = client.submit("Say hi", "fake-bd", "fake-ar", 64, 16, 8, "threshold", 0.9, 0.0, 0, api_name="/compare")
    panel_a, panel_b, table, _race, status = job.result(timeout=60)
    assert len(job.outputs()) > 1 and "fake-ar" in table and "Stored as comparison" in status


@pytest.mark.parametrize("args, words", [
    (("", "fake-bd", *CHAT), "prompt is empty"),
    (("hi", "fake-bd", "", 100, 48, 8, "threshold", 0.9, 0.0, 0), "does not divide"),
    (("hi", "nope", *CHAT), "Unknown model"),
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
