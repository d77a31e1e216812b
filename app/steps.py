"""Tool steps (world.agent.Step) as the Chat and Agent tabs show and store them.

A step is one reply of the model: a tool call and the tool's response, a typed parse error and
the error the model reads back, a `finish` call, or plain text. Chat shows each call as a
collapsible Chatbot message (Gradio's `metadata={"title": ...}`), the answer as a plain reply;
Agent shows a table. Both store a step as an assistant turn (raw text, generation, the call)
plus, when the model read something back, a tool turn.

Nothing fails silently: a step whose call the tool refused ({"error": ...}), that did not parse
or that was vetoed says so in its title and row, and the answer that follows names every such
failure of its turn; a call holding values that appear nowhere the model could have read them
(world/provenance.py) is marked with ⚠ and the sentence that says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import Markup

from engine.json_limits import JsonLimitError, read_stored
from engine.trace import GenerationConfig
from sessions import TurnRecord
from visualizer import extract_code, fenced_code
from visualizer.marks import WARNING, flag_html
from world.agent import Step
from world.format import EOS, render_response
from world.provenance import Unseen, describe, unseen_in_call
from world.provenance import label as unseen_label
from world.tools import FINISH

from .live import markdown_safe

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


# A reply still being written: a finish call's answer so far, and any call's name once decided.
# The model's text is only read here, never run; a cut escape at the end is left off.
_FINISH_SO_FAR = re.compile(r'"name"\s*:\s*"' + FINISH + r'"\s*,\s*"arguments"\s*:\s*\{\s*"answer"\s*:\s*"'
                            r'((?:[^"\\]|\\.)*)')
_NAME_SO_FAR = re.compile(r'"name"\s*:\s*"([A-Za-z_][A-Za-z0-9_]*)"')


def answer_so_far(text: str) -> str | None:
    """The answer a finish call being written holds so far, unescaped where it can be (None when
    the text is not, or not yet, a finish call with an answer begun): so the answer streams into
    its bubble as its tokens are decided, not only once the call is whole."""
    found = _FINISH_SO_FAR.search(text)
    if found is None:
        return None
    raw = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", found.group(1))     # an escape cut by the canvas
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw


def call_name_so_far(text: str) -> str | None:
    """The tool's name in a call being written, once its tokens are decided."""
    found = _NAME_SO_FAR.search(text)
    return found.group(1) if found else None


def error_in(observation: Any) -> str | None:
    """The error a tool answered with ({"error": ...}), else None."""
    return str(observation["error"]) if isinstance(observation, dict) and "error" in observation else None


def failure_of(step: Step) -> str | None:
    """What went wrong in a step, as a clause ("get_customer(name=Cleo Abot) answered “no such
    customer”"); None when the model read back no error."""
    if step.call is not None and step.error:
        why = str(step.error.get("message") or step.error.get("kind")).rstrip(".")
        return f"{call_text(step.call)} was not run ({why})"
    if step.call is None and step.error is not None:
        return f"a reply did not parse ({step.error.get('kind', '?')})"
    if step.call is not None and error_in(step.observation):
        return f"{call_text(step.call)} answered “{error_in(step.observation)}”"
    return None


def failures_note(failures: list[str]) -> str:
    """The line under an answer that follows failed tool steps ("" when none failed)."""
    if not failures:
        return ""
    head = "a tool step failed" if len(failures) == 1 else f"{len(failures)} tool steps failed"
    return f"{WARNING} Before this answer {head}: " + "; ".join(failures) + "."


def conversation_sources(history: list[dict[str, Any]], system: str = "") -> list[Any]:
    """What a model could copy values from in a chat so far: the system text, the person's
    messages and the tool responses (never the model's own replies)."""
    return ([system] if system else []) + [m["content"] for m in history if m["role"] in ("system", "user", "tool")]


def stored_sources(conversation: dict[str, Any], before: int) -> list[Any]:
    """`conversation_sources` of a stored conversation up to its turn number `before`."""
    turns = [{"role": t["role"], "content": t["content"]} for t in conversation["turns"] if t["idx"] < before]
    return conversation_sources(turns, str((conversation.get("meta") or {}).get("system") or ""))


def step_contexts(steps: list[Step], known: list[Any]) -> list[tuple[list[Any], list[str]]]:
    """For each step: (the sources known before it, the failures of the steps before it)."""
    out, known, failures = [], list(known), []
    for step in steps:
        out.append((list(known), list(failures)))
        if step.observation is not None:
            known.append(step.observation)
        failure = failure_of(step)
        if failure:
            failures.append(failure)
    return out


def unseen_of(step: Step, known: list[Any]) -> list[Unseen]:
    return unseen_in_call(step.call, known) if step.call is not None else []


