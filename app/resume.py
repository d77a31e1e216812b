"""A stored chat opened in Sessions, taken back into the Chat tab to go on with it.

The stored turns are read back into the Chat tab's history entries: each assistant turn becomes
the step it was (world.agent.Step: the raw reply, the parsed call, the tool's response, the
generation), so the cards, the answers and the model's context read exactly as they did live,
and the world is the one its calls left (app/chat.py `stored_world`). The next message is
stored in the same conversation.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.json_limits import read_stored
from world.agent import Step
from world.format import EOS, render_call

from .chat import named_answers, stored_world
from .chat_turn import CUT_CALL_NOTE, EMPTY_PANEL
from .live import markdown_safe
from .messages import user_error
from .outputs import OutputNames
from .steps import answer_of, chat_entries, chat_messages, conversation_sources, step_contexts

RESUMABLE = ("chat",)
# what going on with a stored chat sets in the Chat tab, in this order (resumed)
RESUME_OUTPUTS = OutputNames("chatbot", "history", "conversation_id", "world", "tree", "trace", "model", "system",
                             "status", "panel")


class CannotResume(ValueError):
    """The conversation is not one the Chat tab can go on with; the message says why."""


def stored_step(turn: dict[str, Any]) -> Step:
    """An assistant turn as the step it was stored from (app/steps.py step_turns, read backwards)."""
    calls = turn["tool_calls"] or []
    call = calls[0] if calls else None
    parsed = None if call is None or call["name"] == "(unparsed)" else {"name": call["name"],
                                                                       "arguments": call["arguments"]}
    error = None if call is None or call["error_type"] is None else {"kind": call["error_type"],
                                                                     "message": call["error_type"]}
    seconds = turn["generation"].stats.seconds if turn["generation"] is not None else 0.0
    return Step(turn["content"], parsed, error, None if call is None else stored_observation(call["observation"]),
                turn["generation"], seconds)


def stored_observation(text: str | None) -> Any:
    """A tool response as the step held it: the store keeps it as JSON text (a plain-text response
    as itself), so text that reads as JSON is read back, anything else stays text."""
    if text is None:
        return None
    try:
        return read_stored(text)
    except ValueError:
        return text


def history_entries(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """The Chat tab's history (what it shows and what the model reads back) of a stored chat."""
    history: list[dict[str, Any]] = []
    system = (conversation.get("meta") or {}).get("system") or ""
    turn_steps: list[Step] = []            # this turn's steps so far, and what they could copy from
    turn_known: list[Any] = []
    for turn in conversation["turns"]:
        if turn["role"] == "user":
            history.append({"role": "user", "content": turn["content"]})
            turn_steps, turn_known = [], conversation_sources(history, system)
        elif turn["role"] == "assistant":
            step = stored_step(turn)
            turn_steps.append(step)
            if step.result is not None and step.result.stats.stop_reason == "cancelled":
                text = answer_of(step) or ""
                cut = text.lstrip().startswith(("<tool_call>", "{"))
                history.append({"role": "assistant", "content": "", "note": True,
                                "shown": CUT_CALL_NOTE if cut else f"{text} … (stopped)"})
                continue
            reply = (render_call(step.call["name"], step.call["arguments"]) if step.call is not None
                     else step.raw_text.split(EOS, 1)[0].strip())
            known, failures = step_contexts(turn_steps, turn_known)[-1]     # the marks the live turn drew
            history += chat_entries(step, reply, known, failures)
        elif turn["role"] == "tool" and history and history[-1]["role"] == "tool":
            history[-1] = {"role": "tool", "content": turn["content"]}   # the response exactly as the model read it
    return history


def resume(conversation: dict[str, Any] | None) -> dict[str, Any]:
    """The Chat tab's state for going on with `conversation`: chatbot, history, conversation id,
    world, model and system prompt."""
    if conversation is None:
        raise CannotResume("Open a conversation first (click its row), then continue it in Chat.")
    if conversation["kind"] not in RESUMABLE:
        raise CannotResume(f"Conversation #{conversation['id']} is a stored {conversation['kind']} run; only chats "
                           "can be continued in the Chat tab.")
    world = stored_world(conversation)
    history = named_answers(history_entries(conversation), world, structured=False)
    meta = conversation.get("meta") or {}
    return {"chatbot": chat_messages(history), "history": history, "conversation_id": conversation["id"],
            "world": world, "model": conversation.get("model") or "", "system": meta.get("system") or ""}


def resumed(conversation: dict[str, Any] | None) -> tuple:
    """The Chat tab's outputs (RESUME_OUTPUTS) for going on with `conversation`: its messages, its
    world, its model and system prompt, no versions or trace yet, and a status line saying where
    the next message is stored. A conversation the tab cannot go on with is refused with a sentence."""
    try:
        state = resume(conversation)
    except CannotResume as exc:
        raise user_error(str(exc)) from None
    note = (f"Continuing conversation #{state['conversation_id']} with {markdown_safe(state['model'] or 'its model')}: "
            "the next message is stored in it.")
    return (state["chatbot"], state["history"], state["conversation_id"], state["world"], None, None,
            state["model"] or gr.skip(), state["system"], note, EMPTY_PANEL)
