"""/v1 driven by the official openai client against the launched app: completions, streams,
diffusing canvases, tool calls, every error status, concurrency, and the stored sessions."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from app.api.canvas import MASK_GLYPH
from tests.api.conftest import ANSWER, AR_ANSWER

pytestmark = pytest.mark.slow
SPREAD = {"gen_length": 96, "block_size": 32, "steps": 8, "sampler": "low_confidence"}   # 4 tokens per round
MESSAGES = [{"role": "user", "content": "What is the answer?"}]
LONGER = {**SPREAD, "gen_length": 128}


def ask(client, model="fake-bd", extra_body=SPREAD, **kw):
    return client.chat.completions.create(model=model, messages=MESSAGES, temperature=0, extra_body=extra_body, **kw)


def stream_text(chunks) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_models_lists_the_registry_with_kinds(client):
    rows = {m.id: m for m in client.models.list().data}
    assert rows["fake-bd"].kind == "diffusion" and rows["fake-ar"].kind == "autoregressive"


def test_a_completion_answers_with_usage_and_diffusion_counts(client):
    reply = ask(client)
    assert reply.choices[0].message.content == ANSWER and reply.choices[0].finish_reason == "stop"
    usage = reply.usage
    assert usage.completion_tokens == len(ANSWER) and usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.nfe >= 2 and usage.tokens_per_forward == pytest.approx(len(ANSWER) / usage.nfe, rel=1e-3)


def test_a_cut_answer_finishes_with_length(client):
    reply = client.chat.completions.create(model="fake-bd", messages=MESSAGES, max_tokens=32,
                                           extra_body={"block_size": 16, "steps": 16})
    assert reply.choices[0].finish_reason == "length" and reply.choices[0].message.content == ANSWER[:32]


@pytest.mark.parametrize("model, answer", [("fake-bd", ANSWER), ("fake-ar", AR_ANSWER)], ids=["diffusion", "ar"])
def test_a_stream_carries_the_committed_text_in_several_chunks(client, model, answer):
    plain = ask(client, model).choices[0].message.content
    chunks = list(ask(client, model, stream=True, stream_options={"include_usage": True}))
    content = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content) > 2 and stream_text(chunks) == plain == answer
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len(answer)
    assert chunks[-1].usage.nfe >= 2


def test_diffusing_canvases_lose_masks_round_by_round_and_end_as_the_answer(client):
    chunks = [c for c in ask(client, stream=True, extra_body={**SPREAD, "diffusing": True}) if c.choices]
    canvases = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    masks = [c.count(MASK_GLYPH) for c in canvases]
    assert len(canvases) >= 4 and masks[0] >= SPREAD["gen_length"] - 8
    assert all(a >= b for a, b in zip(masks, masks[1:])) and masks[-1] == 0
    assert len(set(masks)) >= 4                                # it really resolves in steps
    assert canvases[-1] == ANSWER
    rounds = [c.choices[0].model_extra["diffusion"] for c in chunks if c.choices[0].delta.content]
    assert [r["nfe"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert rounds[0]["canvas"].count(None) == masks[0]


def test_tool_calls_come_out_as_json_strings_and_tool_results_go_back_in(client):
    from world.tools import openai_tools

    first = client.chat.completions.create(model="tool-bd", messages=MESSAGES, tools=openai_tools(),
                                           extra_body=LONGER)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me look."
    call = choice.message.tool_calls[0]
    assert call.function.name == "search_products"
    assert json.loads(call.function.arguments) == {"query": "hoodie", "color": "pink"}
    history = MESSAGES + [choice.message.model_dump(exclude_none=True),
                          {"role": "tool", "tool_call_id": call.id, "content": json.dumps([{"id": "P-1"}])}]
    second = client.chat.completions.create(model="tool-bd", messages=history, tools=openai_tools(),
                                            extra_body=LONGER, stream=True)
    chunks = [c for c in second if c.choices]
    calls = [t for c in chunks for t in (c.choices[0].delta.tool_calls or [])]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert [(t.function.name, json.loads(t.function.arguments)) for t in calls] == [
        ("finish", {"answer": "Found P-1."})]
    with_none = client.chat.completions.create(model="tool-bd", messages=MESSAGES, tools=openai_tools(),
                                               tool_choice="none", extra_body=LONGER)
    assert with_none.choices[0].finish_reason == "stop" and "<tool_call>" in with_none.choices[0].message.content


@pytest.mark.parametrize("kw, status, words", [
    ({"extra_body": {"gen_length": 100, "block_size": 48}}, 400, "does not divide"),
    ({"extra_body": {"sampler": "nonsense"}}, 400, "sampler"),
    ({"extra_body": {"block_sise": 8}}, 400, "Unknown field"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, 400, "role"),
    ({"messages": []}, 400, "non-empty"),
    ({"model": "no-such-model"}, 404, "no-such-model"),
    ({"model": "broken-bd"}, 500, "server failed"),
], ids=["config", "sampler", "unknown-field", "role", "no-messages", "unknown-model", "internal"])
def test_errors_are_openai_error_objects_with_their_status(client, kw, status, words):
    args = {"model": "fake-bd", "messages": MESSAGES, **kw}
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(**args)
    error = caught.value
    assert error.status_code == status and words in error.message
    assert set(error.body) >= {"message", "type", "code"}
    assert "Traceback" not in error.response.text and "passwd" not in error.response.text


def test_an_oversized_body_is_413(served):
    with pytest.raises(openai.APIStatusError) as caught:
        openai.OpenAI(base_url=served[2], api_key="x", max_retries=0).chat.completions.create(
            model="fake-bd", messages=[{"role": "user", "content": "x" * (served[1].max_body_bytes + 10)}])
    assert caught.value.status_code == 413 and "larger than" in caught.value.message


def test_a_wrong_key_is_401_and_the_right_one_passes(served):
    _ctx, options, base = served
    options.api_key = "sesame"
    try:
        for key in ("wrong", ""):
            with pytest.raises(openai.AuthenticationError) as caught:
                openai.OpenAI(base_url=base, api_key=key or "x", max_retries=0,
                              default_headers={} if key else {"Authorization": ""}).models.list()
            assert caught.value.status_code == 401 and "Bearer" in caught.value.message
        assert openai.OpenAI(base_url=base, api_key="sesame", max_retries=0).models.list().data
    finally:
        options.api_key = None


def test_past_the_queue_limit_a_call_is_503(served, client):
    _ctx, options, _base = served
    options.queue_limit = 1
    try:
        stream = client.chat.completions.create(model="slow-bd", messages=MESSAGES, stream=True, extra_body=SPREAD)
        first = next(iter(stream))                      # the model is now held by this stream
        assert first.choices[0].delta.role == "assistant"
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="slow-bd", messages=MESSAGES)
        assert caught.value.status_code == 503 and "try again" in caught.value.message
        assert stream_text(list(stream)) == ANSWER      # the held stream still completes
    finally:
        options.queue_limit = 16


def test_eight_concurrent_streams_all_complete_with_the_right_text(client):
    barrier = threading.Barrier(8)

    def one(i: int) -> str:
        model = "fake-bd" if i % 2 else "fake-ar"
        barrier.wait()
        return model, stream_text(ask(client, model, stream=True))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(8)))
    assert results == [("fake-bd" if i % 2 else "fake-ar", ANSWER if i % 2 else AR_ANSWER) for i in range(8)]


def test_every_call_is_a_stored_api_session_with_its_frames(served, client):
    ctx, options, _base = served
    before = {c["id"] for c in ctx.store.list_conversations(kind="api", limit=1000)}
    ask(client, stream=True, extra_body={**SPREAD, "diffusing": True}).close()
    reply = ask(client)
    new = [c for c in ctx.store.list_conversations(kind="api", limit=1000) if c["id"] not in before]
    assert new
    stored = ctx.store.get_conversation(max(c["id"] for c in new))
    assert [t["role"] for t in stored["turns"]] == ["user", "assistant"] and stored["kind"] == "api"
    generation = stored["turns"][-1]["generation"]
    assert generation.text == reply.choices[0].message.content and len(generation.frames) == reply.usage.nfe
    options.store_calls = False
    try:
        count = len(ctx.store.list_conversations(kind="api", limit=1000))
        ask(client)
        assert len(ctx.store.list_conversations(kind="api", limit=1000)) == count
    finally:
        options.store_calls = True


def test_unknown_v1_routes_are_openai_404s(served):
    response = httpx.get(served[2] + "/embeddings")
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_url"
    wrong = httpx.get(served[2] + "/chat/completions")
    assert wrong.status_code == 405 and "takes POST" in wrong.json()["error"]["message"]
    assert httpx.post(served[2] + "/chat/completions", content=b"{not json",
                      headers={"content-type": "application/json"}).status_code == 400


def test_launch_refuses_a_network_host_without_a_key(capsys):
    import launch

    assert launch.main(["--host", "0.0.0.0", "--db", "/nonexistent/never-opened.db"]) == 2
    assert "--api-key" in capsys.readouterr().err
    assert launch.api_refusal(launch.parse_args(["--host", "0.0.0.0", "--api-key", "k"])) is None
    assert launch.api_refusal(launch.parse_args(["--host", "0.0.0.0", "--no-api"])) is None
    assert launch.api_refusal(launch.parse_args([])) is None


def test_an_api_session_replays_in_the_sessions_tab(served, client):
    from app.sessions_tab import SessionsHandlers

    ctx = served[0]
    reply = ask(client, extra_body={**SPREAD, "diffusing": True}, stream=True)
    list(reply)
    newest = ctx.store.list_conversations(kind="api", limit=1)[0]
    sessions = SessionsHandlers(ctx)
    transcript, turns, conversation, _status = sessions.open(str(newest["id"]))
    assert "What is the answer?" in transcript and conversation["kind"] == "api"
    view, _scrubber, panel, _heatmap, _commits = sessions.show_turn(conversation, turns.value)
    stored = conversation["turns"][-1]["generation"]
    assert len(view.frames) == len(stored.frames) >= 4 and "dp-grid" in panel


def test_a_client_that_goes_away_stops_the_model(client):
    import time

    long = {"gen_length": 256, "block_size": 8, "steps": 8, "sampler": "low_confidence"}   # 256 forwards, ~13 s
    stream = client.chat.completions.create(model="slow-bd", messages=MESSAGES, stream=True, extra_body=long)
    chunks = iter(stream)
    next(chunks), next(chunks)
    stream.close()
    started = time.perf_counter()
    short = client.chat.completions.create(model="slow-bd", messages=MESSAGES, extra_body=SPREAD)
    assert short.choices[0].message.content == ANSWER
    assert time.perf_counter() - started < 5.0          # it did not wait out the abandoned run
