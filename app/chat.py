"""The Chat tab's handlers: stream an answer with its live denoising panel, stop, regenerate,
edit and resubmit, scrub through the rounds of the last answer, and export it.

`ChatHandlers.submit` is a generator: each value is one update of every output (CHAT_OUTPUTS,
in order). Frames go to the browser through a Throttle (<= 20 updates/s, the last always).
The raw history (role/content dicts, unescaped) lives in a gr.State; the Chatbot only ever
shows escaped copies of it.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import gradio as gr

from engine.backends.base import BackendError
from engine.generate import generate, stats_line, summarize
from engine.trace import ConfigError, GenerationConfig, Result
from sessions import StoreError

from .exports import export_answer
from .live import TraceView, chat_messages
from .messages import user_error, warn
from .settings import config_from_controls
from .state import AppContext
from .throttle import Throttle

CHAT_OUTPUTS = ("chatbot", "panel", "history", "conversation_id", "trace", "scrubber", "heatmap", "commits", "prompt",
                "status")
STOP_WAIT_S = 5.0           # how long Stop waits for the run to close before drawing what it kept
EMPTY_PANEL = '<div class="dp-panel dp-empty">The denoising of the next answer shows here, round by round.</div>'


def encode_prompt(backend: Any, messages: list[dict[str, str]]) -> list[int]:
    """Prompt ids, or ConfigError when the tokenizer cannot read the text."""
    try:
        return list(backend.encode_chat(messages))
    except ValueError as exc:
        raise ConfigError(f"The tokenizer of {backend.name} cannot read this prompt ({exc}).") from exc


def failure(exc: Exception) -> gr.Error:
    """What a person reads when a run fails: our sentence, or the crash in one line."""
    if isinstance(exc, (ConfigError, BackendError, StoreError)):
        return user_error(str(exc))
    return user_error(f"The model failed while generating ({type(exc).__name__}: {exc}). Nothing was saved for "
                      "this answer; try other settings or another model.")


def scrub_panel(trace: TraceView | None, frame_number: Any) -> Any:
    """The grid as it stood after frame `frame_number` (1-based) of a finished trace."""
    if trace is None or not trace.frames:
        return gr.skip()
    return trace.panel("replay", upto=int(frame_number or 1) - 1)


def file_list(paths: list[Any]) -> Any:
    """A File output showing `paths` (hidden when there are none)."""
    return gr.update(value=[str(p) for p in paths] or None, visible=bool(paths))


def scrubber_for(trace: TraceView) -> Any:
    n = max(1, len(trace.frames))
    return gr.Slider(minimum=1, maximum=n, value=n, step=1, visible=True, interactive=True,
                     label=f"Replay: frame (model forward) 1-{n}")


class ChatHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second

    # -- streaming ----------------------------------------------------------------------------
    def submit(self, message: str, history: list[dict[str, str]] | None, conversation_id: int | None, model: str,
               system: str, gen_length: Any, block_size: Any, steps: Any, sampler: str, threshold: Any,
               temperature: Any, seed: Any) -> Generator[tuple, None, None]:
        """Answer `message`; yields one tuple of CHAT_OUTPUTS per update, the last one complete."""
        message = message or ""
        if not message.strip():
            raise user_error("The prompt is empty: type a message for the model first.")
        try:
            config = config_from_controls(gen_length, block_size, steps, sampler, threshold, temperature, seed)
        except ConfigError as exc:
            raise user_error(str(exc)) from None
        history = [dict(m) for m in (history or [])]
        system = (system or "").strip()
        messages = ([{"role": "system", "content": system}] if system else []) + history + [
            {"role": "user", "content": message}]
        try:
            with self.ctx.registry.using(model) as backend:
                prompt_ids = encode_prompt(backend, messages)
                frames = generate(backend, prompt_ids, config)        # checks prompt length and config
                conversation_id = self._conversation(conversation_id, message, model, system, config)
                yield from self._stream(backend, frames, config, model, message, history, conversation_id)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure reaches the person as a sentence
            raise failure(exc) from None

    def _stream(self, backend: Any, frames: Generator, config: GenerationConfig, model: str, message: str,
                history: list[dict[str, str]], conversation_id: int | None) -> Generator[tuple, None, None]:
        view = TraceView.for_run(backend, config, model, message)
        throttle = Throttle(self.updates_per_second)
        user_turn = {"role": "user", "content": message}
        started, first = time.perf_counter(), True
        try:
            while True:
                try:
                    frame = next(frames)
                except StopIteration as done:
                    result: Result = done.value
                    break
                view.add(frame, backend)
                if throttle.ready():
                    answer = {"role": "assistant", "content": view.partial_text(backend)}
                    shown = history + [user_turn, answer]
                    yield (chat_messages(shown), view.panel("live"), shown, conversation_id, view, gr.skip(),
                           gr.skip(), gr.skip(), "" if first else gr.skip(), gr.skip())
                    first = False
        except GeneratorExit:
            # Stop: keep what was decided, as a cancelled turn, then let the generator close.
            frames.close()
            partial = summarize(backend, view.frames, time.perf_counter() - started, "cancelled")
            view.finish(partial)                  # the trace state now holds the stopped run
            self._save(conversation_id, message, partial, config, model)
            raise
        view.finish(result)
        saved = self._save(conversation_id, message, result, config, model)
        shown = history + [user_turn, {"role": "assistant", "content": result.text}]
        heatmap, commits = view.plots()
        status = stats_line(result.stats) + (f" · saved as conversation #{conversation_id}" if saved else "")
        yield (chat_messages(shown), view.panel("done"), shown, conversation_id, view, scrubber_for(view), heatmap,
               commits, "" if first else gr.skip(), status)

    def regenerate(self, history: list[dict[str, str]] | None, conversation_id: int | None, *controls: Any
                   ) -> Generator[tuple, None, None]:
        """Answer the last message again (with the current settings); the old answer stays stored."""
        history = list(history or [])
        if len(history) < 2 or history[-1]["role"] != "assistant" or history[-2]["role"] != "user":
            raise user_error("There is no answer to regenerate yet: send a message first.")
        yield from self.submit(history[-2]["content"], history[:-2], conversation_id, *controls)

    def stopped(self, trace: TraceView | None, wait_s: float = STOP_WAIT_S) -> tuple:
        """After Stop: (panel, scrubber, heatmap, commits, status) for what was decided before it.

        `trace` is the live run's own TraceView (the state it yields); the run finishes it when
        Gradio closes the generator. Waiting for that means no late live update lands after this one.
        """
        deadline = time.monotonic() + wait_s
        while trace is not None and trace.result is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if trace is None or not trace.frames:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), "Stopped."
        if trace.stats is not None and trace.stats.stop_reason != "cancelled":
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), "The answer was already complete."
        heatmap, commits = trace.plots()
        return (trace.panel("stopped"), scrubber_for(trace), heatmap, commits,
                f"Stopped after {len(trace.frames)} forwards; what was decided is kept (as a cancelled turn).")

    def edit_last(self, history: list[dict[str, str]] | None) -> tuple:
        """Put the last message back in the prompt box and drop it and its answer from the chat
        (they stay in the session store); sending it again continues from there."""
        history = list(history or [])
        if len(history) < 2 or history[-2]["role"] != "user":
            raise user_error("There is no message to edit yet: send one first.")
        kept = history[:-2]
        return history[-2]["content"], kept, chat_messages(kept)

    def new_chat(self) -> tuple:
        hidden = gr.Slider(visible=False)
        return [], EMPTY_PANEL, [], None, None, hidden, None, None, "", "Started a new conversation."

    # -- after a run --------------------------------------------------------------------------
    def export(self, trace: TraceView | None) -> tuple[Any, str]:
        """Files for the last answer (replay, LaTeX, its code) and an HTML preview when it is a page."""
        if trace is None or trace.result is None:
            raise user_error("There is no finished answer to export yet: run a generation first.")
        title = " ".join(trace.prompt.split())[:60] or "answer"
        files, preview = export_answer(self.ctx.export_dir, trace.result, trace.config, title, trace.prompt,
                                       trace.model)
        return file_list(files), preview

    # -- the session store --------------------------------------------------------------------
    def _conversation(self, conversation_id: int | None, message: str, model: str, system: str,
                      config: GenerationConfig) -> int | None:
        store = self.ctx.store
        if store is None or conversation_id is not None:
            return conversation_id
        try:
            return store.create_conversation("chat", " ".join(message.split())[:80], model=model,
                                             meta={"system": system, "config": config.to_dict()})
        except StoreError as exc:
            warn(f"{exc} This conversation is not being saved.")
            return None

    def _save(self, conversation_id: int | None, message: str, result: Result, config: GenerationConfig,
              model: str) -> bool:
        """Store the user turn and the answer with its frames; a failure is a warning, not an error."""
        store = self.ctx.store
        if store is None:
            warn(f"This answer was not saved: {self.ctx.store_problem}")
            return False
        if conversation_id is None:
            return False
        try:
            store.add_turn(conversation_id, "user", message)
            store.add_turn(conversation_id, "assistant", result.text, generation=result, config=config, model=model)
            return True
        except StoreError as exc:
            warn(f"This answer was not saved: {exc}")
            return False
