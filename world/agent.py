"""The agent loop: a model (any backend, through engine.generate) acts in the world one
tool call per turn until it calls finish, hits the step limit, or is graded. `act` is the loop
itself (the playground's Chat runs it on a conversation's world, with plain text allowed as the
answer); `run_episode` is one graded attempt at a task.

Each step keeps the raw generated text, the parsed call or its typed parse error, the
observation read back, and the generation Result with its frames, so the session store can
persist the whole transcript and the visualizer can replay every denoising round.
An identical repeat of an earlier call is vetoed (not executed; the model reads
{"error":"repeated_call"}).

Where a call runs: in the world itself (the default), or through its web pages: `pages` (an
world.webmcp.venue.PageVenue, or anything with `episode(task, world)`) gives each episode a
`PageTools` whose tools are those the pages registered and whose `execute` runs a call in the
page (world/webmcp/driver.py); the world the pages act on is the same World, so the grader reads
the same end state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

from engine.errors import ContextFull
from engine.trace import Frame, GenerationConfig, Result
from world.conversations import turn_task
from world.format import (
    EOS,
    REGISTRY,
    TOOL_CALLS,
    ParseError,
    ToolSet,
    parse_call,
    render_response,
    system_prompt,
)
from world.grader import grade, grade_document
from world.start import world_for
from world.state import World
from world.tools import FINISH, call_tool

DEFAULT_MAX_REPLIES = 8
VETO = {"error": "repeated_call"}
# why a loop ended early when should_stop() turned true (a person pressed Stop): the generation in
# progress ends as a cancelled step, built by the engine (engine.generate.until_stopped)
STOPPED = "Stopped before the end."

# generate_fn(messages) -> the reply text, or a Result whose .text is it (scripted models, oracles)
GenerateFn = Callable[[list[dict[str, str]]], "str | Result"]


class PageTools(Protocol):
    """Tools that run somewhere else than `call_tool` (a web page): what the model may call
    (`tools`, finish included) and how a parsed call runs (its observation, never an exception)."""
    tools: ToolSet

    def execute(self, call: dict[str, Any]) -> Any: ...


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
    context_messages: int = 0  # in a conversation: messages the model read as the request began
    open_s: float = 0.0    # of `seconds`: opening the task's web pages before the first forward (pages=)

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "instruction": self.instruction, "messages": self.messages,
                "steps": [s.to_dict() for s in self.steps], "final_answer": self.final_answer,
                "success": self.success, "error_type": self.error_type, "reason": self.reason,
                "seconds": self.seconds, "nfe": self.nfe, "new_tokens": self.new_tokens,
                "stopped": self.stopped, "context_messages": self.context_messages, "open_s": self.open_s}


def prompt_ids_for(backend: Any, messages: list[dict[str, str]]) -> list[int]:
    """Prompt ids for the next assistant turn: the backend's own chat format (Sprout's is the
    template this world is written in, sprout/chat.py), tool responses in its tool role."""
    return list(backend.encode_chat([{"role": m["role"], "content": m["content"]} for m in messages]))


def one_request(backend: Any) -> bool:
    """Whether the model's weights declare that they read one request per conversation
    (playground.json "context": "latest_request", as the Sprout twins did until issue 49 retrained
    them on conversations: engine/backends/sprout.py). No backend (a scripted model) reads the
    whole conversation."""
    return backend is not None and backend.one_request_per_chat


def model_context(backend: Any, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages the model reads. A one-request model reads the system text and the
    conversation from the latest user message on: given earlier turns too, weights trained on
    single requests repeat an earlier answer instead of reading the new one. Its world still
    holds what the earlier turns did (the cart, new customers). Others read every turn."""
    if not one_request(backend):
        return messages
    latest = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if latest is None:
        return messages
    return [m for m in messages[:latest] if m["role"] == "system"] + messages[latest:]


def default_system(backend: Any) -> str | None:
    """The corpus has no system turn, so world-format models get none; a remote model gets the
    tools as the API's `tools` (engine/backends/remote.py); others need the tool list."""
    if backend is None or backend.chat_format == "world" or backend.sends_tools:
        return None
    return "full"


