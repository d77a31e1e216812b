"""/v1 with a model that writes its world's agent format (a scripted fake that speaks as Sprout
does), through the official openai client: with no client tools, finish's answer is the content
(never the markup) and the world's own tools run on the server; with client tools, calls come
out as before and finish, unless offered, is the answer; a model that is not world-format gets
its text as written."""

from __future__ import annotations

import json

import pytest

from app.api import world
from app.api.canvas import MASK_GLYPH
from app.api.protocol import lift_finish, read_request
from app.api.world import model_messages
from app.conversation_world import DEFAULT_WORLD, MAX_REPLIES, no_answer_note, world_from_spec
from tests.api.conftest import WORLD_HELLO, world_target
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import world_format
from world.format import CALL_OPEN, render_call
from world.tools import call_tool, openai_tools

pytestmark = pytest.mark.slow
SETTINGS = {"gen_length": 192, "block_size": 32, "steps": 8, "sampler": "low_confidence"}
HELLO = [{"role": "user", "content": "hello, who are you?"}]
CAPS = [{"role": "user", "content": "find a cap in size M"}]
FOREVER = [{"role": "user", "content": "keep looking forever"}]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                             "parameters": CITY}}]


def ask(client, messages, model="world-bd", **kw):
    return client.chat.completions.create(model=model, messages=messages, temperature=0, extra_body=SETTINGS, **kw)


def streamed(client, messages, model="world-bd", extra=None, **kw):
    chunks = list(client.chat.completions.create(model=model, messages=messages, temperature=0, stream=True,
                                                 extra_body={**SETTINGS, **(extra or {})}, **kw))
    return [c for c in chunks if c.choices], chunks


def found_in_the_default_world() -> tuple[list, str]:
    """What the world's own search answers, and the answer the scripted model gives from it."""
    response = call_tool(world_from_spec(DEFAULT_WORLD), "search_products", {"query": "cap", "size": "M"})
    return response, f"Found {response[0]['id']} in size M."


@pytest.mark.parametrize("model", ["world-bd", "world-ar"], ids=["diffusion", "ar"])
def test_a_finish_call_is_the_content_of_a_completion(client, model):
    reply = ask(client, HELLO, model)
    choice = reply.choices[0]
    assert choice.message.content == WORLD_HELLO and choice.finish_reason == "stop"
    assert not choice.message.tool_calls and not (choice.model_extra or {}).get("world_calls")
    assert CALL_OPEN not in reply.model_dump_json() and '"finish"' not in reply.model_dump_json()
    assert reply.usage.completion_tokens == len(render_call("finish", {"answer": WORLD_HELLO}))


@pytest.mark.parametrize("model", ["world-bd", "world-ar"], ids=["diffusion", "ar"])
def test_a_streamed_finish_call_sends_only_the_answer(client, model):
    chunks, everything = streamed(client, HELLO, model, stream_options={"include_usage": True})
    assert all(CALL_OPEN not in c.model_dump_json() for c in everything)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == WORLD_HELLO
    assert chunks[-1].choices[0].finish_reason == "stop" and everything[-1].usage.nfe >= 1


def test_world_tools_run_on_the_server_and_the_answer_reads_their_response(client):
    response, answer = found_in_the_default_world()
    reply = ask(client, CAPS)
    choice = reply.choices[0]
    assert choice.message.content == answer and choice.finish_reason == "stop" and not choice.message.tool_calls
    assert choice.model_extra["world_calls"] == [
        {"name": "search_products", "arguments": {"query": "cap", "size": "M"}, "response": response}]
    assert CALL_OPEN not in reply.model_dump_json()
    search = render_call("search_products", {"query": "cap", "size": "M"})
    assert reply.usage.completion_tokens == len(search) + len(render_call("finish", {"answer": answer}))


def test_a_streamed_world_run_sends_each_call_then_the_answer(client):
    response, answer = found_in_the_default_world()
    chunks, everything = streamed(client, CAPS)
    assert all(CALL_OPEN not in c.model_dump_json() for c in everything)
    calls = [c.choices[0].model_extra["world_call"] for c in chunks if (c.choices[0].model_extra or {}).get(
        "world_call")]
    assert calls == [{"name": "search_products", "arguments": {"query": "cap", "size": "M"}, "response": response}]
    content = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert content == [answer] and chunks[-1].choices[0].finish_reason == "stop"


def test_a_diffusing_world_run_shows_every_step_and_ends_with_the_answer(client):
    _, answer = found_in_the_default_world()
    chunks, _ = streamed(client, CAPS, extra={"diffusing": True})
    rounds = [c.choices[0].model_extra["diffusion"] for c in chunks if (c.choices[0].model_extra or {}).get(
        "diffusion")]
    assert sorted({r["step"] for r in rounds}) == [0, 1]              # the search, then finish
    canvases = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert MASK_GLYPH in canvases[0] and canvases[-1] == answer
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_no_answer_within_the_steps_is_said_in_a_sentence(client):
    reply = ask(client, FOREVER)
    choice = reply.choices[0]
    assert choice.message.content == no_answer_note(MAX_REPLIES) and choice.finish_reason == "length"
    calls = choice.model_extra["world_calls"]
    assert len(calls) == MAX_REPLIES and {c["name"] for c in calls} == {"view_cart"}
    assert [c.get("error") for c in calls] == [None] + ["repeated_call"] * (MAX_REPLIES - 1)


