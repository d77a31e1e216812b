"""The Chat tab: a conversation whose tool calls run against its own world, with the live
denoising panel, Stop, Regenerate (earlier versions stay browsable), Edit last, New chat, a
scrubber over the last generation, and its export.

A turn is the agent loop (`world.agent.act`) with plain text allowed as the answer: when the
model writes a tool call, the app runs it on the conversation's world and the model goes on,
until it answers in text or calls `finish`. The turn streams through the one run path
(app/runs.py) and is stored in one exchange. A new chat's world is the held-out background
world with every style stocked (app/conversation_world.py DEFAULT_WORLD), made when the page opens and
shown beside the panel as its web pages (app/world_page.py), which follow each tool call; the
examples name what it holds (conversation_world.world_examples). It is stored with the conversation (its
spec in the meta, every executed call in the turns) and persists across turns. A first message
that is a held-out task's instruction, sent while that world is untouched, opens the task's world
instead (as the API does for a request with no world), and the page shows that one.

Handlers are plain (generator) functions; every streaming update is one tuple of CHAT_OUTPUTS.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Generator, Mapping
from typing import Any

import gradio as gr

from engine.backends.base import BackendError
from engine.trace import ConfigError
from sessions import StoreError, TurnRecord
from world.agent import STOPPED, act
from world.state import World
from world.tools import FINISH, call_tool

from .cards import card_for, system_prompt_warning
from .chat_turn import EMPTY_PANEL, ChatTurn
from .controls import generation_controls
from .conversation_world import (
    DEFAULT_WORLD,
    MAX_TOOL_STEPS,
    model_context,
    world_examples,
    world_from_spec,
    world_spec_for,
)
from .exports import export_answer
from .live import TraceView, replay
from .messages import user_error
from .names import with_names
from .runs import Exchange, Run, run_key, save, title_of
from .settings import DEFAULTS, read_settings
from .state import AppContext
from .steps import chat_messages, context_messages, step_turns
from .structured import INFO as SCHEMA_INFO
from .structured import load_example, structured_answer
from .warmup import LOADING_PANEL, is_loading
from .widgets import (
    GENERATE,
    PLOT_MIN_WIDTH,
    QUIET,
    card_examples,
    card_update,
    focus_js,
    model_picker,
    stopper,
    with_settings,
)
from .world_page import WAITING_HTML

CHAT_OUTPUTS = ("chatbot", "panel", "history", "conversation_id", "world", "trace", "versions", "scrubber", "heatmap",
                "commits", "prompt", "status", "version", "versions_row", "world_page")
# The window's height less what sits above and below the Chatbot (title, tabs, picker, message box,
# buttons): at 960 px the whole 440 px, at 800 px 280 px, so the box and Send stay in view.
CHATBOT_HEIGHT = "clamp(220px, calc(100vh - 520px), 440px)"
STOP_WAIT_S = 3.0            # New chat waits this long for a running turn to save and end
SEED_RANGE = 2**31 - 1


def updates(**values: Any) -> tuple:
    """One tuple of CHAT_OUTPUTS; outputs not named stay as they are."""
    unknown = set(values) - set(CHAT_OUTPUTS)
    if unknown:
        raise KeyError(f"not a chat output: {sorted(unknown)}")
    return tuple(values[name] if name in values else gr.skip() for name in CHAT_OUTPUTS)


def failure(exc: Exception) -> gr.Error:
    """What a person reads when a run fails: our sentence, or the crash in one line."""
    if isinstance(exc, (ConfigError, BackendError, StoreError)):
        return user_error(str(exc))
    return user_error(f"The model failed while generating ({type(exc).__name__}: {exc}). Nothing was saved for "
                      "this answer; try other settings or another model.")


def scrub_panel(trace: TraceView | None, frame_number: Any) -> Any:
    """The grid as it stood after frame `frame_number` (1-based; 0 = before the first forward)."""
    if trace is None or not trace.frames:
        return gr.skip()
    if int(frame_number or 0) <= 0:
        return trace.before_first_forward("replay")
    return trace.panel("replay", upto=int(frame_number) - 1)


def play_again(trace: TraceView | None, pace_ms: Any) -> Generator[tuple[Any, Any], None, None]:
    """The Replay button: (panel, scrubber) from round 0 to the end at the playback pace."""
    if trace is None or not trace.frames:
        raise user_error("There is nothing to replay yet: run a generation first.")
    for html, frame_number in replay(trace, pace_ms):
        yield html, gr.Slider(value=frame_number)


def file_list(paths: list[Any]) -> Any:
    """A File output showing `paths` (hidden when there are none)."""
    return gr.update(value=[str(p) for p in paths] or None, visible=bool(paths))


def scrubber_for(trace: TraceView) -> Any:
    n = max(1, len(trace.frames))
    return gr.Slider(minimum=0, maximum=n, value=n, step=1, visible=True, interactive=True,
                     label=f"Replay: frame (model forward) 0-{n}, 0 = before the first forward")


# -- the conversation's world -----------------------------------------------------------------
def stored_world(conversation: Mapping[str, Any]) -> World:
    """A stored chat's world as its last turn left it: the spec in its meta, then every call that
    ran, in order (vetoed, unparsed and finish calls changed nothing)."""
    world = world_from_spec(conversation["meta"].get("world") or DEFAULT_WORLD)
    for turn in conversation["turns"]:
        for call in turn["tool_calls"]:
            if call["error_type"] is None and call["name"] not in (FINISH, "(unparsed)"):
                try:
                    call_tool(world, call["name"], call["arguments"])
                except Exception:  # noqa: BLE001 - it failed in the turn too, and changed nothing
                    pass
    return world


QUEUED_NOTE = ("Queued: “{message}”. It is sent when the answer being generated ends; Stop ends that answer "
               "now.")
# Runs in the page as the message is sent, before the event's inputs leave (it returns them
# unchanged): the box empties, and while an answer is being drawn the status says the message waits.
# textContent, never HTML: the message is the person's text.
SEND_JS = r"""(...inputs) => {
  const message = String(inputs[0] || "");
  const box = document.querySelector("#prompt textarea");
  if (box && message.trim()) {
    box.value = "";
    box.dispatchEvent(new Event("input", {bubbles: true}));
    const busy = document.querySelector('#live-panel [data-mode="live"], #live-panel [data-mode="loading"]');
    const status = document.querySelector("#chat-status .prose") || document.querySelector("#chat-status");
    if (busy && status) {
      const shown = message.split(/\s+/).join(" ").trim();
      status.textContent = NOTE.replace("{message}", shown.length > 60 ? shown.slice(0, 60) + "…" : shown);
    }
  }
  return inputs;
}""".replace("NOTE", json.dumps(QUEUED_NOTE))
COPY_JS = "(text) => { if (text) navigator.clipboard.writeText(text); }"


def answer_text(history: list[dict[str, Any]] | None) -> str:
    """The last answer as the person reads it (plain text, ids named), for the Copy answer button;
    a tool step's card, a note and the Markdown around them are not part of it."""
    for entry in reversed(history or []):
        if entry["role"] == "assistant" and not entry.get("title") and not entry.get("note") and entry.get("shown"):
            gr.Info(f"Copied the last answer ({len(entry['shown'])} characters).")
            return entry["shown"]
    raise user_error("There is no answer to copy yet: send a message first.")


