"""The Gradio page: the tabs side by side, each built by its own module (`build(ctx)`), and the
little wiring between them (the Models tab refreshes every model picker; the page load lists
the sessions). Handlers live in the tab modules as plain (generator) functions."""

from __future__ import annotations

from typing import Any

import gradio as gr

from . import agent_tab, chat_tab, compare, models_tab, sessions_tab
from .css import CSS
from .live import markdown_safe
from .page_script import page_js
from .resume import RESUME_OUTPUTS, resumed
from .state import AppContext

INTRO = ("# Diffusion Playground\nWatch a diffusion language model decide its answer, round by round: "
         "masked cells turn into tokens, several per forward.")


def continue_in_chat(conversation: dict[str, Any] | None) -> tuple:
    """Sessions' "Continue in Chat": the stored chat in the Chat tab (RESUME_OUTPUTS), then that tab shown.
    The next message is stored in the same conversation."""
    return (*resumed(conversation), gr.Tabs(selected="chat"))


def launch_kwargs() -> dict[str, Any]:
    """What Gradio 6 takes at launch() rather than Blocks(): the CSS, the page script (labels and
    live regions, app/page_script.py); no analytics, no share link."""
    return {"css": CSS, "js": page_js(), "share": False, "ssr_mode": False}


def build_app(ctx: AppContext) -> gr.Blocks:
    with gr.Blocks(title="Diffusion Playground", analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        gr.Markdown("\n\n".join(f"⚠️ {markdown_safe(n)}" for n in ctx.notices), visible=bool(ctx.notices),
                    elem_id="notices", elem_classes=["dp-notice"])
        with gr.Tabs() as tabs:
            with gr.Tab("Chat", id="chat"):
                chat_parts = chat_tab.build(ctx)
            with gr.Tab("Compare", id="compare"):
                compare_parts = compare.build(ctx)
            with gr.Tab("Agent", id="agent"):
                agent_parts = agent_tab.build(ctx)
            with gr.Tab("Sessions", id="sessions") as sessions:
                sessions_parts = sessions_tab.build(ctx)
            with gr.Tab("Models", id="models"):
                models_tab.build(ctx, [chat_parts["model"], compare_parts["diffusion"], compare_parts["baseline"],
                                       agent_parts["model"]])
        chat_resume = RESUME_OUTPUTS.components(chat_parts)
        chat_world = ([chat_parts["world"]], [chat_parts["world"], chat_parts["world_page"]])
        sessions_parts["continue"].click(continue_in_chat, [sessions_parts["opened"]], [*chat_resume, tabs],
                                         api_visibility="private", show_progress="hidden").then(
            chat_parts["show_world"], *chat_world, api_visibility="private", show_progress="hidden")
        refresh, inputs, outputs = sessions_parts["refresh"]
        sessions.select(refresh, inputs, outputs, api_visibility="private", show_progress="hidden")
        demo.load(refresh, inputs, outputs, api_visibility="private")
        demo.load(chat_parts["show_world"], *chat_world, api_visibility="private", show_progress="hidden")
        demo.load(agent_parts["task_page"], [agent_parts["task"]], [agent_parts["world_page"]],
                  api_visibility="private", show_progress="hidden")
    return demo
