"""Sentences for the person: errors and warnings as Gradio toasts, escaped.

Gradio renders the message of `gr.Error` / `gr.Warning` as HTML, and messages can quote model
names, paths or prompts, so every message is escaped first.
"""

from __future__ import annotations

import gradio as gr
from markupsafe import escape


def user_error(message: str) -> gr.Error:
    """A gr.Error to raise: the handler stops and the person reads `message`."""
    return gr.Error(str(escape(message)), title="Cannot do that", print_exception=False)


def warn(message: str) -> None:
    """A yellow toast; the handler goes on."""
    gr.Warning(str(escape(message)))
