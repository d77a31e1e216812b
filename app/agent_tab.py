"""The Agent tab: a model acts in the shop / back-office world one tool call per step, live.

`world.agent.run_episode` drives the model through callbacks, so it runs in the run path's
worker (app/runs.py), which hands frames and finished steps to the handler at the chosen pace;
the handler draws the denoising of the current tool call, each parsed call and the tool's
response, the world state, and for benchmark tasks the grader's verdict. A run starts by
clearing every result panel; Stop ends it at the next forward and says so.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from contextlib import ExitStack
from typing import Any

import gradio as gr

from engine.metrics import combined, summary_line
from engine.trace import ConfigError, GenerationConfig
from world.agent import DEFAULT_MAX_REPLIES, Step, run_conversation, run_episode
from world.start import world_for

from .agent_record import Venue, agent_exchange, last_call, stopped
from .agent_scenarios import SCENARIOS, conversation_task, conversation_verdict, scenario_instruction
from .agent_tasks import CUSTOM, benchmark_tasks, custom_task, task_label, world_after, world_view
from .cards import card_for
from .chat_turn import EMPTY_PANEL
from .controls import generation_controls
from .exports import export_answer
from .live import markdown_safe
from .messages import failure, user_error
from .names import with_names
from .outputs import OutputNames
from .page_venue import PAGES, WHERE_CHOICES, WORLD, PagesUnavailable, Visit, screenshot_html
from .runs import Run, run_key
from .saving import save
from .settings import AGENT_DEFAULTS, read_settings
from .state import AppContext
from .steps import failure_of, failures_note, steps_html
from .watch import Generations, Watch
from .widgets import (
    GENERATE,
    PICKER_MIN_WIDTH,
    QUIET,
    card_examples,
    card_update,
    file_list,
    model_picker,
    stopper,
    with_settings,
)
from .world_page import WAITING_HTML

AGENT_OUTPUTS = OutputNames("panel", "steps", "world", "verdict", "preview", "files", "status", "world_page")
SCAFFOLD_INFO = ("The engine writes each tool call's fixed text (tags, the tool name once chosen, the argument keys, "
                 "quotes, braces) into the canvas as soon as it is known, drawn as pre-filled; the model decides "
                 "only the values, so the call always parses. Off: the model writes every token.")
WHERE_INFO = ("Web pages: each tool call runs in the shop or office page beside the panel, in a headless browser "
              "(WebMCP), and that page follows it.")


class EpisodeView(Generations):
    """The episode being drawn: its steps, and the generation in flight (app/watch.py)."""

    within = "episode"

    def panel(self, mode: str, otherwise: Any) -> Any:
        """The last reply's panel in `mode`, or `otherwise` before any."""
        return self.view.panel(mode) if self.view is not None else otherwise


class AgentHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second
        self.tasks = {t["id"]: t for t in benchmark_tasks()}

    def task_choices(self) -> list[tuple[str, str]]:
        """(label, task id): a task reads as its whole instruction and what kind of task it is."""
        out = [("Type my own instruction (below)", CUSTOM)]
        return out + [(task_label(t), t["id"]) for t in self.tasks.values()]

    def describe(self, task_id: str) -> str:
        """The instruction of the picked task, to show in the instruction box."""
        task = self.tasks.get(task_id or CUSTOM)
        return task["instruction"] if task else ""

    def page(self, key: tuple, task: dict[str, Any] | None, steps: list[Step], pages: Visit | None = None) -> str:
        """The frame showing the task's world after the steps shown (their calls replayed, so it
        follows the display, replay included), on the page of the last call. When the calls run
        in the pages, the frame shows the session's World as they left it, never a replay."""
        if task is not None and task.get("domain") == "document":
            return '<p class="dp-world-head">A document task does not touch the world: no page to show.</p>'
        task = task if task is not None else custom_task("")
        last = last_call(steps)
        call, seen = (last.call, last.observation) if last else (None, None)
        if pages is not None:
            return self.ctx.world_pages.frame(key, call, seen, owner="episode")
        return self.ctx.world_pages.show(key, world_after(task, steps), call, seen, owner="episode")

    def task_page(self, task_id: str, key: tuple = (None, "agent")) -> str:
        """The frame of a picked task's world before it runs (a typed instruction: the Chat's world)."""
        return self.page(key, self.tasks.get(task_id or CUSTOM), [])

    def pick_example(self, sample: list[str]) -> tuple[str, str]:
        """(task, instruction) for a clicked example: its held-out task when it is one (graded)."""
        prompt = sample[0] if sample else ""
        task = next((t for t in self.tasks.values() if t["instruction"] == prompt), None)
        return (task["id"], prompt) if task else (CUSTOM, prompt)

    def run(self, task_id: str, instruction: str, model: str, max_replies: Any, where: str = WORLD, *,
            settings: Mapping[str, Any], key: tuple = (None, "agent")) -> Generator[tuple, None, None]:
        """One episode, its tools run `where` (WORLD or PAGES); yields one tuple of AGENT_OUTPUTS per update."""
        task = self.tasks.get(task_id or CUSTOM)
        graded = task is not None
        if task is None:
            if task_id:
                raise user_error(f"There is no task '{task_id}'; pick one from the list or type an instruction.")
            if not (instruction or "").strip():
                raise user_error("The instruction is empty: pick a benchmark task or type what the agent should do.")
            task = custom_task(instruction.strip())
        yield from self._run(task, graded, model, max_replies, settings, key, where)

    def run_scenario(self, name: str, model: str, max_replies: Any, *, settings: Mapping[str, Any],
                     key: tuple = (None, "agent")) -> Generator[tuple, None, None]:
        """A one-click scenario (app/agent_scenarios.py), its tools run in the web pages."""
        scenario = SCENARIOS.get(name)
        if scenario is None:
            raise user_error(f"There is no scenario '{name}'.")
        built = scenario.build()
        if scenario.conversation:
            yield from self._run(conversation_task(built), True, model, max_replies, settings, key, PAGES,
                                 conversation=built, scenario=name)
        else:
            yield from self._run(built, True, model, max_replies, settings, key, PAGES, scenario=name)

    def _run(self, task: dict[str, Any], graded: bool, model: str, max_replies: Any, settings: Mapping[str, Any],
             key: tuple, where: str, conversation: dict[str, Any] | None = None,
             scenario: str | None = None) -> Generator[tuple, None, None]:
        if where not in (WORLD, PAGES):
            raise user_error(f"Tools run in the built-in world or in its web pages, not '{where}'.")
        try:
            read = read_settings(settings, temperature=0.0, seed=0)
            config = read.config
            limit = int(float(max_replies or DEFAULT_MAX_REPLIES))
            if limit < 1:
                raise ConfigError(f"The reply limit must be at least 1, got {max_replies}.")
        except (ConfigError, ValueError) as exc:
            raise user_error(str(exc)) from None
        try:
            with ExitStack() as held:
                pages = None
                if where == PAGES and task.get("domain") != "document":
                    pages = held.enter_context(self.ctx.page_browser.visit(key))
                    # the frame has the task's start under the session before the run puts its own
                    # World there (the worker must not find it replaced afterwards)
                    self.ctx.world_pages.show(key, world_for(task), owner="episode")
                backend = held.enter_context(self.ctx.registry.using(model))
                run = held.enter_context(Run(self.ctx.runs, key, read.pace_ms, self.updates_per_second))
                yield from self._episode(run, backend, task, config, model, limit, graded,
                                         Venue(pages, conversation, scenario))
        except PagesUnavailable as exc:
            raise user_error(str(exc)) from None
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    def _episode(self, run: Run, backend: Any, task: dict[str, Any], config: GenerationConfig, model: str,
                 limit: int, graded: bool, venue: Venue) -> Generator[tuple, None, None]:
        pages, conversation = venue.pages, venue.conversation
        starts: list[int] = []                        # where each request of a conversation begins in steps
        episode = EpisodeView(backend, config, model, task["instruction"])
        run.parts = episode.part_count
        if conversation is not None:
            run.start(lambda r: run_conversation(
                backend, conversation, config, max_replies=limit, on_frame=r.frame, on_step=lambda s: r.put("step", s),
                should_stop=r.should_stop, pages=pages, on_request=lambda k, _t: r.put("request", k)),
                name="agent-conversation")
        else:
            run.start(lambda r: run_episode(backend, task, config, max_replies=limit, on_frame=r.frame,
                                            on_step=lambda s: r.put("step", s), should_stop=r.should_stop,
                                            pages=pages), name="agent-episode")
        steps = episode.steps
        known = list(task.get("requests") or [task["instruction"]])   # what a call may copy from (app/steps.py)
        transcript, shot = None, None

        def keep(cut: bool) -> int | None:            # cut: no verdict and no picture of the page
            return self._save(task, steps, None if cut else transcript, config, model, graded, venue, starts,
                              None if cut else shot)

        # a new run clears every result panel, the last verdict included
        yield AGENT_OUTPUTS.update(panel=EMPTY_PANEL, steps=steps_html([]), world=world_view(task, []), verdict="",
                                   preview="", files=file_list([]), status="Step 1: generating…",
                                   world_page=self.page(run.key, task, [], pages))
        with Watch(run, episode.read_frame, episode.read_step, keep) as watch:
            for event in watch.events():
                if event.kind == "frame" and event.show:
                    yield AGENT_OUTPUTS.update(
                        panel=episode.view.panel(run.mode(), part=(event.part, event.parts), behind=run.behind()),
                        status=self._progress(run, len(steps) + 1, "generating"))
                elif event.kind == "step":
                    yield AGENT_OUTPUTS.update(
                        panel=episode.panel("done", gr.skip()), steps=steps_html(steps, known),
                        world=world_view(task, steps), status=self._progress(run, len(steps), "done"),
                        world_page=self.page(run.key, task, steps, pages))
                elif event.kind == "request":
                    starts.append(len(steps))
                elif event.kind == "done":
                    # a stopped episode has no verdict: it ended because the person said so
                    transcript = None if stopped(event.value) else event.value
        if pages is not None and steps:               # the page's final state, as the driver sees it
            last = last_call(steps)
            shot = pages.screenshot(self.ctx.export_dir / f"agent-page-{time.time_ns()}.png",
                                    last.call if last else None, last.observation if last else None)
        ending = self._ending(episode, task, transcript, shot, watch.save(), venue, graded, config, model)
        yield AGENT_OUTPUTS.update(**ending, steps=steps_html(steps, known), world=world_view(task, steps),
                                   world_page=self.page(run.key, task, steps, pages))

    def _ending(self, episode: EpisodeView, task: dict[str, Any], transcript: Any, shot: Any, saved: int | None,
                venue: Venue, graded: bool, config: GenerationConfig, model: str) -> dict[str, Any]:
        """The episode's last panel, verdict, preview, files and status, once it is over or stopped."""
        steps, pages = episode.steps, venue.pages
        named = world_after(task, steps) if task.get("domain") != "document" else None
        if venue.conversation is not None and transcript is not None:
            verdict = conversation_verdict(transcript, self._cost(steps))
        else:
            verdict = self._verdict(transcript, graded, steps, named)
        preview, files = (screenshot_html(shot), [shot]) if shot else ("", [])
        last = steps[-1].result if steps else None
        if transcript is not None and task.get("domain") == "document" and last is not None:
            files, preview = export_answer(self.ctx.export_dir, last, config, task["id"], task["instruction"], model)
        if episode.view is not None:
            episode.view.generations = sum(1 for step in steps if step.result is not None)
        over = transcript is not None
        status = f"Episode over after {len(steps)} step(s)." if over else f"Stopped after {len(steps)} step(s)."
        if pages is not None:
            status += f" Tools ran in the web pages ({pages.webmcp} WebMCP)."
        if saved:
            status += f" Stored as agent run #{saved}" + ("." if over else " (stopped).")
        if pages is not None and steps and shot is None:
            status += " No picture of the page's final state could be taken."
        return {"panel": episode.panel("done" if over else "stopped", EMPTY_PANEL), "verdict": verdict,
                "preview": preview, "files": file_list(files), "status": status}

    @staticmethod
    def _progress(run: Run, step: int, doing: str) -> str:
        """The status line while the episode is drawn: "generating" only while the model computes;
        once the episode is over, the display replays it at the pace, and says so."""
        if run.mode() == "replay":
            what = "replaying its generation" if doing == "generating" else "done"
            return f"Step {step}: {what} (replay: the episode has finished computing, shown at your pace)."
        return f"Step {step}: generating…" if doing == "generating" else f"Step {step} done."

    def _verdict(self, transcript: Any, graded: bool, steps: list[Step], world: Any = None) -> str:
        if transcript is None:
            return "Stopped before the end."
        answer = markdown_safe(with_names(transcript.final_answer, world) if transcript.final_answer else "(no answer)")
        failed = failures_note([f for f in map(failure_of, steps) if f])
        if failed:                                # the errors behind the answer stay in sight
            answer += f"\n\n{markdown_safe(failed)}"
        cost = self._cost(steps)
        if not graded:
            return f"**Answer:** {answer}\n\n({cost}; a typed instruction has no grader.)"
        if transcript.success:
            return f"### ✅ Success\n{markdown_safe(transcript.reason)}\n\n**Answer:** {answer}\n\n{cost}"
        return (f"### ❌ Failed: {transcript.error_type}\n{markdown_safe(transcript.reason)}\n\n"
                f"**Answer:** {answer}\n\n{cost}")

    @staticmethod
    def _cost(steps: list[Step]) -> str:
        """engine/metrics.py over every generation of the episode."""
        generated = [s.result.stats for s in steps if s.result is not None]
        return f"{summary_line(combined(generated), 'episode', len(generated))} · {len(steps)} step(s)"

    def _save(self, task: dict[str, Any], steps: list[Step], transcript: Any, config: GenerationConfig, model: str,
              graded: bool, venue: Venue | None = None, starts: list[int] = (), shot: Any = None) -> int | None:
        """The run as an "agent" conversation (app/agent_record.py); a run stopped before its first
        step keeps nothing."""
        exchange = agent_exchange(task, steps, transcript, config, model, graded, venue or Venue(), starts, shot)
        return save(self.ctx, exchange, "This agent run") if exchange is not None else None