def _generate(backend: Any, messages: list[dict[str, str]], config: GenerationConfig,
              on_frame: Callable[[Frame], None] | None, generate_fn: GenerateFn | None,
              should_stop: Callable[[], bool] | None = None) -> tuple[str, Result | None]:
    if generate_fn is not None:
        out = generate_fn(messages)
        return (out.text, out) if isinstance(out, Result) else (str(out), None)
    from engine.generate import run  # imported here: the world and the oracle need no torch model

    result = run(backend, prompt_ids_for(backend, messages), config, on_frame=on_frame, should_stop=should_stop,
                 tools=TOOL_CALLS)
    return result.text, result


def cancelled(result: Result | None) -> bool:
    """Whether a generation was cut by Stop (its frames so far, stop_reason "cancelled")."""
    return result is not None and result.stats.stop_reason == "cancelled"


def _assistant_text(raw: str) -> str:
    """A reply as it goes back into the chat: up to its end-of-turn marker, trimmed."""
    return raw.split(EOS, 1)[0].strip()


def _execute(world: World, call: dict[str, Any]) -> Any:
    try:
        return call_tool(world, call["name"], call["arguments"])
    except Exception as error:  # noqa: BLE001 - a tool bug must not end the episode unrecorded
        return {"error": f"tool failed: {type(error).__name__}"}


def act(backend: Any, world: World, messages: list[dict[str, str]], config: GenerationConfig, *,
        max_replies: int = DEFAULT_MAX_REPLIES, text_answers: bool = False,
        on_step: Callable[[Step], None] | None = None, on_frame: Callable[[Frame], None] | None = None,
        generate_fn: GenerateFn | None = None,
        page_tools: PageTools | None = None, should_stop: Callable[[], bool] | None = None) -> tuple[str | None, str]:
    """Let the model call tools on `world` until it calls finish (or, with `text_answers`, replies
    in plain text), at most `max_replies` replies. `messages` (the chat as the model reads it) grows
    in place; each step goes to on_step. Returns (final answer or None, why it ended early or "").

    A reply that does not parse is a step with a typed error; the model reads the error back and
    tries again. With `text_answers` (chat), a reply with no call in it at all is the answer.
    With `page_tools`, calls are parsed against its tools and run through it instead of on `world`.
    Once should_stop() turns true, the reply in progress ends as a cancelled step and the loop
    returns (None, STOPPED).
    """
    events = act_steps(backend, world, messages, config, max_replies=max_replies, text_answers=text_answers,
                       generate_fn=generate_fn, page_tools=page_tools, should_stop=should_stop)
    try:
        while True:
            try:
                item = next(events)
            except StopIteration as done:
                return done.value
            if isinstance(item, Step):
                if on_step is not None:
                    on_step(item)
            elif on_frame is not None:
                on_frame(item)
    finally:
        events.close()                         # a consumer's exception ends the generation too


def act_steps(backend: Any, world: World, messages: list[dict[str, str]], config: GenerationConfig, *,
              max_replies: int = DEFAULT_MAX_REPLIES, text_answers: bool = False, generate_fn: GenerateFn | None = None,
              page_tools: PageTools | None = None,
              should_stop: Callable[[], bool] | None = None) -> Generator[Frame | Step, None, tuple[str | None, str]]:
    """`act` as a generator: each forward's Frame and each finished Step in order, returning
    (final answer or None, why it ended early or ""). A caller that steps two of these in turn
    races two models over whole turns in one thread (app/compare.py). Once should_stop() turns
    true (asked after each frame and before each reply), the reply in progress ends as a cancelled
    step and the loop returns (None, STOPPED); nothing of a cut reply is parsed or run."""
    seen: set[str] = set()
    for _ in range(max_replies):
        if should_stop is not None and should_stop():
            return None, STOPPED
        t0 = time.perf_counter()
        try:
            if generate_fn is not None:
                out = generate_fn(messages)
                text, result = (out.text, out) if isinstance(out, Result) else (str(out), None)
            else:
                from engine.generate import until_stopped  # imported here: the world and the oracle need no torch

                result = yield from until_stopped(backend, prompt_ids_for(backend, messages), config, should_stop,
                                                  TOOL_CALLS)
                text = result.text
        except ContextFull as full:
            # the transcript outgrew the model's context: out of budget (the grader says step_limit);
            # any other ConfigError is a setting that cannot work, and goes to the caller as it is
            return None, str(full)
        if cancelled(result):
            yield Step(text, None, None, None, result, time.perf_counter() - t0)
            return None, STOPPED
        parsed = parse_call(text, page_tools.tools if page_tools is not None else REGISTRY)
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
                observation = page_tools.execute(call) if page_tools is not None else _execute(world, call)
                step = Step(text, call, None, observation, result, 0.0)
        step.seconds = time.perf_counter() - t0
        messages.append({"role": "assistant", "content": reply})
        yield step
        if answer is not None:
            return answer, ""
        messages.append({"role": "tool", "content": render_response(step.observation)})
    return None, ""


