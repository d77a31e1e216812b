"""The Chat tab's layout: its components, the page-side scripts of the message box, and the events
that wire them to the handlers of app/chat.py."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from world.state import World

from .cards import card_for, system_prompt_warning
from .chat import CHAT_OUTPUTS, ChatHandlers, updates
from .chat_turn import EMPTY_PANEL
from .controls import generation_controls
from .conversation_world import (
    DEFAULT_WORLD,
    world_examples,
    world_from_spec,
)
from .messages import refusal_line, user_error
from .noise_controls import follow_noise_models
from .page_venue import WHERE_CHOICES, WORLD
from .recent_chats import RECENT, RecentChats
from .resume import RESUME_OUTPUTS
from .runs import run_key
from .settings import DEFAULTS
from .state import AppContext
from .structured import INFO as SCHEMA_INFO
from .structured import load_example
from .trace_panel import play_again, scrub_panel
from .widgets import (
    GENERATE,
    QUIET,
    card_examples,
    card_update,
    focus_js,
    model_picker,
    refusals_beside,
    said_in_status,
    stopper,
    with_settings,
)
from .world_page import WAITING_HTML

# The window's height less what sits above and below the Chatbot (title, tabs, picker, message box,
# status, buttons): at 960 px the whole 400 px, at 800 px 240 px, so the box and Send stay in view.
CHATBOT_HEIGHT = "clamp(220px, calc(100vh - 560px), 400px)"
CHAT_PLOT_MIN_WIDTH = 300          # two plots in a row of the right-hand column (about 700 px at 1440)
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


WHERE_INFO = ("Web pages: each tool call runs in the shop or office page below, in the app's headless browser "
              "(WebMCP); the page follows it, and the conversation goes on from what the pages did.")


# The write is awaited, and its outcome is marked on the Chatbot (`data-copied`: the characters
# copied, or "refused"): the clipboard holds the answer only once the write resolved, which is
# after the server's answer_text round trip, so whoever reads it (a test, a script) waits for the
# mark, never for a fixed time. A refused write says so in the status line instead of failing
# silently. textContent, never HTML.
COPY_JS = r"""async (text) => {
  if (!text) return;
  const chat = document.querySelector("#chatbot");
  try {
    await navigator.clipboard.writeText(text);
    chat?.setAttribute("data-copied", String(text.length));
  } catch (error) {
    chat?.setAttribute("data-copied", "refused");
    const status = document.querySelector("#chat-status .prose") || document.querySelector("#chat-status");
    if (status) status.textContent = "The browser did not let the page copy (" + (error && error.name || "refused")
      + "): select the answer and copy it by hand.";
  }
}"""


def answer_text(history: list[dict[str, Any]] | None) -> str:
    """The last answer as the person reads it (plain text, ids named), for the Copy answer button;
    a tool step's card, a note and the Markdown around them are not part of it."""
    for entry in reversed(history or []):
        if entry["role"] == "assistant" and not entry.get("title") and not entry.get("note") and entry.get("shown"):
            gr.Info(f"Copied the last answer ({len(entry['shown'])} characters).")
            return entry["shown"]
    raise user_error("There is no answer to copy yet: send a message first.")


def edit_of(data: gr.EditData) -> tuple[Any, Any]:
    """(the edited message's index in the Chatbot, its new text)."""
    index = data.index[0] if isinstance(data.index, (tuple, list)) else data.index
    value = data.value if isinstance(data.value, str) else (data.value or {}).get("text", "")
    return index, value


def system_note_update(ctx: AppContext, model: str, system: str) -> Any:
    """The warning under the system prompt box: shown when the model's card says it does not know
    this system prompt (app/cards.py), hidden otherwise."""
    warning = system_prompt_warning(card_for(model, ctx.registry.listing()), system)   # escaped text
    return gr.update(value=f'<div class="dp-notice" role="status">{warning}</div>' if warning else "",
                     visible=bool(warning))


def chat_prompts(card: Any) -> list[str]:
    """The card's examples about the world a new chat starts in, the one the page beside the panel shows."""
    return world_examples(card.examples, world_from_spec(DEFAULT_WORLD))