# -- layout -----------------------------------------------------------------------------------
def scenario_runner(agent: AgentHandlers, name: str):
    """The Gradio handler of one scenario button (a generator function, so Gradio streams it)."""
    def run_scenario(model: str, max_replies: Any, *, settings: Mapping[str, Any], key: tuple):
        yield from agent.run_scenario(name, model, max_replies, settings=settings, key=key)
    return run_scenario


def build(ctx: AppContext) -> dict[str, Any]:
    """The Agent tab, inside the caller's gr.Tab; returns its model picker."""
    agent = AgentHandlers(ctx)
    with gr.Row():
        task = gr.Dropdown(agent.task_choices(), value="", label="Benchmark task (held out)", allow_custom_value=True,
                           elem_id="agent-task", min_width=PICKER_MIN_WIDTH,
                           info="A graded task: its verdict says whether the world ended as the oracle's.")
        model = model_picker(ctx.registry.choices(), ctx.default_model, "Model", "agent-model")
    instruction = gr.Textbox(label="Instruction", lines=1, max_lines=6, elem_id="agent-instruction",
                             placeholder="Pick a task above or an example, or type an instruction for the agent")
    card = card_for(ctx.default_model, ctx.registry.listing())
    with gr.Accordion("Examples and what this model can do", open=True, elem_id="agent-about"):
        card_md, examples = card_examples("agent", card, fills="Instruction box", sends="Run agent")
    with gr.Accordion("Generation settings", open=False, elem_id="agent-settings"):
        max_replies = gr.Slider(1, 16, value=8, step=1, label="Reply limit", elem_id="agent-max-replies",
                                info="Replies of the model (each a tool call or the answer) before the episode "
                                     "ends unfinished.")
        controls = generation_controls("agent", AGENT_DEFAULTS, with_sampling=False, ctx=ctx)
    scaffold = gr.Checkbox(False, label="Scaffolded tool calls", elem_id="agent-scaffold", info=SCAFFOLD_INFO)
    where = gr.Radio(WHERE_CHOICES, value=WORLD, label="Tools run in", elem_id="agent-where", info=WHERE_INFO)
    controls["scaffold"] = scaffold              # a GenerationConfig switch, read with the settings by name
    with gr.Row():
        run_btn = gr.Button("Run agent", variant="primary", elem_id="run-agent")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="agent-stop")
    with gr.Row(elem_id="agent-scenarios"):
        scenario_btns = {name: gr.Button(s.label, size="sm", elem_id=f"agent-scenario-{name}")
                         for name, s in SCENARIOS.items()}
    status = gr.Markdown(elem_id="agent-status")
    with gr.Row():
        with gr.Column(scale=3):
            panel = gr.HTML(EMPTY_PANEL, label="Denoising of the current tool call", elem_id="agent-panel")
            steps = gr.HTML(label="Steps", elem_id="agent-step-list")
        with gr.Column(scale=2):
            verdict = gr.Markdown(elem_id="agent-verdict")
            # the task's world as its web pages, following each step as it is shown (app/world_page.py)
            world_page = gr.HTML(WAITING_HTML, elem_id="agent-world-page")
            world = gr.JSON(label="World state (cart, orders, invoices)")
    preview = gr.HTML(elem_id="agent-preview")
    files = gr.File(label="Answer files", file_count="multiple", interactive=False, visible=False)
    parts = {"panel": panel, "steps": steps, "world": world, "verdict": verdict, "preview": preview, "files": files,
             "status": status, "world_page": world_page}
    inputs = {"task": task, "instruction": instruction, "model": model, "max_replies": max_replies, "where": where}
    task_page = _wire(ctx, agent, parts, inputs, controls, {"run": run_btn, "stop": stop_btn, **scenario_btns},
                      (card_md, examples))
    return {**parts, "model": model, "task": task, "task_page": task_page}


