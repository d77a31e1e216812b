"""The agent loop: a model (any backend, through engine.generate) acts in the world one
tool call per turn until it calls finish, hits the step limit, or is graded. `act` is the loop
itself (the playground's Chat runs it on a conversation's world, with plain text allowed as the
answer); `run_episode` is one graded attempt at a task.

Each step keeps the raw generated text, the parsed call or its typed parse error, the
observation read back, and the generation Result with its frames, so the session store can
persist the whole transcript and the visualizer can replay every denoising round.
An identical repeat of an earlier call is vetoed (not executed; the model reads
{"error":"repeated_call"}).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.trace import ConfigError, Frame, GenerationConfig, Result
from world.format import EOS, TOOL_CALLS, ParseError, parse_call, render_response, system_prompt
from world.grader import grade, grade_document
from world.state import World, world_for
from world.tools import FINISH, call_tool

DEFAULT_MAX_STEPS = 8
VETO = {"error": "repeated_call"}

# generate_fn(messages) -> the reply text, or a Result whose .text is it (scripted models, oracles)
GenerateFn = Callable[[list[dict[str, str]]], "str | Result"]


@dataclass
class Step:
    raw_text: str                           # what the model generated
    call: dict[str, Any] | None             # {"name", "arguments"} when it parsed
    error: dict[str, Any] | None            # {"kind", "message", ...}: a parse error or the repeat veto
    observation: Any                        # what the model reads back (None after finish)
    result: Result | None                   # the generation, frames included (None for scripted models)
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"raw_text": self.raw_text, "call": self.call, "error": self.error, "observation": self.observation,
                "result": self.result.to_dict() if self.result else None, "seconds": self.seconds}


@dataclass
class Transcript:
    task_id: str
    instruction: str
    messages: list[dict[str, str]] = field(default_factory=list)  # the chat as the model saw it
    steps: list[Step] = field(default_factory=list)
    final_answer: str | None = None
    success: bool = False
    error_type: str | None = None
    reason: str = ""
    seconds: float = 0.0
    nfe: int = 0
    new_tokens: int = 0
    stopped: str = ""      # why the loop ended early (e.g. the context filled up), for people

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "instruction": self.instruction, "messages": self.messages,
                "steps": [s.to_dict() for s in self.steps], "final_answer": self.final_answer,
                "success": self.success, "error_type": self.error_type, "reason": self.reason,
                "seconds": self.seconds, "nfe": self.nfe, "new_tokens": self.new_tokens,
                "stopped": self.stopped}


def prompt_ids_for(backend: Any, messages: list[dict[str, str]]) -> list[int]:
    """Prompt ids for the next assistant turn: the backend's own chat format (Sprout's is the
    template this world is written in, sprout/chat.py), tool responses in its tool role."""
    return list(backend.encode_chat([{"role": m["role"], "content": m["content"]} for m in messages]))


def _default_system(backend: Any) -> str | None:
    """The corpus has no system turn, so world-format models get none; a remote model gets the
    tools as the API's `tools` (engine/backends/remote.py); others need the tool list."""
    if backend is None or getattr(backend, "chat_format", None) == "world" or getattr(backend, "sends_tools", False):
        return None
    return "full"


def _generate(backend: Any, messages: list[dict[str, str]], config: GenerationConfig,
              on_frame: Callable[[Frame], None] | None, generate_fn: GenerateFn | None) -> tuple[str, Result | None]:
    if generate_fn is not None:
        out = generate_fn(messages)
        return (out.text, out) if isinstance(out, Result) else (str(out), None)
    from engine.generate import run  # imported here: the world and the oracle need no torch model

    result = run(backend, prompt_ids_for(backend, messages), config, on_frame=on_frame, tools=TOOL_CALLS)
    return result.text, result


def _assistant_text(raw: str) -> str:
    """A reply as it goes back into the chat: up to its end-of-turn marker, trimmed."""
    return raw.split(EOS, 1)[0].strip()


def _execute(world: World, call: dict[str, Any]) -> Any:
    try:
        return call_tool(world, call["name"], call["arguments"])
    except Exception as error:  # noqa: BLE001 - a tool bug must not end the episode unrecorded
        return {"error": f"tool failed: {type(error).__name__}"}