def named_answers(entries: list[dict[str, Any]], world: World, structured: bool) -> list[dict[str, Any]]:
    """The turn's answers as shown, with the world's name beside each id they mention (app/names.py);
    what the model reads back (`content`) stays as it wrote it."""
    if structured:
        return entries
    return [{**e, "shown": with_names(e["shown"], world)}
            if e["role"] == "assistant" and not e.get("title") and e.get("shown") else e for e in entries]


def system_note_update(ctx: AppContext, model: str, system: str) -> Any:
    """The warning under the system prompt box: shown when the model's card says it does not know
    this system prompt (app/cards.py), hidden otherwise."""
    warning = system_prompt_warning(card_for(model, ctx.registry.listing()), system)   # escaped text
    return gr.update(value=f'<div class="dp-notice" role="status">{warning}</div>' if warning else "",
                     visible=bool(warning))


def untouched(world: World) -> bool:
    """Whether `world` is still a new chat's world as made (nothing bought, booked or changed by hand)."""
    return world.end_state() == world_from_spec(DEFAULT_WORLD).end_state()


def chat_prompts(card: Any) -> list[str]:
    """The card's examples about the world a new chat starts in, the one the page beside the panel shows."""
    return world_examples(card.examples, world_from_spec(DEFAULT_WORLD))


