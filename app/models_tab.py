"""The Models tab: every preset and local folder, a rescan, a test load, and the poll that
refreshes every model picker when the watchdog saw models/ change (a new or updated checkpoint
appears without a restart)."""

from __future__ import annotations

from typing import Any

import gradio as gr
from markupsafe import Markup

from engine import catalog
from engine.backends.base import BackendError
from engine.model_access import code_files
from visualizer.escape import markdown_text

from .messages import user_error
from .state import AppContext


def models_table(rows: list[dict[str, Any]], may_run_code: Any = None) -> str:
    """The models that work on this machine first (the pickers' order), then the ones not on it.
    `may_run_code(name)`: whether a model whose loading runs its own Python has been allowed to."""
    head = ("name", "kind", "driver", "source", "on this machine", "its own code", "description")
    out = []
    for row in sorted(rows, key=lambda row: not row["available"]):          # stable: catalog order within each
        code = "none" if not row.get("own_code") else (
            "allowed" if may_run_code is None or may_run_code(row["name"]) else "runs only once allowed (below)")
        cells = (row["name"], row["kind"], row["driver"] or "none", row["source"], "yes" if row["available"] else "no",
                 code, row.get("description") or "")
        out.append(Markup("<tr>{}</tr>").format(Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table dp-models"><tr>{}</tr>{}</table>').format(header, Markup("").join(out)))


class ModelsHandlers:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def table(self) -> str:
        access = self.ctx.registry.access
        return models_table(self.ctx.registry.listing(), access.may_run_code if access is not None else None)

    # -- a model's own code ----------------------------------------------------------------------
    def code_choices(self) -> list[str]:
        """Models whose loading imports Python from their own files, those on this machine first."""
        rows = [r for r in self.ctx.registry.listing() if r.get("own_code")]
        return [r["name"] for r in sorted(rows, key=lambda r: not r["available"])]

    def describe_code(self, name: str | None) -> str:
        """Which files would run if `name` were allowed, and whether it is."""
        if not name:
            return ""
        try:
            preset = catalog.resolve(name)
        except BackendError as exc:
            raise user_error(str(exc)) from None
        folder = catalog.code_folder(preset)
        files = code_files(folder)
        where = f"`{markdown_text(str(folder))}`" if folder is not None else "its download (not on this machine yet)"
        listed = ", ".join(f"`{markdown_text(f)}`" for f in files) or "the Python files its config names"
        access = self.ctx.registry.access
        allowed = access is None or access.may_run_code(name)
        state = "**Allowed**: it loads with its own code." if allowed else (
            "**Not allowed yet**: loading it is refused until you allow it here.")
        return f"Loading **{markdown_text(name)}** imports and runs these Python files from {where}: {listed}. {state}"

    def allow_code(self, name: str | None) -> tuple[str, str]:
        """Let `name`'s own Python run from now on (until the app stops): (its description, table)."""
        if not name:
            raise user_error("Choose the model whose code may run first.")
        if name not in self.code_choices():
            raise user_error(f"{name} is not a model that runs code of its own.")
        access = self.ctx.registry.access
        if access is not None:
            access.trust(name)
        return self.describe_code(name), self.table()

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
        load_name = gr.Textbox(label="Load a model now (name)", elem_id="load-name",
                               info="A preset, a folder under models/, or a server in models/servers.json (a path "
                                    "or openai:URL#MODEL only if the app was started with --allow-model-paths / "
                                    "--allow-remote-urls).")
        load_btn = gr.Button("Load")
        rescan_btn = gr.Button("Rescan")
    status = gr.Markdown()
    table = gr.HTML(models.table(), elem_id="models-table")
    with gr.Accordion("Models that run their own Python", open=True, elem_id="own-code"):
        gr.Markdown("Some models ship Python files that transformers imports when they load "
                    "(`trust_remote_code`). They load only after you allow it here for that model, or when the app "
                    "is started with `--trust-remote-code NAME`. Pick one to see which files would run.")
        with gr.Row():
            code_name = gr.Dropdown(models.code_choices(), value=None, label="Model", elem_id="code-model", scale=3)
            allow_btn = gr.Button("Allow its code to run", elem_id="allow-code", scale=1)
        code_info = gr.Markdown(elem_id="code-info")
    version = gr.State(ctx.registry.version)
    code_name.change(models.describe_code, [code_name], [code_info], api_visibility="private")
    allow_btn.click(models.allow_code, [code_name], [code_info, table], api_name="models_allow_code")
    load_btn.click(models.try_load, [load_name], [status], api_name="models_load")
    rescan_btn.click(models.rescan, None, [table, *pickers, version, status], api_name="models_rescan")
    gr.Timer(POLL_S).tick(models.poll, [version], [table, *pickers, version, status], api_visibility="private",
                          show_progress="hidden")
