"""Chat's handlers yield tuples in CHAT_OUTPUTS' order (app/chat.py) and Sessions' Continue and
Recent chats fill RESUME_OUTPUTS (app/resume.py); the tab wires them to its components through one
mapping by name (chat_tab.build). These tests fail when an event's outputs and those names disagree."""

from __future__ import annotations

import gradio as gr

from app import chat_tab
from app.chat import CHAT_OUTPUTS
from app.resume import RESUME_OUTPUTS
from tests.e2e.app_fakes import fake_context

KINDS = {"chatbot": gr.Chatbot, "panel": gr.HTML, "history": gr.State, "conversation_id": gr.State,
         "world": gr.State, "trace": gr.State, "tree": gr.State, "scrubber": gr.Slider, "heatmap": gr.Plot,
         "commits": gr.Plot, "prompt": gr.Textbox, "status": gr.Markdown, "world_page": gr.HTML,
         "keep_end": gr.Button, "preview": gr.HTML, "model": gr.Dropdown, "system": gr.Textbox}


def test_every_chat_event_updates_its_components_in_the_order_of_the_names(tmp_path):
    ctx = fake_context(tmp_path)
    try:
        with gr.Blocks() as demo:
            parts = chat_tab.build(ctx)
        for name in (*CHAT_OUTPUTS, *RESUME_OUTPUTS):
            assert isinstance(parts[name], KINDS[name]), name
        expected = [parts[name]._id for name in CHAT_OUTPUTS]
        turns = [fn for fn in demo.fns.values() if len(fn.outputs) == len(CHAT_OUTPUTS)
                 and any(c._id == parts["chatbot"]._id for c in fn.outputs)]
        assert len(turns) >= 6            # Send, Enter, Regenerate, an edit, the API's chat and regenerate, New chat
        for fn in turns:
            assert [c._id for c in fn.outputs] == expected, fn.name
        resumed = [parts[name]._id for name in RESUME_OUTPUTS]
        opened = [fn for fn in demo.fns.values() if [c._id for c in fn.outputs] == resumed]
        assert opened, "Recent chats' Open fills RESUME_OUTPUTS"
    finally:
        ctx.close()