def _wire(ctx: AppContext, agent: AgentHandlers, parts: dict[str, Any], inputs: dict[str, Any],
          controls: dict[str, Any], buttons: dict[str, Any], card: tuple[Any, Any]):
    """Run (button, Enter, a scenario), Stop, the task's page and the card; returns task_page."""
    task, instruction, model, where = inputs["task"], inputs["instruction"], inputs["model"], inputs["where"]

    def task_page(task_id: str, request: gr.Request) -> str:
        return agent.task_page(task_id, run_key(request, "agent"))

    task.change(agent.describe, [task], [instruction], api_visibility="private", **QUIET).then(
        task_page, [task], [parts["world_page"]], api_visibility="private", **QUIET)
    handler = with_settings(agent.run, "agent", list(controls))
    run_inputs = [task, instruction, model, inputs["max_replies"], where, *controls.values()]
    outputs = AGENT_OUTPUTS.components(parts)
    # picking the pages starts the app's browser meanwhile: the first run need not wait for it
    where.change(ctx.page_browser.warm, [where], None, queue=False, api_visibility="private", **QUIET)
    buttons["run"].click(handler, run_inputs, outputs, api_name="agent", **GENERATE)
    instruction.submit(handler, run_inputs, outputs, api_visibility="private", **GENERATE)
    for name in SCENARIOS:                          # its whole instruction in the box first, then the run
        buttons[name].click(lambda n=name: scenario_instruction(n), None, [instruction], queue=False,
                            api_visibility="private", **QUIET).then(
            with_settings(scenario_runner(agent, name), "agent", list(controls)),
            [model, inputs["max_replies"], *controls.values()], outputs, api_visibility="private", **GENERATE)
    buttons["stop"].click(stopper(ctx.runs, "agent"), None, None, queue=False, api_visibility="private")
    card_md, examples = card
    model.change(lambda name: card_update(ctx, name), [model], [card_md, examples], api_visibility="private",
                 **QUIET)
    examples.click(agent.pick_example, [examples], [task, instruction], api_visibility="private", **QUIET)
    return task_page
