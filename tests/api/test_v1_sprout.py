"""/v1 with the bundled Sprout-BD, through the official openai client: a held-out agent task
driven entirely through the API (the client runs the tools) reaches the grader's success; a
plain chat (no tools) is answered in text, Sprout acting in its world on the server; and streams
(plain, diffusing, eight at once) agree with the non-streamed answer at temperature 0."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from app.api.canvas import MASK_GLYPH
from engine.catalog import models_dir
from world.format import CALL_OPEN, render_response
from world.grader import grade
from world.start import world_for
from world.task_sets import load_heldout_tasks
from world.tools import FINISH, call_tool, openai_tools

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (models_dir() / "sprout-bd" / "config.json").is_file(),
                                                   reason="the bundled models/sprout-bd is not trained here")]
MODEL = "sprout-bd"


@dataclass
class Step:                       # what the grader reads of a step
    call: dict[str, Any] | None
    error: dict[str, Any] | None = None


def drive(client, task: dict[str, Any], max_replies: int = 8) -> tuple[bool, str, list[Step]]:
    """One attempt at `task` where every model turn is a /v1 call and every tool runs here."""
    world, steps, answer = world_for(task), [], None
    messages: list[dict[str, Any]] = [{"role": "user", "content": task["instruction"]}]
    for _ in range(max_replies):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=openai_tools(), temperature=0)
        message = reply.choices[0].message
        if not message.tool_calls:
            steps.append(Step(None, {"kind": "no_call", "message": message.content or ""}))
            break
        call = message.tool_calls[0]
        arguments = json.loads(call.function.arguments)
        steps.append(Step({"name": call.function.name, "arguments": arguments}))
        if call.function.name == FINISH:
            answer = arguments["answer"]
            break
        observation = call_tool(world, call.function.name, arguments)
        messages += [message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": render_response(observation)}]
    verdict = grade(task, world, answer, steps)
    return verdict.success, verdict.reason, steps


def test_a_heldout_agent_task_succeeds_through_the_api_alone(client):
    shop = next(t for t in load_heldout_tasks() if t.get("domain") == "shop" and len(t["gold_actions"]) >= 3)
    office = next(t for t in load_heldout_tasks() if t.get("domain") == "office")
    for task in (shop, office):
        success, reason, steps = drive(client, task)
        assert success, (task["id"], reason, steps)
        assert len(steps) == len(task["gold_actions"])


def test_a_plain_chat_with_sprout_answers_in_text(client):
    """No tools: Sprout acts in its own world on the server and finish's answer is the content."""
    for prompt in ("hello, who are you?", "Add 2 pink hoodies in size XL."):
        reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}],
                                               temperature=0)
        choice = reply.choices[0]
        assert choice.finish_reason == "stop" and choice.message.content and not choice.message.tool_calls
        assert CALL_OPEN not in reply.model_dump_json(), reply.model_dump_json()
        assert "gave no answer" not in choice.message.content
    assert [c["name"] for c in choice.model_extra["world_calls"]][0] == "search_products"


def test_sprout_streams_agree_with_the_completion(client):
    messages = [{"role": "user", "content": "Add 2 pink hoodies in size XL."}]
    plain = client.chat.completions.create(model=MODEL, messages=messages, temperature=0).choices[0].message.content
    chunks = list(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, stream=True))
    assert all(CALL_OPEN not in c.model_dump_json() for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == plain
    diffusing = [c for c in client.chat.completions.create(
        model=MODEL, messages=messages, temperature=0, stream=True, extra_body={"diffusing": True}) if c.choices]
    canvases = [(c.choices[0].model_extra.get("diffusion"), c.choices[0].delta.content) for c in diffusing
                if c.choices[0].delta.content]
    for step in {r["step"] for r, _ in canvases[:-1]}:      # each step's canvas loses masks round by round
        masks = [text.count(MASK_GLYPH) for r, text in canvases[:-1] if r["step"] == step]
        assert masks[0] > 0 and masks[-1] == 0 and all(a >= b for a, b in zip(masks, masks[1:]))
    assert canvases[-1] == (None, plain)                  # then the answer replaces the last canvas

    def one(_: int) -> str:
        stream = client.chat.completions.create(model=MODEL, messages=messages, temperature=0, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(8))) == [plain] * 8
