"""The Models tab: every preset and local folder, a rescan, a test load, and the poll that
refreshes every model picker when the watchdog saw models/ change (a new or updated checkpoint
appears without a restart)."""

from __future__ import annotations

from typing import Any

import gradio as gr
from markupsafe import Markup

from engine.backends.base import BackendError
from visualizer.escape import markdown_text

from .messages import user_error
from .state import AppContext


def models_table(rows: list[dict[str, Any]]) -> str:
    """The models that work on this machine first (the pickers' order), then the ones not on it."""
    head = ("name", "kind", "driver", "source", "on this machine", "description")
    out = []
    for row in sorted(rows, key=lambda row: not row["available"]):          # stable: catalog order within each
        cells = (row["name"], row["kind"], row["driver"] or "none", row["source"], "yes" if row["available"] else "no",
                 row.get("description") or "")
        out.append(Markup("<tr>{}</tr>").format(Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table dp-models"><tr>{}</tr>{}</table>').format(header, Markup("").join(out)))


class ModelsHandlers:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def table(self) -> str:
        return models_table(self.ctx.registry.listing())

    def pickers(self) -> tuple[Any, Any, Any, Any]:
        """Choices of the chat, compare (diffusion, baseline) and agent pickers; values unchanged."""
        registry = self.ctx.registry
        every = registry.choices()
        return (gr.Dropdown(choices=every), gr.Dropdown(choices=registry.choices(("diffusion",))),
                gr.Dropdown(choices=registry.choices(("autoregressive",))), gr.Dropdown(choices=every))

    def rescan(self) -> tuple:
        self.ctx.registry.rescan()
        rows = self.ctx.registry.listing()
        return (self.table(), *self.pickers(), self.ctx.registry.version,
                f"Found {len(rows)} models ({sum(r['available'] for r in rows)} on this machine).")

    def poll(self, seen_version: int | None) -> tuple:
        """Timer tick: refresh the table and pickers only when models/ changed since `seen_version`."""
        version = self.ctx.registry.version
        if seen_version == version:
            return (gr.skip(),) * 7
        return (self.table(), *self.pickers(), version, "models/ changed: the lists are up to date.")

    def try_load(self, name: str) -> str:
        """Load a model now (a preset, a folder name or a path) and say what it is."""
        try:
            backend = self.ctx.registry.get(name)
        except BackendError as exc:
            raise user_error(str(exc)) from None
        mask = f", mask id {backend.mask_id}" if backend.kind == "diffusion" else ""
        return (f"Loaded **{markdown_text(name)}**: {backend.kind}{mask}, context {backend.max_length} tokens, "
                f"on {backend.device}.")


# -- layout -----------------------------------------------------------------------------------
POLL_S = 3.0                # how often the page asks whether models/ changed


def build(ctx: AppContext, pickers: list[gr.Dropdown]) -> None:
    """The Models tab, inside the caller's gr.Tab; keeps the other tabs' `pickers` (chat, compare
    diffusion, compare baseline, agent) up to date."""
    models = ModelsHandlers(ctx)
    gr.Markdown("Presets and every folder under `models/`. The folder is watched: a new or updated checkpoint (for "
                "example one a training run writes) shows up here and in every model picker within seconds, and "
                "the next run loads the new weights.")
    with gr.Row():
        load_name = gr.Textbox(label="Load a model now (name or path)", elem_id="load-name",
                               info="A preset, a folder under models/, a path, or openai:URL#MODEL.")
        load_btn = gr.Button("Load")
        rescan_btn = gr.Button("Rescan")
    status = gr.Markdown()
    table = gr.HTML(models.table(), elem_id="models-table")
    version = gr.State(ctx.registry.version)
    load_btn.click(models.try_load, [load_name], [status], api_name="models_load")
    rescan_btn.click(models.rescan, None, [table, *pickers, version, status], api_name="models_rescan")
    gr.Timer(POLL_S).tick(models.poll, [version], [table, *pickers, version, status], api_visibility="private",
                          show_progress="hidden")
