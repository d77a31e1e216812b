"""The Agent tab: a model acts in the shop / back-office world one tool call per step, live.

`world.agent.run_episode` drives the model through callbacks, so it runs in the run path's
worker (app/runs.py), which hands frames and finished steps to the handler at the chosen pace;
the handler draws the denoising of the current tool call, each parsed call and the tool's
response, the world state, and for benchmark tasks the grader's verdict. A run starts by
clearing every result panel; Stop ends it at the next forward and says so.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import gradio as gr

from engine.metrics import combined, summary_line
from engine.result import summarize
from engine.trace import ConfigError, GenerationConfig
from world.agent import DEFAULT_MAX_STEPS, Step, run_episode
from world.state import world_for
from world.tasks import load_heldout_tasks, make_task
from world.tools import FINISH, call_tool

from .cards import card_for
from .chat import EMPTY_PANEL, failure, file_list
from .exports import export_answer
from .live import TraceView, markdown_safe
from .messages import user_error
from .runs import Exchange, Run, Turn, save
from .settings import AGENT_DEFAULTS, config_from_settings
from .state import AppContext
from .steps import step_turns, steps_html
from .widgets import (
    GENERATE,
    QUIET,
    card_examples,
    card_update,
    generation_controls,
    model_picker,
    stopper,
    with_settings,
)

AGENT_OUTPUTS = ("panel", "steps", "world", "verdict", "preview", "files", "status")
CUSTOM = ""                                   # the task choice that means "use the typed instruction"
DOC_TASKS = (("doc_resume", 1), ("doc_html", 2))
SCAFFOLD_INFO = ("The engine writes each tool call's fixed text (tags, the tool name once chosen, the argument keys, "
                 "quotes, braces) into the canvas as soon as it is known, drawn as pre-filled; the model decides "
                 "only the values, so the call always parses. Off: the model writes every token.")

def benchmark_tasks() -> list[dict[str, Any]]:
    """The held-out agent tasks, then one resume and one page task (answers that are code)."""
    return load_heldout_tasks() + [make_task(intent, "heldout", seed) for intent, seed in DOC_TASKS]


def custom_task(instruction: str) -> dict[str, Any]:
    """A typed instruction in a fresh held-out world; there is no gold answer to grade it against."""
    return {"id": "typed", "domain": "shop", "intent": "typed", "split": "heldout", "instruction": instruction,
            "world": {"seed": 0, "setup": {}}, "gold_actions": [], "outputs": []}


def world_view(task: dict[str, Any], steps: list[Step]) -> dict[str, Any]:
    """The world after the executed calls (vetoed and unparsed ones never ran), replayed from the start."""
    if task.get("domain") == "document":
        return {"note": "Document tasks do not touch the world."}
    world = world_for(task)
    for step in steps:
        if step.call and not step.error and step.call["name"] != FINISH:
            try:
                call_tool(world, step.call["name"], step.call["arguments"])
            except Exception:  # noqa: BLE001 - it failed in the episode too, and changed nothing
                pass
    state = world.end_state()
    return {"cart": state["cart"], "cart_total": world.cart_total(), "orders": state["orders"],
            "invoices": state["invoices"], "registrations": state["registrations"]}


def stopped_step(backend: Any, view: TraceView) -> Step:
    """The reply Stop cut short: what its frames decided, as a cancelled generation."""
    seconds = view.frames[-1].elapsed_s
    partial = summarize(backend, list(view.frames), seconds, "cancelled", view.gen_length)
    view.finish(partial)
    return Step(partial.text, None, None, None, partial, seconds)


class AgentHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second
        self.tasks = {t["id"]: t for t in benchmark_tasks()}

    def task_choices(self) -> list[tuple[str, str]]:
        out = [("Type my own instruction (below)", CUSTOM)]
        return out + [(f"{t['id']}: {t['instruction'][:70]}", t["id"]) for t in self.tasks.values()]

    def describe(self, task_id: str) -> str:
        """The instruction of the picked task, to show in the instruction box."""
        task = self.tasks.get(task_id or CUSTOM)
        return task["instruction"] if task else ""

    def pick_example(self, sample: list[str]) -> tuple[str, str]:
        """(task, instruction) for a clicked example: its held-out task when it is one (graded)."""
        prompt = sample[0] if sample else ""
        task = next((t for t in self.tasks.values() if t["instruction"] == prompt), None)
        return (task["id"], prompt) if task else (CUSTOM, prompt)

    def run(self, task_id: str, instruction: str, model: str, max_steps: Any, *, settings: Mapping[str, Any],
            key: tuple = (None, "agent")) -> Generator[tuple, None, None]:
        """One episode; yields one tuple of AGENT_OUTPUTS per update."""
        task = self.tasks.get(task_id or CUSTOM)
        graded = task is not None
        if task is None:
            if task_id:
                raise user_error(f"There is no task '{task_id}'; pick one from the list or type an instruction.")
            if not (instruction or "").strip():
                raise user_error("The instruction is empty: pick a benchmark task or type what the agent should do.")
            task = custom_task(instruction.strip())
        try:
            config = config_from_settings(settings, temperature=0.0, seed=0)
            limit = int(float(max_steps or DEFAULT_MAX_STEPS))
            if limit < 1:
                raise ConfigError(f"The step limit must be at least 1, got {max_steps}.")
        except (ConfigError, ValueError) as exc:
            raise user_error(str(exc)) from None
        try:
            with self.ctx.registry.using(model) as backend:
                with Run(self.ctx.runs, key, settings.get("pace_ms", 0), self.updates_per_second) as run:
                    yield from self._episode(run, backend, task, config, model, limit, graded)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    def _episode(self, run: Run, backend: Any, task: dict[str, Any], config: GenerationConfig, model: str,
                 limit: int, graded: bool) -> Generator[tuple, None, None]:
        run.start(lambda r: run_episode(backend, task, config, max_steps=limit, on_frame=r.frame,
                                        on_step=lambda s: r.put("step", s)), name="agent-episode")
        steps: list[Step] = []
        view: TraceView | None = None
        pending = False                               # frames arrived for a step not finished yet
        # a new run clears every result panel, the last verdict included
        yield (EMPTY_PANEL, steps_html([]), world_view(task, []), "", "", file_list([]), "Step 1: generating…")
        transcript = None
        try:
            for event in run.events():
                if event.kind == "frame":
                    if not pending:                   # a new tool call starts
                        view = TraceView.for_run(backend, config, model, task["instruction"])
                        pending = True
                    view.add(event.value, backend)
                    if event.show:
                        yield view.panel("live"), *([gr.skip()] * 5), f"Step {len(steps) + 1}: generating…"
                elif event.kind == "step":
                    steps.append(event.value)
                    if pending and view is not None and event.value.result is not None:
                        view.finish(event.value.result)
                    pending = False
                    yield (view.panel("done") if view else gr.skip(), steps_html(steps), world_view(task, steps),
                           gr.skip(), gr.skip(), gr.skip(), f"Step {len(steps)} done.")
                elif event.kind == "done":
                    transcript = event.value
        except GeneratorExit:
            for left in run.close():
                if view is not None and pending:
                    view.add(left.value, backend)
            if pending and view is not None and view.frames:
                steps.append(stopped_step(backend, view))
            self._save(task, steps, None, config, model, graded)
            raise
        finally:
            run.close()
        if transcript is None and pending and view is not None and view.frames:
            steps.append(stopped_step(backend, view))
        saved = self._save(task, steps, transcript, config, model, graded)
        verdict = self._verdict(transcript, graded, steps)
        preview, files = "", []
        last = steps[-1].result if steps else None
        if transcript is not None and task.get("domain") == "document" and last is not None:
            files, preview = export_answer(self.ctx.export_dir, last, config, task["id"], task["instruction"], model)
        if transcript is None:
            status = f"Stopped after {len(steps)} step(s)."
            panel = view.panel("stopped") if view else EMPTY_PANEL
        else:
            status = f"Episode over after {len(steps)} step(s)."
            panel = view.panel("done") if view else EMPTY_PANEL
        if saved:
            status += f" Stored as agent run #{saved}" + (" (stopped)." if transcript is None else ".")
        yield panel, steps_html(steps), world_view(task, steps), verdict, preview, file_list(files), status

    def _verdict(self, transcript: Any, graded: bool, steps: list[Step]) -> str:
        if transcript is None:
            return "Stopped before the end."
        answer = markdown_safe(transcript.final_answer or "(no answer)")
        generated = [s.result.stats for s in steps if s.result is not None]
        cost = f"{summary_line(combined(generated))} · {len(steps)} step(s)"   # engine/metrics.py, every generation
        if not graded:
            return f"**Answer:** {answer}\n\n({cost}; a typed instruction has no grader.)"
        if transcript.success:
            return f"### ✅ Success\n{markdown_safe(transcript.reason)}\n\n**Answer:** {answer}\n\n{cost}"
        return (f"### ❌ Failed: {transcript.error_type}\n{markdown_safe(transcript.reason)}\n\n"
                f"**Answer:** {answer}\n\n{cost}")

    def _save(self, task: dict[str, Any], steps: list[Step], transcript: Any, config: GenerationConfig, model: str,
              graded: bool) -> int | None:
        """The run as an "agent" conversation: instruction, then per step the model's turn (with its
        frames and parsed call) and the tool's response. A run stopped before its first step keeps nothing."""
        if not steps:
            return None
        meta = {"task_id": task["id"], "graded": graded, "stopped": transcript is None}
        if transcript is not None:
            meta.update(success=transcript.success, error_type=transcript.error_type, reason=transcript.reason,
                        seconds=transcript.seconds, nfe=transcript.nfe)
        exchange = Exchange("agent", f"{task['id']}: {task['instruction']}"[:100], model, meta=meta,
                            turns=[Turn("user", task["instruction"]), *step_turns(steps, config, model)])
        return save(self.ctx, exchange, "This agent run")


