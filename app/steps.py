"""Tool steps (world.agent.Step) as the Chat and Agent tabs show and store them.

A step is one reply of the model: a tool call and the tool's response, a typed parse error and
the error the model reads back, a `finish` call, or plain text. Chat shows each call as a
collapsible Chatbot message (Gradio's `metadata={"title": ...}`), the answer as a plain reply;
Agent shows a table. Both store a step as an assistant turn (raw text, generation, the call)
plus, when the model read something back, a tool turn.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from engine.trace import GenerationConfig
from visualizer import extract_code
from world.agent import Step
from world.format import EOS, render_response
from world.tools import FINISH

from .live import markdown_safe
from .runs import Turn

SHOWN_CHARS = 600                             # long tool responses are cut in tables and cards
CODE_KINDS = {"tex": "a LaTeX document", "html": "an HTML page"}


def short(value: Any, limit: int = SHOWN_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + " …"


def call_text(call: dict[str, Any]) -> str:
    """`name(key=value, ...)`, one line; text values bare (a card title shows quotes as entities)."""
    args = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in call["arguments"].items())
    return f"{call['name']}({args})"


def answer_of(step: Step) -> str | None:
    """The person-facing answer a step ends with: finish's answer or the plain text; else None."""
    if step.call is not None and step.call["name"] == FINISH and not step.error:
        return str(step.call["arguments"].get("answer", ""))
    if step.call is None and step.error is None:
        return step.raw_text.split(EOS, 1)[0].strip()
    return None


def parsed_result(step: Step) -> str:
    """What a step parsed to, for the Agent table: the call, the parse error, or the text answer."""
    if step.call is not None:
        parsed = json.dumps(step.call, ensure_ascii=False)
        if step.error:
            parsed += f" (vetoed: {step.error.get('message', step.error.get('kind'))})"
        return parsed
    if step.error is not None:
        return f"parse error ({step.error.get('kind', '?')}): {step.error.get('message', '')}"
    if step.result is not None and step.result.stats.stop_reason == "cancelled":
        return "stopped while generating"
    text = answer_of(step) or ""
    kind, code = extract_code(text)
    if kind is not None:
        return f"text answer: {CODE_KINDS[kind]}, {len(code.splitlines())} lines"
    return f"text answer, {len(text)} characters"


# -- Chat -------------------------------------------------------------------------------------
def chat_entries(step: Step, reply: str) -> list[dict[str, Any]]:
    """History entries for one step. `content` is what the model reads back next turn (`reply`:
    the call as rendered, or the text); `shown` and `title` are what the person sees; tool
    entries are for the model only (their text is inside the step's card)."""
    answer = answer_of(step)
    if answer is not None:
        return [{"role": "assistant", "content": reply, "shown": answer}]
    if step.call is not None:
        vetoed = f" (not run: {step.error.get('message')})" if step.error else ""
        title = f"Tool call: {short(call_text(step.call), 90)}{vetoed}"
        shown = f"call: {call_text(step.call)}\n\nresponse: {short(step.observation)}"
    else:
        title = f"Parse error: {(step.error or {}).get('kind', '?')}"
        shown = f"{(step.error or {}).get('message', '')}\n\nthe model wrote: {short(step.raw_text)}"
    return [{"role": "assistant", "content": reply, "title": title, "shown": shown},
            {"role": "tool", "content": render_response(step.observation)}]


def context_messages(history: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The chat as the model reads it."""
    return [{"role": message["role"], "content": message["content"]} for message in history]


def chat_messages(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Chatbot's messages: user text, tool steps as collapsed cards, answers; all escaped.
    A raw `<tool_call>` is never shown as a reply: only steps and answers are."""
    shown = []
    for entry in history:
        if entry["role"] == "tool":
            continue
        role = "user" if entry["role"] == "user" else "assistant"
        text = markdown_safe(entry.get("shown", entry["content"])) or "…"
        message: dict[str, Any] = {"role": role, "content": text}
        if entry.get("title"):
            message["metadata"] = {"title": markdown_safe(entry["title"]), "status": entry.get("status", "done")}
            if entry.get("status") != "pending":
                message["content"] = markdown_safe(f"```\n{entry['shown']}\n```") if entry.get("shown") else "…"
        shown.append(message)
    return shown


# -- storing ----------------------------------------------------------------------------------
def step_turns(steps: list[Step], config: GenerationConfig, model: str) -> list[Turn]:
    """Each step as an assistant turn (with its generation and parsed call) and, when the model
    read something back, a tool turn."""
    turns = []
    for i, step in enumerate(steps):
        calls = None
        if step.call is not None or step.error is not None:
            calls = [{"step": i, "name": step.call["name"] if step.call else "(unparsed)",
                      "arguments": step.call["arguments"] if step.call else step.raw_text,
                      "observation": step.observation, "error_type": (step.error or {}).get("kind")}]
        turns.append(Turn("assistant", step.raw_text, generation=step.result, config=config, model=model,
                          tool_calls=calls))
        if step.observation is not None:
            turns.append(Turn("tool", render_response(step.observation)))
    return turns


# -- Agent ------------------------------------------------------------------------------------
def steps_html(steps: list[Step]) -> str:
    """One row per step: what the model wrote, what it parsed to, the response, the cost."""
    if not steps:
        return '<div class="dp-empty">No steps yet.</div>'
    rows = []
    for i, step in enumerate(steps, 1):
        response = "—" if step.observation is None else short(step.observation)
        nfe = step.result.stats.nfe if step.result else "–"
        rows.append(Markup("<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td>"
                           "<td>{:.2f} s · NFE {}</td></tr>").format(i, short(step.raw_text), parsed_result(step),
                                                                      response, step.seconds, nfe))
    head = Markup("<tr><th>#</th><th>generated</th><th>parsed</th><th>tool response</th><th>cost</th></tr>")
    return str(Markup('<table class="dp-table dp-steps">{}{}</table>').format(head, Markup("").join(rows)))