def act(backend: Any, world: World, messages: list[dict[str, str]], config: GenerationConfig, *,
        max_steps: int = DEFAULT_MAX_STEPS, text_answers: bool = False, on_step: Callable[[Step], None] | None = None,
        on_frame: Callable[[Frame], None] | None = None, generate_fn: GenerateFn | None = None
        ) -> tuple[str | None, str]:
    """Let the model call tools on `world` until it calls finish (or, with `text_answers`, replies
    in plain text), at most `max_steps` replies. `messages` (the chat as the model reads it) grows
    in place; each step goes to on_step. Returns (final answer or None, why it ended early or "").

    A reply that does not parse is a step with a typed error; the model reads the error back and
    tries again. With `text_answers` (chat), a reply with no call in it at all is the answer.
    """
    seen: set[str] = set()
    for _ in range(max_steps):
        t0 = time.perf_counter()
        try:
            text, result = _generate(backend, messages, config, on_frame, generate_fn)
        except ConfigError as full:
            # the transcript outgrew the model's context: out of budget (the grader says step_limit)
            return None, str(full)
        parsed = parse_call(text)
        answer = None
        if isinstance(parsed, ParseError):
            if text_answers and parsed.kind == "no_call":
                answer = _assistant_text(text)
                step = Step(text, None, None, None, result, 0.0)
            else:
                step = Step(text, None, parsed.to_dict(), parsed.observation(), result, 0.0)
            reply = _assistant_text(text)
        else:
            call, reply = parsed.to_dict(), parsed.render()
            if parsed.name == FINISH:
                answer = parsed.arguments["answer"]
                step = Step(text, call, None, None, result, 0.0)
            elif parsed.key() in seen:
                step = Step(text, call, {"kind": "repeated_call", "message": "The same call was made before."},
                            VETO, result, 0.0)
            else:
                seen.add(parsed.key())
                step = Step(text, call, None, _execute(world, call), result, 0.0)
        step.seconds = time.perf_counter() - t0
        messages.append({"role": "assistant", "content": reply})
        if on_step is not None:
            on_step(step)
        if answer is not None:
            return answer, ""
        messages.append({"role": "tool", "content": render_response(step.observation)})
    return None, ""


def run_episode(backend: Any, task: dict[str, Any], config: GenerationConfig, *, max_steps: int = DEFAULT_MAX_STEPS,
                system: str | None = "auto", on_step: Callable[[Step], None] | None = None,
                on_frame: Callable[[Frame], None] | None = None, generate_fn: GenerateFn | None = None) -> Transcript:
    """Run one attempt at a task and grade it.

    system: "compact", "full", None, or "auto" (None for world-format models, else "full").
    generate_fn: replaces the backend (scripted models, the oracle); backend may then be None.
    """
    if system == "auto":
        system = _default_system(backend)
    started = time.perf_counter()
    messages = [{"role": "system", "content": system_prompt(system)}] if system else []
    messages.append({"role": "user", "content": task["instruction"]})
    transcript = Transcript(task_id=task["id"], instruction=task["instruction"])

    def record(step: Step) -> None:
        transcript.steps.append(step)
        if step.result is not None:
            transcript.nfe += step.result.stats.nfe
            transcript.new_tokens += step.result.stats.new_tokens
        if on_step is not None:
            on_step(step)

    if task.get("domain") == "document":  # one plain-text reply, checked
        t0 = time.perf_counter()
        # a document is plain text: no tool-call scaffold
        text, result = _generate(backend, messages, config.replace(scaffold=False), on_frame, generate_fn)
        transcript.final_answer = _assistant_text(text)
        record(Step(text, None, None, None, result, time.perf_counter() - t0))
        messages.append({"role": "assistant", "content": transcript.final_answer})
        transcript.seconds = time.perf_counter() - started   # the model's time; grading excluded
        verdict = grade_document(task, transcript.final_answer)
    else:
        world = world_for(task)
        transcript.final_answer, transcript.stopped = act(
            backend, world, messages, config, max_steps=max_steps, on_step=record, on_frame=on_frame,
            generate_fn=generate_fn)
        transcript.seconds = time.perf_counter() - started
        verdict = grade(task, world, transcript.final_answer, transcript.steps)
    transcript.messages = messages
    transcript.success, transcript.error_type, transcript.reason = verdict.success, verdict.error_type, verdict.reason
    if transcript.stopped:
        transcript.reason = f"{transcript.reason} {transcript.stopped}".strip()
    return transcript