# -- layout -----------------------------------------------------------------------------------
def build(ctx: AppContext) -> dict[str, Any]:
    """The Agent tab, inside the caller's gr.Tab; returns its model picker."""
    agent = AgentHandlers(ctx)
    with gr.Row():
        task = gr.Dropdown(agent.task_choices(), value="", label="Benchmark task (held out)", allow_custom_value=True,
                           elem_id="agent-task",
                           info="A graded task: its verdict says whether the world ended as the oracle's.")
        model = model_picker(ctx.registry.choices(), ctx.default_model, "Model", "agent-model")
    card = card_for(ctx.default_model, ctx.registry.listing())
    card_md, examples = card_examples("agent", card)
    instruction = gr.Textbox(label="Instruction", lines=1, max_lines=6, elem_id="agent-instruction",
                             placeholder="Pick a task above or an example, or type an instruction for the agent")
    with gr.Accordion("Generation settings", open=False, elem_id="agent-settings"):
        max_steps = gr.Slider(1, 16, value=8, step=1, label="Step limit", elem_id="agent-max-steps",
                              info="Tool calls the agent may make before the episode ends unfinished.")
        controls = generation_controls("agent", AGENT_DEFAULTS, with_sampling=False, ctx=ctx)
    scaffold = gr.Checkbox(False, label="Scaffolded tool calls", elem_id="agent-scaffold", info=SCAFFOLD_INFO)
    controls["scaffold"] = scaffold              # a GenerationConfig switch, read with the settings by name
    with gr.Row():
        run_btn = gr.Button("Run agent", variant="primary", elem_id="run-agent")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="agent-stop")
    status = gr.Markdown(elem_id="agent-status")
    with gr.Row():
        with gr.Column(scale=3):
            panel = gr.HTML(EMPTY_PANEL, label="Denoising of the current tool call", elem_id="agent-panel")
            steps = gr.HTML(label="Steps", elem_id="agent-step-list")
        with gr.Column(scale=2):
            verdict = gr.Markdown(elem_id="agent-verdict")
            world = gr.JSON(label="World state (cart, orders, invoices)")
    preview = gr.HTML(elem_id="agent-preview")
    files = gr.File(label="Answer files", file_count="multiple", interactive=False, visible=False)
    task.change(agent.describe, [task], [instruction], api_visibility="private", **QUIET)
    handler = with_settings(agent.run, "agent", list(controls))
    inputs = [task, instruction, model, max_steps, *controls.values()]
    outputs = [panel, steps, world, verdict, preview, files, status]
    run_btn.click(handler, inputs, outputs, api_name="agent", **GENERATE)
    instruction.submit(handler, inputs, outputs, api_visibility="private", **GENERATE)
    stop_btn.click(stopper(ctx.runs, "agent"), None, None, queue=False, api_visibility="private")
    model.change(lambda name: card_update(ctx, name), [model], [card_md, examples], api_visibility="private",
                 **QUIET)
    examples.click(agent.pick_example, [examples], [task, instruction], api_visibility="private", **QUIET)
    return {"model": model}
