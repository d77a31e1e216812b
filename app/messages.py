"""Sentences for the person: errors and warnings as Gradio toasts.

Messages stay plain text, since API callers read them as text; the page renders toasts as
HTML, so app/toasts.py escapes them on their way to a browser (and the page's
Content-Security-Policy, app/csp.py, stands behind that).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.backends.base import BackendError
from engine.trace import ConfigError
from sessions import StoreError
from visualizer.escape import markdown_text


def user_error(message: str) -> gr.Error:
    """A gr.Error to raise: the handler stops and the person reads `message` (a Refusal that
    puts nothing back)."""
    return Refusal(message)


class Refusal(gr.Error):
    """A refusal that also puts things back in the page: `shows` maps output names (app/outputs.py)
    to what they show with the sentence (the typed text back in the box, the chat as it was, the
    offer to keep the end that fits). The page's refusal handler (app/widgets.py refusals_beside)
    sends them in the same update as the sentence, never in an update before it: when streamed
    updates reach the page together, Gradio draws only the last (seen in e2e runs under load), so
    what an earlier update showed was lost in 3 of 7 fresh-clone runs (the keep-the-end offer)."""

    def __init__(self, message: str, shows: dict[str, Any] | None = None) -> None:
        super().__init__(str(message), title="Cannot do that", print_exception=False)
        self.shows = dict(shows or {})


def refusal(message: str, **shows: Any) -> Refusal:
    return Refusal(message, shows)


def also_showing(error: gr.Error, **shows: Any) -> Refusal:
    """`error` as a Refusal that also shows `shows`; what the error already showed wins (it was
    set nearer to where the refusal happened)."""
    return Refusal(str(error.message), {**shows, **getattr(error, "shows", {})})


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
