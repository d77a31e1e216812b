"""The Agent tab: a model acts in the shop / back-office world one tool call per step, live.

`engine.agent.run_episode` drives the model through callbacks, so it runs in a helper thread
that puts frames and finished steps on a queue; the handler (a generator, like every streaming
handler) reads the queue and draws: the denoising of the current tool call, each parsed call
and the tool's response, the world state, and for benchmark tasks the grader's verdict.
Stop sets a flag that the next frame turns into an exception inside the episode.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Generator
from typing import Any

import gradio as gr
from markupsafe import Markup

from engine.agent import DEFAULT_MAX_STEPS, Step, run_episode
from engine.trace import ConfigError, Frame, GenerationConfig
from engine.world.format import render_response
from engine.world.state import world_for
from engine.world.tasks import load_heldout_tasks, make_task
from engine.world.tools import FINISH, call_tool
from sessions import StoreError

from .chat import failure, file_list
from .exports import export_answer
from .live import TraceView, markdown_safe
from .messages import user_error, warn
from .settings import config_from_controls
from .state import AppContext
from .throttle import Throttle

AGENT_OUTPUTS = ("panel", "steps", "world", "verdict", "preview", "files", "status")
CUSTOM = ""                                   # the task choice that means "use the typed instruction"
DOC_TASKS = (("doc_resume", 1), ("doc_html", 2))
SHOWN_CHARS = 600                             # long tool responses are cut in the steps table


class Stopped(Exception):
    """Raised inside the episode's thread when the person pressed Stop."""


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


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + " …"


