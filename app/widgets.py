"""Components more than one tab builds: the model picker, the generation controls (one named
mapping, name -> component), and the adapter that hands a handler those controls' values as
one mapping plus the Stop key of the browser session."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any

import gradio as gr

from .cards import Card, card_for, card_markdown
from .runs import run_key

GENERATE = {"concurrency_id": "generate", "concurrency_limit": 1, "show_progress": "hidden"}
QUIET = {"show_progress": "hidden"}


# A picker narrower than this wraps onto its own row: at a phone's width two side by side cut
# their text ("sprout-bd (diffusio").
PICKER_MIN_WIDTH = 300
# Two plots side by side below this width are unreadable (ticks pile up): each takes its own row.
PLOT_MIN_WIDTH = 380


def model_picker(choices: list[tuple[str, str]], value: str, label: str, elem_id: str) -> gr.Dropdown:
    return gr.Dropdown(choices=choices, value=value, label=label, allow_custom_value=True, elem_id=elem_id,
                       info="A preset, a folder under models/, or a path.", min_width=PICKER_MIN_WIDTH)


def with_settings(fn: Callable[..., Any], tab: str, names: list[str]) -> Callable[..., Any]:
    """A Gradio handler for `fn(*inputs, settings=..., key=...)`: the event's inputs are the fixed
    ones, then the controls' values in `names` order; `settings` maps name -> value and `key` is
    what this tab's Stop button reaches. The result is a generator function when fn is one
    (Gradio streams only those)."""
    count = len(names)

    def split(request: gr.Request, values: tuple) -> tuple[tuple, dict[str, Any], tuple]:
        fixed, tail = values[: len(values) - count], values[len(values) - count:]
        return fixed, dict(zip(names, tail)), run_key(request, tab)

    if inspect.isgeneratorfunction(fn):
        def streaming(request: gr.Request, *values: Any):
            fixed, settings, key = split(request, values)
            yield from fn(*fixed, settings=settings, key=key)
        handler = streaming
    else:
        def plain(request: gr.Request, *values: Any):
            fixed, settings, key = split(request, values)
            return fn(*fixed, settings=settings, key=key)
        handler = plain
    handler.__name__ = getattr(fn, "__name__", "handler")
    return handler


def refusals_beside(handler: Callable[..., Any], refused: Callable[[gr.Error], Any]) -> Callable[..., Any]:
    """The browser's form of a streaming `with_settings` handler: a gr.Error (a sentence a person
    can act on) becomes one more update, `refused(error)`, which puts it in the tab's status
    line under the box, instead of Gradio's modal and the red "Error" badge it lays over every
    output of the event (the conversation included). A Refusal (app/messages.py) also carries
    what goes back in the page, the typed text in the box first, for that same update. API
    clients keep the handler itself, whose endpoint raises the sentence."""
    def browser(request: gr.Request, *values: Any):
        try:
            yield from handler(request, *values)
        except gr.Error as error:
            yield refused(error)
    browser.__name__ = getattr(handler, "__name__", "handler")
    return browser


def said_in_status(handler: Callable[..., tuple], count: int, status_at: int) -> Callable[..., tuple]:
    """`handler` as the page calls it: a refusal (gr.Error, a sentence a person can act on) is
    written in the tab's status line under the box, everything else left as it is; never Gradio's
    modal, which would lay an error badge over the chat. It keeps the handler's signature
    (functools.wraps), so Gradio still hands it a gr.Request where it asks for one."""
    @functools.wraps(handler)
    def page(*values: Any) -> tuple:
        try:
            return handler(*values)
        except gr.Error as error:
            return tuple(str(error.message) if i == status_at else gr.skip() for i in range(count))
    return page


def stopper(board: Any, tab: str) -> Callable[..., None]:
    """The Stop button's handler: ask this session's run in `tab` to stop; nothing when idle."""

    def stop(request: gr.Request) -> None:
        board.stop(run_key(request, tab))

    return stop


def examples_label(fills: str, sends: str) -> str:
    """What a click on an example does, said where the examples are: it fills a box, it sends nothing."""
    return f"Examples this model handles: a click puts one in the {fills} ({sends} runs it)"


def card_examples(prefix: str, card: Card, fills: str = "prompt box", sends: str = "the button",
                  prompts: list[str] | None = None) -> tuple[gr.Markdown, gr.Dataset]:
    """The model's example prompts (`prompts`, else the card's; a click fills the `fills` box and
    the label says so), then its capability card."""
    prompts = card.prompts if prompts is None else prompts
    examples = gr.Dataset(components=[gr.Textbox(visible=False)], samples=[[p] for p in prompts],
                          label=examples_label(fills, sends), elem_id=f"{prefix}-examples", samples_per_page=6)
    markdown = gr.Markdown(card_markdown(card), elem_id=f"{prefix}-card", elem_classes=["dp-card"])
    return markdown, examples


def card_update(ctx: Any, name: str, prompts_of: Callable[[Card], list[str]] | None = None) -> tuple[str, Any]:
    """The card and examples of the model just picked (`prompts_of(card)`, else the card's prompts)."""
    card = card_for(name, ctx.registry.listing())
    prompts = card.prompts if prompts_of is None else prompts_of(card)
    return card_markdown(card), gr.update(samples=[[p] for p in prompts])


def focus_js(selector: str) -> str:
    """A page-side event step that puts the cursor in the element `selector` (an example's box)."""
    return f"() => {{ document.querySelector({json.dumps(selector)})?.focus(); }}"


def file_list(paths: list[Any]) -> Any:
    """A File output showing `paths` (hidden when there are none)."""
    return gr.update(value=[str(p) for p in paths] or None, visible=bool(paths))