# -- layout -----------------------------------------------------------------------------------
def build(ctx: AppContext) -> dict[str, Any]:
    """The Chat tab's components and events, inside the caller's gr.Tab; returns its components by
    name (the model picker and show_world among them, for the other tabs to wire to)."""
    chat = ChatHandlers(ctx)
    c: dict[str, Any] = {"history": gr.State([]), "conversation_id": gr.State(None), "world": gr.State(None),
                         "trace": gr.State(None), "tree": gr.State(None)}   # tree: the versions (app/chat_tree.py)
    with gr.Row():
        with gr.Column(scale=5):
            c.update(_conversation_column(ctx))
        with gr.Column(scale=6):
            c.update(_panel_column())
    c["controls"]["schema"] = c["schema"]         # read by the handler with the settings, by name
    _wire_turns(ctx, chat, c)
    c["show_world"] = _wire_versions_and_panel(ctx, chat, c)
    _wire_recent_chats(ctx, c)
    _wire_answer_tools(ctx, chat, c)
    return c


def _recent_chats_box() -> dict[str, Any]:
    with gr.Accordion("Recent chats", open=False, elem_id="chat-recent-box") as recent_box:
        recent_pick = gr.Dropdown([], value=None, label="Recent chats", elem_id="chat-recent",
                                  info=f"The last {RECENT} chats stored, newest first; Sessions has them all.")
        recent_title = gr.Textbox(label="New title", elem_id="chat-recent-title", max_lines=1,
                                  placeholder="a title for the picked chat")
        with gr.Row():
            recent_open = gr.Button("Open", size="sm", variant="primary", elem_id="chat-recent-open")
            recent_rename = gr.Button("Rename", size="sm", elem_id="chat-recent-rename")
            recent_delete = gr.Button("Delete", size="sm", variant="stop", elem_id="chat-recent-delete")
    return {"recent_box": recent_box, "recent_pick": recent_pick, "recent_title": recent_title,
            "recent_open": recent_open, "recent_rename": recent_rename, "recent_delete": recent_delete}


def _conversation_column(ctx: AppContext) -> dict[str, Any]:
    """The model and the recent chats, the conversation, the box, the status, the buttons, the
    examples and the settings."""
    c: dict[str, Any] = {}
    with gr.Row(equal_height=False):           # the chats beside the picker: one row, not two
        with gr.Column(scale=3):
            c["model"] = model_picker(ctx.registry.choices(), ctx.default_model, "Model", "chat-model")
        with gr.Column(scale=2, min_width=200):
            c.update(_recent_chats_box())
    # the conversation and the message box first, so both are on the first screen (1440x960
    # and 400x800); the model's card and examples follow the buttons
    # Gradio's copy button on each message copies that message's Markdown source; this one
    # copies the last answer as the person reads it. The pencil on a sent message edits it
    # (a new version of its exchange: chat.edit).
    c["copy_btn"] = gr.Button("Copy answer", size="sm", elem_id="copy-answer", render=False)
    c["chatbot"] = gr.Chatbot(label="Conversation", height=CHATBOT_HEIGHT, elem_id="chatbot", allow_tags=False,
                              sanitize_html=True, feedback_options=None, buttons=["copy", c["copy_btn"]],
                              editable="user",
                              placeholder="The conversation shows here. Examples to try are below the buttons.")
    c["prompt"] = gr.Textbox(label="Message", lines=1, max_lines=8, elem_id="prompt",
                             placeholder="Ask something: Enter sends, Shift+Enter starts a new line")
    # right under the box, so a refusal (app/widgets.py refusals_beside) and the answer's
    # numbers are read where the person is looking
    c["status"] = gr.Markdown(elem_id="chat-status")
    # offered after a message over the context was refused (chat.keep_end)
    c["keep_end"] = gr.Button("Keep the end that fits", size="sm", visible=False, elem_id="keep-end")
    with gr.Row():                           # one row: min_width lets the four share the column
        c["send_btn"] = gr.Button("Send", variant="primary", elem_id="send", min_width=90)
        c["stop_btn"] = gr.Button("Stop", variant="stop", elem_id="stop", min_width=90)
        c["regen_btn"] = gr.Button("Regenerate", elem_id="regenerate", min_width=120)
        c["new_btn"] = gr.Button("New chat", elem_id="new-chat", min_width=100)
    # an answer's arrows write "depth:delta" here and click the button (app/page_script.py); unseen
    c["version_pick"] = gr.Textbox(visible="hidden", elem_id="version-pick", label="Version pick")
    c["version_go"] = gr.Button("Show the picked version", visible="hidden", elem_id="version-go")
    card = card_for(ctx.default_model, ctx.registry.listing())
    c["card_md"], c["examples"] = card_examples("chat", card, fills="message box", sends="Enter or Send",
                                                prompts=chat_prompts(card))
    # what shapes the next answer, under the conversation: the first screen keeps the chat,
    # the panel and the world (issue: the page was 3,900 px tall with the settings open)
    seeding = []

    def random_seed_box() -> None:            # beside the Seed, under More settings
        seeding.append(gr.Checkbox(True, label="Random seed (a new one each answer when temperature > 0)",
                                   elem_id="chat-random-seed",
                                   info="Off: every answer uses the Seed above, so Regenerate repeats it."))

    with gr.Accordion("Generation settings", open=True, elem_id="chat-settings"):
        c["controls"] = generation_controls("chat", DEFAULTS, ctx=ctx, more=random_seed_box)
    c["random_seed"] = seeding[0]
    return c