def steps_html(steps: list[Step]) -> str:
    """One row per step: what the model wrote, the call it parsed to (or the error), the response."""
    if not steps:
        return '<div class="dp-empty">No steps yet.</div>'
    rows = []
    for i, s in enumerate(steps, 1):
        parsed = json.dumps(s.call, ensure_ascii=False) if s.call else f"error: {(s.error or {}).get('message', '?')}"
        if s.call and s.error:
            parsed += f" (vetoed: {s.error.get('message', s.error.get('kind'))})"
        response = "—" if s.observation is None else _short(s.observation)
        nfe = s.result.stats.nfe if s.result else "–"
        rows.append(Markup("<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td>"
                           "<td>{:.2f} s · NFE {}</td></tr>").format(i, _short(s.raw_text), parsed, response,
                                                                      s.seconds, nfe))
    head = Markup("<tr><th>#</th><th>generated</th><th>parsed call</th><th>tool response</th><th>cost</th></tr>")
    return str(Markup('<table class="dp-table dp-steps">{}{}</table>').format(head, Markup("").join(rows)))


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

    def run(self, task_id: str, instruction: str, model: str, max_steps: Any, gen_length: Any, block_size: Any,
            steps: Any, sampler: str, threshold: Any) -> Generator[tuple, None, None]:
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
            config = config_from_controls(gen_length, block_size, steps, sampler, threshold, 0.0, 0)
            limit = int(float(max_steps or DEFAULT_MAX_STEPS))
            if limit < 1:
                raise ConfigError(f"The step limit must be at least 1, got {max_steps}.")
        except (ConfigError, ValueError) as exc:
            raise user_error(str(exc)) from None
        try:
            with self.ctx.registry.using(model) as backend:
                yield from self._episode(backend, task, config, model, limit, graded)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    def _episode(self, backend: Any, task: dict[str, Any], config: GenerationConfig, model: str, limit: int,
                 graded: bool) -> Generator[tuple, None, None]:
        events: queue.Queue = queue.Queue()
        stop = threading.Event()

        def on_frame(frame: Frame) -> None:
            if stop.is_set():
                raise Stopped
            events.put(("frame", frame))

        def work() -> None:
            try:
                events.put(("done", run_episode(backend, task, config, max_steps=limit, on_frame=on_frame,
                                                on_step=lambda s: events.put(("step", s)))))
            except Stopped:
                events.put(("stopped", None))
            except BaseException as exc:  # noqa: BLE001 - handed to the handler thread, raised there
                events.put(("error", exc))

        thread = threading.Thread(target=work, name="agent-episode", daemon=True)
        steps: list[Step] = []
        view: TraceView | None = None
        throttle = Throttle(self.updates_per_second)
        thread.start()
        try:
            while True:
                kind, value = events.get()
                if kind == "frame":
                    if value.nfe == 1 or view is None:        # a new tool call starts
                        view = TraceView.for_run(backend, config, model, task["instruction"])
                    view.add(value, backend)
                    if throttle.ready():
                        yield view.panel("live"), *([gr.skip()] * 5), f"Step {len(steps) + 1}: generating…"
                elif kind == "step":
                    steps.append(value)
                    if view is not None and value.result is not None:
                        view.finish(value.result)
                    yield (view.panel("done") if view else gr.skip(), steps_html(steps), world_view(task, steps),
                           gr.skip(), gr.skip(), gr.skip(), f"Step {len(steps)} done.")
                elif kind == "error":
                    raise value
                else:
                    break
        except GeneratorExit:
            stop.set()
            thread.join(timeout=30)
            self._save(task, steps, None, config, model, graded)
            raise
        finally:
            stop.set()
        transcript = value if kind == "done" else None
        saved = self._save(task, steps, transcript, config, model, graded)
        verdict = self._verdict(transcript, graded, steps)
        preview, files = "", []
        last = steps[-1].result if steps else None
        if task.get("domain") == "document" and last is not None:
            files, preview = export_answer(self.ctx.export_dir, last, config, task["id"], task["instruction"], model)
        status = f"Episode over after {len(steps)} step(s)." + (f" Stored as agent run #{saved}." if saved else "")
        yield (view.panel("done") if view else gr.skip(), steps_html(steps), world_view(task, steps), verdict,
               preview, file_list(files), status)

    def _verdict(self, transcript: Any, graded: bool, steps: list[Step]) -> str:
        if transcript is None:
            return "Stopped before the end."
        answer = markdown_safe(transcript.final_answer or "(no answer)")
        cost = f"{transcript.seconds:.2f} s, {transcript.nfe} forwards, {len(steps)} step(s)"
        if not graded:
            return f"**Answer:** {answer}\n\n({cost}; a typed instruction has no grader.)"
        if transcript.success:
            return f"### ✅ Success\n{markdown_safe(transcript.reason)}\n\n**Answer:** {answer}\n\n{cost}"
        return (f"### ❌ Failed: {transcript.error_type}\n{markdown_safe(transcript.reason)}\n\n"
                f"**Answer:** {answer}\n\n{cost}")

    def _save(self, task: dict[str, Any], steps: list[Step], transcript: Any, config: GenerationConfig, model: str,
              graded: bool) -> int | None:
        """The run as an "agent" conversation: instruction, then per step the model's turn (with its
        frames and parsed call) and the tool's response."""
        store = self.ctx.store
        if store is None:
            warn(f"This agent run was not saved: {self.ctx.store_problem}")
            return None
        meta = {"task_id": task["id"], "graded": graded, "stopped": transcript is None}
        if transcript is not None:
            meta.update(success=transcript.success, error_type=transcript.error_type, reason=transcript.reason,
                        seconds=transcript.seconds, nfe=transcript.nfe)
        try:
            cid = store.create_conversation("agent", f"{task['id']}: {task['instruction']}"[:100], model=model,
                                            meta=meta)
            store.add_turn(cid, "user", task["instruction"])
            for i, s in enumerate(steps):
                name = s.call["name"] if s.call else "(unparsed)"
                call = {"step": i, "name": name, "arguments": s.call["arguments"] if s.call else s.raw_text,
                        "observation": s.observation, "error_type": (s.error or {}).get("kind")}
                store.add_turn(cid, "assistant", s.raw_text, generation=s.result, config=config, model=model,
                               tool_calls=[call])
                if s.observation is not None:
                    store.add_turn(cid, "tool", render_response(s.observation))
            return cid
        except StoreError as exc:
            warn(f"This agent run was not saved: {exc}")
            return None
