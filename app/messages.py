"""Sentences for the person: errors and warnings as Gradio toasts.

Messages stay plain text, since API callers read them as text; the page renders toasts as
HTML, so app/toasts.py escapes them on their way to a browser (and the page's
Content-Security-Policy, app/csp.py, stands behind that).
"""

from __future__ import annotations

import gradio as gr


def user_error(message: str) -> gr.Error:
    """A gr.Error to raise: the handler stops and the person reads `message`."""
    return gr.Error(str(message), title="Cannot do that", print_exception=False)


def warn(message: str) -> None:
    """A yellow toast; the handler goes on."""
    gr.Warning(str(message))