def call_marks(stored: dict[str, Any], known: list[Any]) -> Markup:
    """The marks of a stored tool call (a turn's `tool_calls` entry, see step_turns): values not
    in `known`, and the error the model read back."""
    marks = []
    if isinstance(stored.get("arguments"), dict):
        unseen = unseen_in_call({"name": stored["name"], "arguments": stored["arguments"]}, known)
        if unseen:
            marks.append(flag_html(unseen_label(unseen), describe(unseen)))
    observation = stored.get("observation")
    if isinstance(observation, str):              # the store keeps a response as its JSON text
        try:
            observation = read_stored(observation)
        except JsonLimitError:
            observation = None
    if stored.get("error_type"):
        marks.append(flag_html(f"error: {stored['error_type']}", "The call was not run; the model read back an error."))
    elif error_in(observation):
        marks.append(flag_html(f"error: {error_in(observation)}",
                               f"The tool answered with an error: “{error_in(observation)}”."))
    return Markup("").join(marks)


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
def chat_entries(step: Step, reply: str, known: list[Any] = (), failures: list[str] = ()) -> list[dict[str, Any]]:
    """History entries for one step. `content` is what the model reads back next turn (`reply`:
    the call as rendered, or the text); `shown` and `title` are what the person sees; tool
    entries are for the model only (their text is inside the step's card). `known`: what the
    model could copy from before this step; `failures`: the failed steps before it this turn,
    named under the answer."""
    answer = answer_of(step)
    if answer is not None:
        note = failures_note(list(failures))
        return [{"role": "assistant", "content": reply, "shown": f"{answer}\n\n{note}" if note else answer}]
    card: dict[str, Any] = {"role": "assistant", "content": reply}
    if step.call is not None:
        vetoed = f" (not run: {step.error.get('message')})" if step.error else ""
        refusal = None if step.error else error_in(step.observation)
        refused = f" {WARNING} error: {refusal}" if refusal else ""
        unseen = unseen_of(step, list(known))
        flagged = f" {WARNING} {unseen_label(unseen)}" if unseen else ""
        card["title"] = f"Tool call: {short(call_text(step.call), 90)}{vetoed}{refused}{flagged}"
        card["shown"] = f"call: {call_text(step.call)}\n\nresponse: {short(step.observation)}"
        if unseen:                                # under the card's code block, as wrapping text
            card["flag"] = f"{WARNING} {describe(unseen)}"
    else:
        card["title"] = f"Parse error: {(step.error or {}).get('kind', '?')}"
        card["shown"] = f"{(step.error or {}).get('message', '')}\n\nthe model wrote: {short(step.raw_text)}"
    return [card, {"role": "tool", "content": render_response(step.observation)}]


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
        text = entry.get("shown", entry["content"])
        if role == "assistant" and not entry.get("title") and not entry.get("note"):
            text = fenced_code(text)              # an answer's code drawn as a highlighted block
        text = markdown_safe(text) or "…"
        message: dict[str, Any] = {"role": role, "content": text}
        if entry.get("title"):
            message["metadata"] = {"title": markdown_safe(entry["title"]), "status": entry.get("status", "done")}
            if entry.get("status") != "pending":
                message["content"] = markdown_safe(f"```\n{entry['shown']}\n```") if entry.get("shown") else "…"
                if entry.get("flag"):
                    message["content"] += "\n\n" + markdown_safe(entry["flag"])
        shown.append(message)
    return shown


# -- storing ----------------------------------------------------------------------------------
def step_turns(steps: list[Step], config: GenerationConfig, model: str) -> list[TurnRecord]:
    """Each step as an assistant turn (with its generation and parsed call) and, when the model
    read something back, a tool turn."""
    turns = []
    for i, step in enumerate(steps):
        calls = None
        if step.call is not None or step.error is not None:
            calls = [{"step": i, "name": step.call["name"] if step.call else "(unparsed)",
                      "arguments": step.call["arguments"] if step.call else step.raw_text,
                      "observation": step.observation, "error_type": (step.error or {}).get("kind")}]
        turns.append(TurnRecord("assistant", step.raw_text, generation=step.result, config=config, model=model,
                          tool_calls=calls))
        if step.observation is not None:
            turns.append(TurnRecord("tool", render_response(step.observation)))
    return turns


# -- Agent ------------------------------------------------------------------------------------
def steps_html(steps: list[Step], known: list[Any] = ()) -> str:
    """One row per step: what the model wrote, what it parsed to (marked when it holds values
    not in `known` nor in an earlier response), the response (marked when it is an error), the cost."""
    if not steps:
        return '<div class="dp-empty">No steps yet.</div>'
    rows = []
    for i, (step, (before, failures)) in enumerate(zip(steps, step_contexts(steps, list(known))), 1):
        response = "—" if step.observation is None else short(step.observation)
        nfe = step.result.stats.nfe if step.result else "–"
        generated = short(step.raw_text)
        if step.result is not None and step.result.stats.stop_reason == "cancelled":
            generated += " ✂ cut off by Stop (not written to the end)"
        unseen = unseen_of(step, before)
        parsed_mark = flag_html(unseen_label(unseen), describe(unseen)) if unseen else Markup("")
        failure = failure_of(step)
        response_mark = flag_html("error", f"The model read back an error: {failure}.") if failure else Markup("")
        answer_mark = (flag_html("after a failed step", failures_note(failures))
                       if failures and answer_of(step) is not None else Markup(""))
        rows.append(Markup("<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code>{}{}</td><td><code>{}</code>{}"
                           "</td><td>{:.2f} s · NFE {}</td></tr>").format(
            i, generated, parsed_result(step), parsed_mark, answer_mark, response, response_mark,
            step.seconds, nfe))
    head = Markup("<tr><th>#</th><th>generated</th><th>parsed</th><th>tool response</th><th>cost</th></tr>")
    return str(Markup('<table class="dp-table dp-steps">{}{}</table>').format(head, Markup("").join(rows)))