def _panel_column() -> dict[str, Any]:
    """The live panel, its replay and exports, the world's pages, the system prompt, the schema
    and the plots."""
    c: dict[str, Any] = {}
    c["panel"] = gr.HTML(EMPTY_PANEL, label="Live denoising", elem_id="live-panel")
    with gr.Row(equal_height=False):
        c["scrubber"] = gr.Slider(1, 2, value=1, step=1, visible=False, label="Replay", elem_id="scrubber",
                                  scale=5, info="Drag to any model forward of the last answer.")
        with gr.Column(scale=1, min_width=120):
            c["replay_btn"] = gr.Button("▶ Replay", elem_id="replay", size="sm")
            c["export_btn"] = gr.Button("Export answer", elem_id="export", size="sm")
    c["export_files"] = gr.File(label="Exports (HTML replay, LaTeX, code)", file_count="multiple", elem_id="exports",
                                interactive=False, visible=False)
    # an HTML answer's page, sandboxed: shown when the answer is one (chat.page_preview) and by Export
    c["preview"] = gr.HTML(elem_id="export-preview", visible=False)
    with gr.Accordion("The world: its shop and office pages", open=True, elem_id="chat-world-box"):
        c["where"] = gr.Radio(WHERE_CHOICES, value=WORLD, label="Tools run in", elem_id="chat-where", info=WHERE_INFO)
        c["world_page"] = gr.HTML(WAITING_HTML, elem_id="chat-world-page")
    c["system"] = gr.Textbox(label="System prompt (optional)", lines=1, elem_id="chat-system",
                             info="Text the model reads before the conversation; empty uses the model's own.")
    c["system_note"] = gr.Markdown(visible=False, elem_id="system-warning")
    with gr.Accordion("Structured output: JSON schema", open=False, elem_id="chat-schema-box"):
        c["schema"] = gr.Textbox("", label="JSON schema (optional)", lines=4, max_lines=18, elem_id="chat-schema",
                                 info=SCHEMA_INFO, placeholder='{"type": "object", "properties": {...}}')
        c["schema_example"] = gr.Button("Load an example schema (an order) and its prompt", size="sm",
                                        elem_id="chat-schema-example")
    with gr.Row():                           # side by side: each plot is half the column
        c["heatmap"] = gr.Plot(label="When each token was decided", min_width=CHAT_PLOT_MIN_WIDTH)
        c["commits"] = gr.Plot(label="Commits per forward", min_width=CHAT_PLOT_MIN_WIDTH)
    return c


