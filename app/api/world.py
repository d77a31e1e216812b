"""How /v1 answers with a model that writes its world's agent format (Sprout: every reply is one
Hermes tool call, the answer to the person is the call `finish(answer)`; world/format.py)
when the client offers no tools of its own (none given, or tool_choice "none").

The model acts in its own world on the server, as in the Chat tab: `world.agent.act` with plain
text allowed as the answer, on a fresh world per call (app/conversation_world.py: the held-out task whose
instruction the latest user message is, else the held-out background world with every style
stocked), at most MAX_REPLIES replies; each tool call runs on that world and the model reads
its response.
The answer (finish's `answer`, or plain text) is the message content with finish_reason
"stop"; with no answer within the steps the content is a sentence saying so and finish_reason
is "length". The calls the server ran come beside the message as the extension field
`world_calls` (a stream sends each as it ran: one chunk with an empty delta and `world_call`).
The world does not outlive the call: every call starts from the same world.

Earlier assistant messages in plain text go back to the model as the finish calls they were
read from: the model has only ever seen its own answers as calls. A model whose weights declare
one request per conversation (playground.json "context": "latest_request", as the Sprout twins
did before issue 49's campaign) reads only the system text and the latest user message
(world.agent.model_context); others, the shipped twins among them, read the whole conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.generate import run
from engine.metrics import combined
from engine.trace import Frame, Result
from world.agent import Step, act
from world.format import CALL_OPEN, TOOL_CALLS, render_call
from world.tools import FINISH

from ..conversation_world import (
    MAX_REPLIES,
    model_context,
    no_answer_note,
    speaks_world,
    world_from_spec,
    world_spec_for,
)
from ..steps import answer_of
from .protocol import ApiError, ChatRequest, Reply, usage


class ClientGone(Exception):
    """The client went away: no further step is generated."""


@dataclass
class WorldAnswer:
    reply: Reply
    steps: list[Step]                    # every reply of the model, as the Chat tab stores them
    spec: dict[str, Any]                 # the world it acted in (app/conversation_world.py)


def runs_world(backend: Any, request: ChatRequest) -> bool:
    """Whether this call is answered by the model acting in its own world: it speaks the world's
    format, the client offers no tools to call, and no response_format asks for one JSON value."""
    return speaks_world(backend) and not request.parse_tools and request.config.schema is None


def model_messages(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The conversation as a world-format model reads it: an assistant answer in plain text back
    as the finish call it came from."""
    out = []
    for message in messages:
        content = message["content"]
        if message["role"] == "assistant" and content.strip() and CALL_OPEN not in content:
            content = render_call(FINISH, {"answer": content})
        out.append({"role": message["role"], "content": content})
    return out


def call_view(step: Step) -> dict[str, Any] | None:
    """A step as the client sees it beside the answer: the call the server ran and the tool's
    response, or the parse error the model read back; None for the answer itself."""
    if answer_of(step) is not None:
        return None
    if step.call is not None:
        view = {"name": step.call["name"], "arguments": step.call["arguments"], "response": step.observation}
        if step.error:                      # a repeat: not run, the model read the veto
            view["error"] = step.error["kind"]
        return view
    error = step.error or {}
    return {"error": error.get("kind"), "message": error.get("message")}


def answer(backend: Any, request: ChatRequest, encode: Callable[[list[dict[str, str]]], list[int]],
           on_frame: Callable[[Frame], None] | None = None, should_stop: Callable[[], bool] | None = None,
           on_step: Callable[[Step], None] | None = None) -> WorldAnswer:
    """Let the model act in a fresh world until it answers; `encode(messages)` gives prompt ids."""
    messages = model_context(backend, model_messages(request.messages))
    users = [m["content"] for m in messages if m["role"] == "user"]
    spec = world_spec_for(users[0] if users else "")
    world = world_from_spec(spec)
    prompt_tokens: list[int] = []
    steps: list[Step] = []

    def generate(messages: list[dict[str, str]]) -> Result:
        if should_stop is not None and should_stop():
            raise ClientGone
        ids = encode(messages)
        prompt_tokens.append(len(ids))
        return run(backend, ids, request.config, on_frame=on_frame, should_stop=should_stop, tools=TOOL_CALLS)

    def record(step: Step) -> None:
        steps.append(step)
        if on_step is not None:
            on_step(step)

    try:
        final, early = act(backend, world, messages, request.config,
                           max_replies=MAX_REPLIES, text_answers=True, on_step=record, generate_fn=generate)
    except ClientGone:
        final, early = None, "the client went away"
    if final is None and early and not steps:       # nothing ran: the prompt alone did not fit
        raise ApiError(400, early, param="messages")
    numbers = combined([s.result.stats for s in steps if s.result is not None])
    content, reason = (final, "stop") if final is not None else (no_answer_note(len(steps), early), "length")
    views = [view for view in map(call_view, steps) if view is not None]
    return WorldAnswer(Reply(content, [], reason, usage(numbers, sum(prompt_tokens)), views), steps, spec)