def version_label(versions: dict[str, Any] | None) -> str:
    if not versions or len(versions["items"]) < 2:
        return ""
    item = versions["items"][versions["at"]]
    seed = f" · seed {item['seed']}" if item.get("seed") is not None else ""
    return f"Answer version {versions['at'] + 1}/{len(versions['items'])}{seed}"


class ChatHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second

    def page(self, key: tuple, world: World, step: Any = None) -> str:
        """The frame showing `world` as its web pages, on the page of `step`'s tool call if any."""
        call = step.call if step is not None and step.error is None else None
        return self.ctx.world_pages.show(key, world, call, step.observation if call else None)

    def world_view(self, world: World | None, key: tuple) -> tuple[World, str]:
        """(world, frame): the tab's world (a new chat's when there is none yet) and its pages."""
        world = world if world is not None else world_from_spec(DEFAULT_WORLD)
        return world, self.page(key, world)

    # -- one turn -----------------------------------------------------------------------------
    def submit(self, message: str, history: list[dict[str, Any]] | None, conversation_id: int | None,
               world: World | None, versions: dict[str, Any] | None, model: str, system: str, random_seed: bool,
               *, settings: Mapping[str, Any], key: tuple = (None, "chat")) -> Generator[tuple, None, None]:
        """Answer `message`; yields one tuple of CHAT_OUTPUTS per update, the last one complete. The
        page empties the message box when it sends (SEND_JS): a message queued behind a running answer
        must not empty the box when its turn comes, as it may hold the next message by then."""
        yield from self._turn(message, history, conversation_id, world, versions, model, system, random_seed,
                              settings, key, regenerating=False)

    def regenerate(self, history: list[dict[str, Any]] | None, conversation_id: int | None, world: World | None,
                   versions: dict[str, Any] | None, model: str, system: str, random_seed: bool,
                   *, settings: Mapping[str, Any], key: tuple = (None, "chat")) -> Generator[tuple, None, None]:
        """Answer the last message again; the earlier answers stay as versions (and stay stored).
        With temperature > 0 a new seed is drawn."""
        history = list(history or [])
        start = versions["start"] if versions else max(
            (i for i, m in enumerate(history) if m["role"] == "user"), default=None)
        if start is None or start >= len(history) - 1:
            raise user_error("There is no answer to regenerate yet: send a message first.")
        if versions:
            world = versions["before"].clone()
        yield from self._turn(history[start]["content"], history[:start], conversation_id, world, versions, model,
                              system, random_seed, settings, key, regenerating=True)

    def _turn(self, message: str, history: list[dict[str, Any]] | None, conversation_id: int | None,
              world: World | None, versions: dict[str, Any] | None, model: str, system: str, random_seed: bool,
              settings: Mapping[str, Any], key: tuple, regenerating: bool) -> Generator[tuple, None, None]:
        """The turn; refused before anything is drawn (bad settings, a prompt too long), the message goes
        back into the box the page emptied as it sent (SEND_JS), so nothing typed is lost."""
        drawn = False
        turn = self._run_turn(message, history, conversation_id, world, versions, model, system, random_seed,
                              settings, key, regenerating)
        try:
            for update in turn:
                drawn = True
                yield update
        except gr.Error:
            if not drawn and not regenerating and (message or "").strip():
                yield updates(prompt=message)
            raise
        finally:
            turn.close()                 # a closed handler (a client's cancel) closes the turn, which saves

    def _run_turn(self, message: str, history: list[dict[str, Any]] | None, conversation_id: int | None,
                  world: World | None, versions: dict[str, Any] | None, model: str, system: str, random_seed: bool,
                  settings: Mapping[str, Any], key: tuple, regenerating: bool) -> Generator[tuple, None, None]:
        message = message or ""
        if not message.strip():
            raise user_error("The prompt is empty: type a message for the model first.")
        try:
            read = read_settings(settings)
            config = read.config
            if random_seed or (regenerating and config.temperature > 0):
                config = config.replace(seed=secrets.randbelow(SEED_RANGE))
        except ConfigError as exc:
            raise user_error(str(exc)) from None
        history = [dict(m) for m in (history or [])]
        spec = None
        if world is None or (not history and untouched(world)):
            # a first message that is a held-out task's instruction opens that task's world (the
            # page beside the panel then shows it); any other keeps the world already shown
            found = world_spec_for(message)
            if world is None or "task_id" in found:
                spec, world = found, world_from_spec(found)
        before = world.clone()
        system = (system or "").strip()
        user = {"role": "user", "content": message}
        context = ([{"role": "system", "content": system}] if system else []) + context_messages(history + [user])
        run = Run(self.ctx.runs, key, read.pace_ms, self.updates_per_second)
        with run:
            turn = ChatTurn(run, config, model, message, history, user, structured=read.structured,
                            system=system)
            run.parts = lambda frame, _lane: turn.part_count(frame)
            ended = yield from self._stream(run, turn, world, context, conversation_id, spec, system)
            if run.discarded:                        # New chat came: the run is saved, the page moved on
                return
            answer, early = ended.value if ended is not None and ended.value else (None, "")
            if early == STOPPED:
                turn.stop()
            elif early and not turn.steps:
                raise user_error(early)                  # the prompt alone outgrew the context: nothing ran
            conversation_id = self._save(turn, conversation_id, spec, system) if turn.steps else conversation_id
            entries = named_answers(turn.entries(answer, early), world, turn.structured)
            shown = history + [user] + entries
            item = {"entries": entries, "world": world.clone(),
                    "seed": config.seed if config.temperature > 0 else None}
            if regenerating and versions:
                versions = {**versions, "items": [*versions["items"], item], "at": len(versions["items"])}
            else:
                versions = {"start": len(history), "before": before, "items": [item], "at": 0}
            final = dict(chatbot=chat_messages(shown), panel=turn.final_panel(), history=shown,
                         conversation_id=conversation_id, world=world, trace=turn.view, versions=versions,
                         scrubber=scrubber_for(turn.view) if turn.view.frames else gr.skip(),
                         status=turn.status(config, conversation_id, run.stop_requested),
                         version=version_label(versions), versions_row=gr.Row(visible=len(versions["items"]) > 1))
            if not turn.view.frames:
                yield updates(**final)
                return
            if run.stop_requested:       # "Stopped" first: a long answer's plots take a while to build
                yield updates(**final)
            heatmap, commits = turn.view.plots()
            yield updates(**final, heatmap=heatmap, commits=commits)

    def _stream(self, run: Run, turn: ChatTurn, world: World, context: list[dict[str, str]],
                conversation_id: int | None, spec: dict[str, Any] | None, system: str) -> Generator[tuple, None, Any]:
        """The turn's live updates; returns its last event ("done"). Closed early (a
        client's cancel), it saves what was decided before closing."""
        config, model = turn.config, turn.model
        try:
            if is_loading(self.ctx, model):                # the first use waits for weights: say so
                yield updates(panel=LOADING_PANEL, status="")
            with self.ctx.registry.using(model) as backend:
                turn.backend = backend
                context = model_context(backend, context)
                if turn.structured:                        # one answer in the schema's JSON, no tool calls
                    run.start(lambda r: structured_answer(backend, context, config, on_step=lambda s: r.put("step", s),
                                                          on_frame=r.frame, should_stop=r.should_stop),
                              name="chat-turn")
                else:
                    run.start(lambda r: act(backend, world, context, config, max_steps=MAX_TOOL_STEPS,
                                            text_answers=True, on_step=lambda s: r.put("step", s),
                                            on_frame=r.frame, should_stop=r.should_stop), name="chat-turn")
                yield updates(chatbot=turn.chatbot(), panel=EMPTY_PANEL, status="", scrubber=gr.Slider(visible=False),
                              heatmap=None, commits=None, world_page=self.page(run.key, world))
                ended = None
                try:
                    for event in run.events():
                        if event.kind == "frame":
                            if event.part == 1:
                                turn.add(event.value)
                            if event.show:
                                yield updates(chatbot=turn.chatbot(), trace=turn.view,
                                              panel=turn.view.panel(run.mode(), part=(event.part, event.parts),
                                                                    behind=run.behind()))
                        elif event.kind == "step":
                            turn.step_done(event.value)
                            if not run.stop_requested:
                                called = event.value.call is not None and event.value.call["name"] != FINISH
                                yield updates(chatbot=turn.chatbot(), trace=turn.view,
                                              **({"world_page": self.page(run.key, world, event.value)}
                                                 if called else {}))
                        else:
                            ended = event
                except GeneratorExit:
                    for event in run.close():
                        if event.kind == "step":
                            turn.step_done(event.value)
                        elif event.part == 1:
                            turn.add(event.value)
                    turn.stop()
                    self._save(turn, conversation_id, spec, system)
                    raise
                finally:
                    run.close()
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure reaches the person as a sentence
            raise failure(exc) from None
        if run.discarded:
            turn.stop()
            self._save(turn, conversation_id, spec, system)
        return ended

    # -- versions, edit, new ------------------------------------------------------------------
    def show_version(self, history: list[dict[str, Any]] | None, versions: dict[str, Any] | None, delta: int) -> tuple:
        """(chatbot, history, world, versions, version label): the previous / next answer version;
        the model's context follows the version shown."""
        if not versions or len(versions["items"]) < 2:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        at = max(0, min(len(versions["items"]) - 1, versions["at"] + int(delta)))
        versions = {**versions, "at": at}
        item = versions["items"][at]
        shown = list(history or [])[: versions["start"] + 1] + item["entries"]
        return chat_messages(shown), shown, item["world"].clone(), versions, version_label(versions)

    def edit_last(self, history: list[dict[str, Any]] | None, world: World | None,
                  versions: dict[str, Any] | None) -> tuple:
        """(prompt, history, chatbot, world, versions, label, versions row): the last message back in the prompt
        box, it and its answer out of the chat (they stay stored), the world as before them."""
        history = list(history or [])
        start = max((i for i, m in enumerate(history) if m["role"] == "user"), default=None)
        if start is None:
            raise user_error("There is no message to edit yet: send one first.")
        if versions and versions["start"] == start:
            world = versions["before"].clone()
        kept = history[:start]
        return history[start]["content"], kept, chat_messages(kept), world, None, "", gr.Row(visible=False)

    def new_chat(self, key: tuple = (None, "chat")) -> tuple:
        """Everything back to empty: the next message starts a new conversation, a new world and a
        new model context. A run still going is stopped and saved first (and draws nothing more)."""
        self.ctx.runs.stop(key, discard=True, wait_s=STOP_WAIT_S)
        world, page = self.world_view(None, key)
        return updates(chatbot=[], panel=EMPTY_PANEL, history=[], conversation_id=None, world=world, trace=None,
                       world_page=page,
                       versions=None, scrubber=gr.Slider(visible=False), heatmap=None, commits=None,
                       status="Started a new conversation.", version="", versions_row=gr.Row(visible=False))

    # -- after a run --------------------------------------------------------------------------
    def export(self, trace: TraceView | None) -> tuple[Any, str]:
        """Files for the last answer (replay, LaTeX, its code) and an HTML preview when it is a page."""
        if trace is None or trace.result is None:
            raise user_error("There is no finished answer to export yet: run a generation first.")
        title = " ".join(trace.prompt.split())[:60] or "answer"
        files, preview = export_answer(self.ctx.export_dir, trace.result, trace.config, title, trace.prompt,
                                       trace.model, known=trace.meta.get("known"))
        return file_list(files), preview

    def _save(self, turn: ChatTurn, conversation_id: int | None, spec: dict[str, Any] | None, system: str
              ) -> int | None:
        meta = {"system": system, "config": turn.config.to_dict(), "world": spec or DEFAULT_WORLD}
        exchange = Exchange("chat", title_of(turn.message), turn.model, meta=meta, conversation_id=conversation_id,
                            turns=[TurnRecord("user", turn.message), *step_turns(turn.steps, turn.config, turn.model)])
        return save(self.ctx, exchange)