def _wire_turns(ctx: AppContext, chat: ChatHandlers, c: dict[str, Any]) -> None:
    """Send, Enter, Regenerate, an edited message, their API endpoints, Stop and Keep the end.
    The components handlers update are CHAT_OUTPUTS' names in `c`: one mapping, so a handler's
    tuple and the page's components cannot disagree on an order."""
    controls = c["controls"]
    names = list(controls)
    shared = [c["conversation_id"], c["world"], c["tree"], c["model"], c["system"], c["random_seed"], c["where"],
              *controls.values()]
    outputs = CHAT_OUTPUTS.components(c)
    prompt, history = c["prompt"], c["history"]
    submit = with_settings(chat.submit, "chat", names)
    regenerate = with_settings(chat.regenerate, "chat", names)
    edit = with_settings(chat.edit, "chat", names)
    keep_end = with_settings(chat.keep_end, "chat", names)

    def refused(error: gr.Error) -> tuple:
        # one update: the sentence and what the refusal puts back (app/messages.py Refusal)
        return updates(status=refusal_line(str(error.message)), **getattr(error, "shows", {}))

    # Enter or Send while an answer is generated: the turn's event waits in Gradio's queue behind it
    # (trigger_mode "multiple": the default drops it silently) and reads the conversation as that
    # answer leaves it; the page empties the box at once and the status says the message is queued.
    # picking the pages starts the app's browser meanwhile: the first turn need not wait for it
    c["where"].change(ctx.page_browser.warm, [c["where"]], None, queue=False, api_visibility="private", **QUIET)
    # in the page a refusal is a sentence in the status line and the conversation stays in sight
    # (refusals_beside); API clients reach the same handlers through hidden buttons, and their
    # endpoints raise the sentence as an error
    for trigger in (c["send_btn"].click, prompt.submit):
        trigger(refusals_beside(submit, refused), [prompt, history, *shared], outputs, api_visibility="private",
                trigger_mode="multiple", js=SEND_JS, **GENERATE)
    c["regen_btn"].click(refusals_beside(regenerate, refused), [history, *shared], outputs,
                         api_visibility="private", **GENERATE)
    api_chat, api_regenerate = gr.Button(visible=False), gr.Button(visible=False)
    api_chat.click(submit, [prompt, history, *shared], outputs, api_name="chat", trigger_mode="multiple", **GENERATE)
    api_regenerate.click(regenerate, [history, *shared], outputs, api_name="regenerate", **GENERATE)
    # an edited message: Gradio's EditData read into a State first (with_settings passes inputs
    # only), then the turn, a new version of the message's exchange
    edited = gr.State(None)
    c["chatbot"].edit(edit_of, None, [edited], api_visibility="private", queue=False, **QUIET).then(
        refusals_beside(edit, refused), [edited, history, *shared], outputs, api_visibility="private", **GENERATE)
    c["stop_btn"].click(stopper(ctx.runs, "chat"), None, None, queue=False, api_visibility="private")
    c["keep_end"].click(said_in_status(keep_end, 3, 1),
                        [prompt, c["tree"], history, c["model"], c["system"], *controls.values()],
                        [prompt, c["status"], c["keep_end"]], api_visibility="private", **QUIET)


