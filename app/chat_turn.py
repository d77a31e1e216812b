"""One chat turn while it runs: the tool steps done so far, the reply being generated (its live
view, shown as text or as a pending tool card, never as raw markup), what Stop leaves of it, and
the history entries and status line it ends with."""

from __future__ import annotations

import time
from typing import Any

from engine.metrics import combined, summary_line
from engine.trace import GenerationConfig
from world.format import EOS, render_call
from world.tools import FINISH

from .conversation_world import no_answer_note
from .live import TraceView, markdown_safe
from .runs import Run
from .steps import (
    answer_of,
    answer_so_far,
    call_name_so_far,
    chat_entries,
    chat_messages,
    conversation_sources,
    step_contexts,
)
from .structured import shown_json
from .watch import Generations

CUT_CALL_NOTE = "(Stop came while a tool call was being written: it was cut off there and not run.)"
EMPTY_PANEL = '<div class="dp-panel dp-empty">The denoising of the next answer shows here, round by round.</div>'


class ChatTurn(Generations):
    """What one chat turn has so far: the steps done, the generation in progress, its view."""

    def __init__(self, run: Run, config: GenerationConfig, model: str, message: str, history: list[dict[str, Any]],
                 user: dict[str, Any], structured: bool = False, system: str = "", in_pages: bool = False,
                 shown_before: list[dict[str, Any]] | None = None) -> None:
        # the backend comes once the model is loaded (app/chat.py sets it before the first forward)
        super().__init__(None, config, model, message, TraceView(
            frames=[], pieces={}, mask_id=None, gen_length=config.gen_length, block_size=1, steps=None,
            kind="diffusion", config=config, model=model, prompt=message))
        self.run = run
        # the Chatbot's messages before this turn's, as the chat shows them (with their versions'
        # arrows: app/chat_tree.py); the history's own when not given
        self.shown_before = chat_messages(history) if shown_before is None else shown_before
        self.structured = structured              # one answer in a JSON schema's shape (app/structured.py)
        self.in_pages = in_pages                  # the tool calls run in the world's web pages (WebMCP)
        self.webmcp = ""                          # ... on whose WebMCP: native or polyfill, once they ran
        self.history, self.user = history, user
        self.known = conversation_sources(history + [user], system)   # what a call may copy from
        self.stopped = False

    def begin(self, view: TraceView) -> None:
        # what this reply could copy from, for the marks in its export (app/steps.py)
        view.meta["known"] = self.known + [s.observation for s in self.steps if s.observation is not None]

    def _in_flight(self) -> list[dict[str, Any]]:
        """The reply being generated, as the person may see it: text, or a pending tool card."""
        if not self.pending:
            return []
        text = self.view.partial_text(self.backend).lstrip()
        if self.structured:
            return [{"role": "assistant", "content": "", "title": "Structured answer (JSON): being written…",
                     "status": "pending", "shown": ""}]
        if text.startswith(("<tool_call>", "{", "<")):
            answer = answer_so_far(text)
            if answer:                               # the turn's answer, streaming as it is decided
                return [{"role": "assistant", "content": answer + " …"}]
            name = call_name_so_far(text)
            title = f"Tool call {name}: being written…" if name and name != FINISH else "Tool call: being written…"
            return [{"role": "assistant", "content": "", "title": title, "status": "pending", "shown": ""}]
        return [{"role": "assistant", "content": text or "…"}]

    def chatbot(self) -> list[dict[str, Any]]:
        entries = [e for step, (known, failures) in zip(self.steps, step_contexts(self.steps, self.known))
                   for e in chat_entries(step, step.raw_text, known, failures)]
        return self.shown_before + chat_messages([self.user] + entries + self._in_flight())

    def stop(self) -> None:
        """Stopped: the generation Stop cut already arrived as a cancelled step (the engine's
        partial Result, engine.generate.until_stopped); nothing more is in flight."""
        self.stopped = True
        self.pending = False

    def entries(self, answer: str | None, early: str) -> list[dict[str, Any]]:
        """The turn's history entries: its steps, then the answer or a note saying why none came."""
        out = []
        for i, (step, (known, failures)) in enumerate(zip(self.steps, step_contexts(self.steps, self.known))):
            cancelled = step.result is not None and step.result.stats.stop_reason == "cancelled"
            if cancelled:
                text = answer_of(step) or ""
                if text and not text.lstrip().startswith(("<tool_call>", "{")):
                    out.append({"role": "assistant", "content": "", "shown": f"{text} … (stopped)", "note": True})
                elif text:              # half a call: its values may be cut mid-id ("P20"), so none is shown
                    out.append({"role": "assistant", "content": "", "shown": CUT_CALL_NOTE, "note": True})
                continue
            entries = chat_entries(step, self._reply(i), known, failures)
            if self.structured and answer_of(step) is not None:
                entries[-1]["shown"] = shown_json(answer_of(step))
            out += entries
        if answer is None and not self.stopped:
            out.append({"role": "assistant", "content": "", "shown": no_answer_note(len(self.steps), early),
                        "note": True})
        return out

    def _reply(self, index: int) -> str:
        # what act() put in the model's context for this step: the canonical call, or the text
        step = self.steps[index]
        if step.call is not None:
            return render_call(step.call["name"], step.call["arguments"])
        return step.raw_text.split(EOS, 1)[0].strip()

    def final_panel(self) -> str:
        if not self.view.frames:
            return EMPTY_PANEL
        self.view.generations = sum(1 for step in self.steps if step.result is not None)
        return self.view.panel("stopped" if self.stopped else "done")

    def status(self, config: GenerationConfig, conversation_id: int | None, stop_requested: bool) -> str:
        parts = []
        if self.stopped or stop_requested:
            parts.append("Stopped." + (" What was decided is kept (stored as stopped)." if self.stopped else
                                       " The answer was already complete."))
        generated = [step.result.stats for step in self.steps if step.result is not None]
        if generated:   # the whole answer, every generation of it; wall time = what the person waited
            numbers = combined(generated, wall_s=time.perf_counter() - self.run.started)
            parts.append(summary_line(numbers, scope="turn", generations=len(generated)))
        answered = [step.result for step in self.steps
                    if step.result is not None and step.result.stats.stop_reason != "cancelled"]
        if self.structured and answered:          # the engine's check of the answer against the schema
            problem = answered[-1].schema_error
            parts.append(f"does not follow the JSON schema: {markdown_safe(problem)}" if problem
                         else "follows the JSON schema")
        tools = sum(1 for step in self.steps if step.call is not None and step.call["name"] != FINISH)
        if tools:
            where = f" ({self.webmcp} WebMCP)" if self.webmcp else " (WebMCP)"
            parts.append(f"{tools} tool call(s)" + (f" in the web pages{where}" if self.in_pages else ""))
        if config.temperature > 0:
            parts.append(f"seed {config.seed}")
        if conversation_id is not None and self.steps:
            parts.append(f"saved as conversation #{conversation_id}")
        return " · ".join(parts)