# -- layout -----------------------------------------------------------------------------------
def build(ctx: AppContext) -> dict[str, Any]:
    """The Chat tab's components and events, inside the caller's gr.Tab; returns what other tabs
    wire to (the model picker)."""
    chat = ChatHandlers(ctx)
    history, conversation_id, world = gr.State([]), gr.State(None), gr.State(None)
    trace, versions = gr.State(None), gr.State(None)
    card = card_for(ctx.default_model, ctx.registry.listing())
    with gr.Row():
        with gr.Column(scale=5):
            model = model_picker(ctx.registry.choices(), ctx.default_model, "Model", "chat-model")
            # the conversation and the message box first, so both are on the first screen (1440x960
            # and 400x800); the model's card and examples follow the buttons
            # Gradio's own copy buttons copy each message's Markdown source, tool cards and titles
            # included; this one copies the last answer as the person reads it
            copy_btn = gr.Button("Copy answer", size="sm", elem_id="copy-answer", render=False)
            chatbot = gr.Chatbot(label="Conversation", height=CHATBOT_HEIGHT, elem_id="chatbot", allow_tags=False,
                                 sanitize_html=True, feedback_options=None, buttons=[copy_btn],
                                 placeholder="The conversation shows here. Examples to try are below the buttons.")
            prompt = gr.Textbox(label="Message", lines=1, max_lines=8, elem_id="prompt",
                                placeholder="Ask something: Enter sends, Shift+Enter starts a new line")
            with gr.Row():
                send_btn = gr.Button("Send", variant="primary", elem_id="send")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
                regen_btn = gr.Button("Regenerate", elem_id="regenerate")
                edit_btn = gr.Button("Edit last", elem_id="edit-last")
                new_btn = gr.Button("New chat", elem_id="new-chat")
            with gr.Row(equal_height=True, visible=False) as versions_row:     # shown once there are two
                prev_btn = gr.Button("◀ Previous version", size="sm", elem_id="version-prev")
                version = gr.Markdown(elem_id="version-label")
                next_btn = gr.Button("Next version ▶", size="sm", elem_id="version-next")
            status = gr.Markdown(elem_id="chat-status")
            card_md, examples = card_examples("chat", card, fills="message box", sends="Enter or Send",
                                              prompts=chat_prompts(card))
        with gr.Column(scale=6):
            panel = gr.HTML(EMPTY_PANEL, label="Live denoising", elem_id="live-panel")
            with gr.Row(equal_height=False):
                scrubber = gr.Slider(1, 2, value=1, step=1, visible=False, label="Replay", elem_id="scrubber",
                                     scale=5, info="Drag to any model forward of the last answer.")
                replay_btn = gr.Button("▶ Replay", elem_id="replay", size="sm", scale=1, min_width=90)
            with gr.Accordion("The world: its shop and office pages", open=True, elem_id="chat-world-box"):
                world_page = gr.HTML(WAITING_HTML, elem_id="chat-world-page")
            system = gr.Textbox(label="System prompt (optional)", lines=1, elem_id="chat-system",
                                info="Text the model reads before the conversation; empty uses the model's own.")
            system_note = gr.Markdown(visible=False, elem_id="system-warning")
            with gr.Accordion("Structured output: JSON schema", open=False, elem_id="chat-schema-box"):
                schema = gr.Textbox("", label="JSON schema (optional)", lines=4, max_lines=18, elem_id="chat-schema",
                                    info=SCHEMA_INFO, placeholder='{"type": "object", "properties": {...}}')
                schema_example = gr.Button("Load an example schema (an order) and its prompt", size="sm",
                                           elem_id="chat-schema-example")
            with gr.Accordion("Generation settings", open=True):
                random_seed = gr.Checkbox(True, label="Random seed (a new one each answer when temperature > 0)",
                                          elem_id="chat-random-seed",
                                          info="Off: every answer uses the Seed below, so Regenerate repeats it.")
                controls = generation_controls("chat", DEFAULTS, ctx=ctx)
                controls["schema"] = schema          # read by the handler with the settings, by name
            export_btn = gr.Button("Export answer (HTML replay, LaTeX, code)", elem_id="export")
            export_files = gr.File(label="Exports", file_count="multiple", elem_id="exports", interactive=False,
                                   visible=False)
            export_preview = gr.HTML(elem_id="export-preview")
    with gr.Row():
        heatmap = gr.Plot(label="When each token was decided", min_width=PLOT_MIN_WIDTH)
        commits = gr.Plot(label="Commits per forward", min_width=PLOT_MIN_WIDTH)
    names = list(controls)
    shared = [conversation_id, world, versions, model, system, random_seed, *controls.values()]
    outputs = [chatbot, panel, history, conversation_id, world, trace, versions, scrubber, heatmap, commits, prompt,
               status, version, versions_row, world_page]
    submit = with_settings(chat.submit, "chat", names)

    # Enter or Send while an answer is generated: the turn's event waits in Gradio's queue behind it
    # (trigger_mode "multiple": the default drops it silently) and reads the conversation as that
    # answer leaves it; the page empties the box at once and the status says the message is queued.
    send_btn.click(submit, [prompt, history, *shared], outputs, api_name="chat", trigger_mode="multiple",
                   js=SEND_JS, **GENERATE)
    prompt.submit(submit, [prompt, history, *shared], outputs, api_visibility="private", trigger_mode="multiple",
                  js=SEND_JS, **GENERATE)
    regen_btn.click(with_settings(chat.regenerate, "chat", names), [history, *shared], outputs, api_name="regenerate",
                    **GENERATE)
    stop_btn.click(stopper(ctx.runs, "chat"), None, None, queue=False, api_visibility="private")
    # every click steps one version, also a second click before the first one's update is back
    # (Gradio's default drops a click while the button's last event is pending)
    # the world shown beside the panel (the page's own, made when it opens), again after any
    # event that puts another World in the tab (a version, Edit last, Sessions' Continue)
    def show_world(current: World | None, request: gr.Request) -> tuple[World, str]:
        return chat.world_view(current, run_key(request, "chat"))

    for button, delta in ((prev_btn, -1), (next_btn, 1)):
        button.click(lambda h, v, d=delta: chat.show_version(h, v, d), [history, versions],
                     [chatbot, history, world, versions, version], api_visibility="private",
                     trigger_mode="multiple", **QUIET).then(show_world, [world], [world, world_page],
                                                            api_visibility="private", **QUIET)
    edit_btn.click(chat.edit_last, [history, world, versions],
                   [prompt, history, chatbot, world, versions, version, versions_row], api_visibility="private").then(
        show_world, [world], [world, world_page], api_visibility="private", **QUIET)
    # New chat and the Chatbot's clear icon: end any run (it is saved), then a new conversation,
    # world and model context.
    def new_chat(request: gr.Request) -> tuple:
        return chat.new_chat(run_key(request, "chat"))

    for trigger in (new_btn.click, chatbot.clear):
        trigger(new_chat, None, outputs, queue=False, api_visibility="private", **QUIET)
    scrubber.input(scrub_panel, [trace, scrubber], [panel], trigger_mode="always_last", api_visibility="private",
                   **QUIET)
    replay_btn.click(play_again, [trace, controls["pace_ms"]], [panel, scrubber], api_visibility="private",
                     **QUIET)
    copied = gr.Textbox(visible=False, elem_id="copied-answer")
    copy_btn.click(answer_text, [history], [copied], api_visibility="private", **QUIET).then(
        None, [copied], None, js=COPY_JS)
    export_btn.click(chat.export, [trace], [export_files, export_preview], api_name="export")
    model.change(lambda name: card_update(ctx, name, chat_prompts), [model], [card_md, examples],
                 api_visibility="private", **QUIET)
    for trigger in (system.change, model.change):     # the card says which system prompts the model knows
        trigger(lambda name, text: system_note_update(ctx, name, text), [model, system], [system_note],
                api_visibility="private", **QUIET)
    # an example fills the box (the examples' label says so) and the cursor goes there: Enter sends it
    examples.click(lambda sample: sample[0], [examples], [prompt], api_visibility="private", **QUIET).then(
        None, None, None, js=focus_js("#prompt textarea"))
    schema_example.click(load_example, [controls["gen_length"], controls["block_size"]],
                         [schema, prompt, controls["gen_length"]], api_visibility="private", **QUIET)
    return {"model": model, "chatbot": chatbot, "history": history, "conversation_id": conversation_id,
            "world": world, "versions": versions, "trace": trace, "system": system, "status": status,
            "version": version, "versions_row": versions_row, "panel": panel, "world_page": world_page,
            "show_world": show_world}
