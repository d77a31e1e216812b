"""Sentences for the person: errors and warnings as Gradio toasts.

Messages stay plain text, since API callers read them as text; the page renders toasts as
HTML, so app/toasts.py escapes them on their way to a browser (and the page's
Content-Security-Policy, app/csp.py, stands behind that).
"""

from __future__ import annotations

import gradio as gr

from engine.backends.base import BackendError
from engine.trace import ConfigError
from sessions import StoreError
from visualizer.escape import markdown_text


def user_error(message: str) -> gr.Error:
    """A gr.Error to raise: the handler stops and the person reads `message`."""
    return gr.Error(str(message), title="Cannot do that", print_exception=False)


class OverContext(gr.Error):
    """A message over the model's context: its refusal in the page also offers to keep the end
    that fits (app/keep_end.py), in the same update as the sentence."""


def over_context(message: str) -> OverContext:
    return OverContext(str(message), title="Cannot do that", print_exception=False)


def refusal_line(sentence: str) -> str:
    """A refusal as the status line under the message box shows it (Markdown, the sentence as text)."""
    return f"⚠️ **Cannot do that.** {markdown_text(sentence)}"


def warn(message: str) -> None:
    """A yellow toast; the handler goes on."""
    gr.Warning(str(message))


def failure(exc: Exception) -> gr.Error:
    """What a person reads when a run fails: our sentence, or the crash in one line."""
    if isinstance(exc, (ConfigError, BackendError, StoreError)):
        return user_error(str(exc))
    return user_error(f"The model failed while generating ({type(exc).__name__}: {exc}). Nothing was saved for "
                      "this answer; try other settings or another model.")