def run_episode(backend: Any, task: dict[str, Any], config: GenerationConfig, *, max_replies: int = DEFAULT_MAX_REPLIES,
                system: str | None = "auto", on_step: Callable[[Step], None] | None = None,
                on_frame: Callable[[Frame], None] | None = None, generate_fn: GenerateFn | None = None,
                pages: Any = None, should_stop: Callable[[], bool] | None = None) -> Transcript:
    """Run one attempt at a task and grade it.

    system: "compact", "full", None, or "auto" (None for world-format models, else "full"); "full"
    lists the tools as the pages registered them when `pages` is given.
    generate_fn: replaces the backend (scripted models, the oracle); backend may then be None.
    pages: run the tool calls through the world's web pages (world.webmcp.venue.PageVenue).
    should_stop: asked after each forward; once true the episode ends there (transcript.stopped is
    STOPPED, its last step the cancelled generation) and is graded as it stands.
    """
    if system == "auto":
        system = default_system(backend)
    started = time.perf_counter()
    document = task.get("domain") == "document"
    world = None if document else world_for(task)
    page_tools = pages.episode(task, world) if pages is not None and not document else None
    listed = page_tools.tools.tools if page_tools is not None else None
    messages = [{"role": "system", "content": system_prompt(system, listed)}] if system else []
    messages.append({"role": "user", "content": task["instruction"]})
    transcript = Transcript(task_id=task["id"], instruction=task["instruction"],
                            open_s=time.perf_counter() - started if page_tools is not None else 0.0)

    def record(step: Step) -> None:
        transcript.steps.append(step)
        if step.result is not None:
            transcript.nfe += step.result.stats.nfe
            transcript.new_tokens += step.result.stats.new_tokens
        if on_step is not None:
            on_step(step)

    if document:  # one plain-text reply, checked
        t0 = time.perf_counter()
        # a document is plain text: no tool-call scaffold
        text, result = _generate(backend, messages, config.replace(scaffold=False), on_frame, generate_fn,
                                 should_stop)
        transcript.final_answer = None if cancelled(result) else _assistant_text(text)
        transcript.stopped = STOPPED if cancelled(result) else ""
        record(Step(text, None, None, None, result, time.perf_counter() - t0))
        messages.append({"role": "assistant", "content": _assistant_text(text)})
        transcript.seconds = time.perf_counter() - started   # the model's time; grading excluded
        verdict = grade_document(task, transcript.final_answer or "")
    else:
        transcript.final_answer, transcript.stopped = act(
            backend, world, messages, config, max_replies=max_replies, on_step=record, on_frame=on_frame,
            generate_fn=generate_fn, page_tools=page_tools, should_stop=should_stop)
        transcript.seconds = time.perf_counter() - started
        verdict = grade(task, world, transcript.final_answer, transcript.steps)
    transcript.messages = messages
    transcript.success, transcript.error_type, transcript.reason = verdict.success, verdict.error_type, verdict.reason
    if transcript.stopped:
        transcript.reason = f"{transcript.reason} {transcript.stopped}".strip()
    return transcript