def _wire_versions_and_panel(ctx: AppContext, chat: ChatHandlers, c: dict[str, Any]):
    """An answer's arrows, New chat, the scrubber and Replay; returns show_world, which Sessions'
    Continue wires too."""
    world, world_page = c["world"], c["world_page"]

    # the world shown beside the panel (the page's own, made when it opens), again after any
    # event that puts another World in the tab (a version, Sessions' Continue)
    def show_world(current: World | None, request: gr.Request) -> tuple[World, str]:
        return chat.world_view(current, run_key(request, "chat"))

    # every pick steps one version, also a second click before the first one's update is back
    # (Gradio's default drops a click while the button's last event is pending)
    c["version_go"].click(chat.show_version, [c["version_pick"], c["tree"]],
                          [c["chatbot"], c["history"], world, c["tree"], c["trace"], c["panel"], c["scrubber"],
                           c["preview"]], api_visibility="private", trigger_mode="multiple", **QUIET).then(
        show_world, [world], [world, world_page], api_visibility="private", **QUIET)

    # New chat and the Chatbot's clear icon: end any run (it is saved), then a new conversation,
    # world and model context.
    def new_chat(request: gr.Request) -> tuple:
        return chat.new_chat(run_key(request, "chat"))

    for trigger in (c["new_btn"].click, c["chatbot"].clear):
        trigger(new_chat, None, CHAT_OUTPUTS.components(c), queue=False, api_visibility="private", **QUIET)
    c["scrubber"].input(scrub_panel, [c["trace"], c["scrubber"]], [c["panel"]], trigger_mode="always_last",
                        api_visibility="private", **QUIET)
    c["replay_btn"].click(play_again, [c["trace"], c["controls"]["pace_ms"]], [c["panel"], c["scrubber"]],
                          api_visibility="private", **QUIET)
    return show_world


def _wire_recent_chats(ctx: AppContext, c: dict[str, Any]) -> None:
    """Recent chats: read again when the list is opened and when the tab's chat becomes another
    stored one (a first answer saved, New chat, one opened); not on a click of the picker, whose
    options would then move under the pointer."""
    recent, pick = RecentChats(ctx), c["recent_pick"]
    for trigger in (c["recent_box"].expand, c["conversation_id"].change):
        trigger(recent.listing, [pick], [pick], api_visibility="private", queue=False, **QUIET)
    resumed_in = RESUME_OUTPUTS.components(c)

    def open_recent(choice: str | None, request: gr.Request) -> tuple:
        return recent.open(choice, run_key(request, "chat"))

    c["recent_open"].click(said_in_status(open_recent, len(resumed_in), resumed_in.index(c["status"])), [pick],
                           resumed_in, api_visibility="private", **QUIET).then(
        c["show_world"], [c["world"]], [c["world"], c["world_page"]], api_visibility="private", **QUIET)
    c["recent_rename"].click(said_in_status(recent.rename, 3, 2), [pick, c["recent_title"]],
                             [pick, c["recent_title"], c["status"]], api_visibility="private", **QUIET)
    c["recent_delete"].click(said_in_status(recent.delete, 3, 1), [pick, c["conversation_id"]],
                             [pick, c["status"], c["conversation_id"]], api_visibility="private", **QUIET)


def _wire_answer_tools(ctx: AppContext, chat: ChatHandlers, c: dict[str, Any]) -> None:
    """Copy answer, Export, the card and the system prompt's note that follow the model, the
    examples and the example schema."""
    copied = gr.Textbox(visible=False, elem_id="copied-answer")
    c["copy_btn"].click(answer_text, [c["history"]], [copied], api_visibility="private", **QUIET).then(
        None, [copied], None, js=COPY_JS)

    def export(trace_view: Any) -> tuple[Any, Any]:
        files, preview = chat.export(trace_view)
        return files, gr.HTML(value=preview, visible=bool(preview))

    c["export_btn"].click(export, [c["trace"]], [c["export_files"], c["preview"]], api_name="export")
    model, system, controls = c["model"], c["system"], c["controls"]
    model.change(lambda name: card_update(ctx, name, chat_prompts), [model], [c["card_md"], c["examples"]],
                 api_visibility="private", **QUIET)
    follow_noise_models(ctx, model, controls)          # DiffusionGemma: its own canvas and schedule
    for trigger in (system.change, model.change):     # the card says which system prompts the model knows
        trigger(lambda name, text: system_note_update(ctx, name, text), [model, system], [c["system_note"]],
                api_visibility="private", **QUIET)
    # an example fills the box (the examples' label says so) and the cursor goes there: Enter sends it
    c["examples"].click(lambda sample: sample[0], [c["examples"]], [c["prompt"]], api_visibility="private",
                        **QUIET).then(None, None, None, js=focus_js("#prompt textarea"))
    c["schema_example"].click(load_example, [controls["gen_length"], controls["block_size"]],
                              [c["schema"], c["prompt"], controls["gen_length"]], api_visibility="private", **QUIET)