def test_client_tools_get_calls_and_finish_is_the_answer_unless_offered(client):
    with_finish = ask(client, HELLO, tools=openai_tools()).choices[0]       # finish is one of the client's tools
    assert with_finish.finish_reason == "tool_calls" and with_finish.message.tool_calls[0].function.name == "finish"
    assert json.loads(with_finish.message.tool_calls[0].function.arguments) == {"answer": WORLD_HELLO}
    weather = ask(client, HELLO, tools=WEATHER).choices[0]                  # finish is not
    assert weather.message.content == WORLD_HELLO and weather.finish_reason == "stop"
    assert not weather.message.tool_calls
    chunks, everything = streamed(client, HELLO, tools=WEATHER)
    assert all(CALL_OPEN not in c.model_dump_json() and not c.choices[0].delta.tool_calls for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == WORLD_HELLO
    search = ask(client, CAPS, tools=WEATHER).choices[0]                    # a world call goes to the client
    assert search.finish_reason == "tool_calls" and search.message.tool_calls[0].function.name == "search_products"
    assert not (search.model_extra or {}).get("world_calls")
    refused = ask(client, CAPS, tools=WEATHER, tool_choice="none").choices[0]   # no client calls: its world runs
    assert refused.message.content == found_in_the_default_world()[1] and refused.model_extra["world_calls"]


def test_a_client_that_goes_away_ends_the_world_run(served, client):
    import time

    store = served[0].store
    before = {c["id"] for c in store.list_conversations(kind="api", limit=1000)}
    stream = client.chat.completions.create(model="slow-world-bd", messages=FOREVER, stream=True,
                                            extra_body=SETTINGS)              # 8 steps of 48 forwards, ~20 s
    chunks = iter(stream)
    while not (next(chunks).choices[0].model_extra or {}).get("world_call"):
        pass
    stream.close()
    started = time.perf_counter()
    fast = {**SETTINGS, "steps": 2}                                          # 12 forwards
    reply = client.chat.completions.create(model="slow-world-bd", messages=HELLO, extra_body=fast)
    assert reply.choices[0].message.content == WORLD_HELLO
    assert time.perf_counter() - started < 8.0         # it did not wait out the abandoned steps
    abandoned = [c for c in store.list_conversations(kind="api", limit=1000)
                 if c["id"] not in before and c["title"] == FOREVER[0]["content"]]
    turns = store.get_conversation(abandoned[0]["id"])["turns"]
    assert len([t for t in turns if t["role"] == "assistant"]) <= 3     # no new step began after it left


@pytest.mark.parametrize("model, seen", [("one-users-bd", "1 user message(s)"), ("users-bd", "2 user message(s)")])
def test_a_one_request_model_reads_only_the_latest_request(client, model, seen):
    messages = [*CAPS, {"role": "assistant", "content": "Found P1 in size M."}, *HELLO]
    assert ask(client, messages, model=model).choices[0].message.content == seen


def test_a_model_that_is_not_world_format_gets_its_text_as_written(client):
    reply = ask(client, HELLO, "hermes-bd").choices[0]
    assert reply.message.content == render_call("finish", {"answer": WORLD_HELLO}) and reply.finish_reason == "stop"


def test_a_world_run_is_stored_with_its_steps_and_world(served, client):
    ctx = served[0]
    before = {c["id"] for c in ctx.store.list_conversations(kind="api", limit=1000)}
    ask(client, CAPS)
    new = [c for c in ctx.store.list_conversations(kind="api", limit=1000) if c["id"] not in before]
    assert len(new) == 1 and new[0]["meta"]["world"] == DEFAULT_WORLD
    turns = ctx.store.get_conversation(new[0]["id"])["turns"]
    assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"]
    assert [c["name"] for t in turns for c in t["tool_calls"]] == ["search_products", "finish"]
    from app.sessions_tab import SessionsHandlers

    sessions = SessionsHandlers(ctx)
    transcript, picker, conversation, _status = sessions.open(str(new[0]["id"]))
    assert "find a cap in size M" in transcript and len(picker.choices) == 2       # both generations replay
    _view, _scrubber, panel, _heatmap, _commits = sessions.show_turn(conversation, picker.choices[-1][1])
    assert "dp-grid" in panel


def test_no_step_begins_after_the_client_left():
    backend = world_format(FakeDiffusionBackend(world_target, name="world-bd"))
    request = read_request({"model": "world-bd", "messages": FOREVER, **SETTINGS}, lambda name: {})
    seen: list = []
    acted = world.answer(backend, request, backend.encode_chat, should_stop=lambda: len(seen) >= 2,
                         on_step=seen.append)
    assert len(acted.steps) == 2 and acted.reply.finish_reason == "length"
    assert acted.reply.content == no_answer_note(2, "the client went away")


def test_a_plain_answer_goes_back_to_the_model_as_its_finish_call():
    messages = model_messages([*HELLO, {"role": "assistant", "content": WORLD_HELLO},
                               {"role": "user", "content": "and then?"}])
    assert messages[1] == {"role": "assistant", "content": render_call("finish", {"answer": WORLD_HELLO})}
    assert messages[0] == HELLO[0] and messages[2]["content"] == "and then?"


@pytest.mark.parametrize("text, calls, tools, lifted", [
    ("", [{"name": "finish", "arguments": {"answer": "Done."}}], WEATHER, ("Done.", [], True)),
    ("Let me see.", [{"name": "finish", "arguments": {"answer": "Done."}}], WEATHER,
     ("Let me see.\n\nDone.", [], True)),
    ("", [{"name": "finish", "arguments": {"answer": "Done."}}], openai_tools(),
     ("", [{"name": "finish", "arguments": {"answer": "Done."}}], False)),
    ("", [{"name": "get_weather", "arguments": {"city": "Oslo"}}], WEATHER,
     ("", [{"name": "get_weather", "arguments": {"city": "Oslo"}}], False)),
], ids=["finish-not-offered", "text-and-finish", "finish-offered", "no-finish"])
def test_lift_finish(text, calls, tools, lifted):
    assert lift_finish(text, calls, tools) == lifted