# -- conversations: several requests, one world, one growing chat ------------------------------
@dataclass
class ConversationTranscript:
    conversation_id: str
    requests: list[Transcript] = field(default_factory=list)   # one per request, in order
    success: bool = False                                       # every request succeeded
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "success": self.success, "seconds": self.seconds,
                "requests": [t.to_dict() for t in self.requests]}


def _graded_world(task: dict[str, Any], steps: list[Step]) -> World:
    """The request's own executed calls replayed on the gold state before it: an earlier
    request's mistake fails that request, not every later one (the conversation fails with it)."""
    world = world_for(task)
    for step in steps:
        if step.call is not None and step.error is None and step.call["name"] != FINISH:
            _execute(world, step.call)
    return world


def run_conversation(backend: Any, conversation: dict[str, Any], config: GenerationConfig, *,
                     max_replies: int = DEFAULT_MAX_REPLIES, system: str | None = "auto", reads: str = "declared",
                     generate_for: Callable[[dict[str, Any]], GenerateFn] | None = None,
                     on_step: Callable[[Step], None] | None = None, pages: Any = None,
                     on_frame: Callable[[Frame], None] | None = None, should_stop: Callable[[], bool] | None = None,
                     on_request: Callable[[int, dict[str, Any]], None] | None = None) -> ConversationTranscript:
    """Ask a conversation's requests one after another in one world (world/conversations.py).
    The model reads the chat so far, its own earlier calls and their responses included, unless
    `reads` (declared: what the weights declare, model_context; conversation; latest_request) says
    the latest request only. Each request is graded as a task (conversations.turn_task).
    generate_for(task) gives a request's scripted model (the oracle) in place of the backend.
    pages: as run_episode's; the whole conversation is one visit, so its world goes behind the pages
    once and every request's calls run there (the cart a request filled is the next one's).
    on_frame, should_stop: as run_episode's; once stopped, the request in progress is graded as it
    stands and no later request is asked. on_request(k, task): request k is about to be asked."""
    if system == "auto":
        system = default_system(backend)
    started = time.perf_counter()
    world = world_for({"split": conversation["split"], "world": conversation["world"]})
    page_tools = pages.episode(conversation, world) if pages is not None else None
    listed = page_tools.tools.tools if page_tools is not None else None
    history = [{"role": "system", "content": system_prompt(system, listed)}] if system else []
    out = ConversationTranscript(conversation["id"])
    for k in range(len(conversation["turns"])):
        task = turn_task(conversation, k)
        if on_request is not None:
            on_request(k, task)
        history.append({"role": "user", "content": task["instruction"]})
        latest = reads == "latest_request" or (reads == "declared" and one_request(backend))
        context = model_context(SimpleNamespace(one_request_per_chat=True), history) if latest else list(history)
        seen = len(context)
        transcript = Transcript(task_id=task["id"], instruction=task["instruction"], context_messages=seen)

        def record(step: Step, transcript: Transcript = transcript) -> None:
            transcript.steps.append(step)
            if step.result is not None:
                transcript.nfe += step.result.stats.nfe
                transcript.new_tokens += step.result.stats.new_tokens
            if on_step is not None:
                on_step(step)

        t0 = time.perf_counter()
        transcript.final_answer, transcript.stopped = act(
            backend, world, context, config, max_replies=max_replies, on_step=record,
            generate_fn=generate_for(task) if generate_for else None, page_tools=page_tools, on_frame=on_frame,
            should_stop=should_stop)
        transcript.seconds = time.perf_counter() - t0
        history += context[seen:]                 # the request's calls, responses and answer
        transcript.messages = context
        verdict = grade(task, _graded_world(task, transcript.steps), transcript.final_answer, transcript.steps)
        transcript.success, transcript.error_type = verdict.success, verdict.error_type
        transcript.reason = f"{verdict.reason} {transcript.stopped}".strip()
        out.requests.append(transcript)
        if transcript.stopped == STOPPED:        # a person said stop: the rest is not asked
            break
    out.success = all(t.success for t in out.requests)
    out.seconds = time.perf_counter() - started
    return out
