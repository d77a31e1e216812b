"""The Compare tab: one prompt to a diffusion model and an AR baseline, raced side by side over
the whole turn: each side runs the Chat tab's agent loop (world.agent.act_steps) in a world of
its own, every tool call and the answer, each a generation.

Fairness: both runs happen in ONE worker thread, interleaved: one forward of the diffusion model,
then one forward of the AR model, and so on until both are done (a side's tool call and its next
prompt run in its turn, before its next forward). They never compute at the same time, so
neither slows the other down by sharing cores or the GPU, and each generation's clock counts only
its own forwards (engine/metrics.py `ModelClock`: the clock is paused while the other side runs).
A side's numbers are its turn's generations added up (engine.metrics.combined). The race
computes in the run path's worker (app/runs.py); the handler draws both sides at the chosen pace,
and a side is marked finished as soon as the display has shown its last frame. The two turns are
stored together as one "compare" conversation.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import ExitStack
from typing import Any

import gradio as gr
from markupsafe import Markup

from engine.metrics import LABELS, Ends, combined, formatted, numbers, scope_label
from engine.trace import ConfigError, Frame, GenerationConfig
from sessions import TurnRecord
from visualizer import turn_race_plot
from world.agent import Step, act_steps
from world.tools import FINISH

from .cards import card_for
from .chat_turn import EMPTY_PANEL
from .controls import generation_controls
from .conversation_world import MAX_REPLIES, model_context, world_from_spec, world_spec_for
from .live import TraceView
from .messages import failure, user_error
from .noise_controls import follow_noise_models
from .outputs import OutputNames
from .runs import Run
from .saving import Exchange, save, title_of
from .settings import DEFAULTS, read_settings
from .state import AppContext
from .steps import step_turns
from .watch import Generations, Watch
from .widgets import (
    GENERATE,
    QUIET,
    card_examples,
    card_update,
    model_picker,
    stopper,
    with_settings,
)

COMPARE_OUTPUTS = OutputNames("panel_diffusion", "panel_baseline", "table", "race", "status")
SCAFFOLD_INFO = ("Both answers are one tool call whose fixed text (tags, keys, quotes, braces) is known in advance: "
                 "the diffusion model finds it pre-filled and decodes only the values; the AR baseline appends each "
                 "known run in one forward (jump-forward) and decodes the values token by token. Like with like.")
FAIRNESS_NOTE = (
    "**How the race shares the machine:** both models run the whole turn (every tool call, then the answer) in "
    "one worker thread, *interleaved*: one forward of the diffusion model, then one forward of the AR baseline, "
    "in turn, until both finish. They never compute at the same time, so neither steals cores or GPU time from "
    "the other, and each model's clock counts only its own forwards. The numbers below are each side's whole "
    "turn (its generations added up); a side is marked finished once its last forward has been shown."
)


class Racer(Generations):
    """One side of the race: its whole turn stepped one forward at a time (worker side) and what
    the display has read of it (handler side: its generations, app/watch.py)."""

    def __init__(self, name: str, backend: Any, messages: list[dict[str, str]], config: GenerationConfig,
                 prompt: str) -> None:
        super().__init__(backend, config, name, prompt, TraceView.for_run(backend, config, name, prompt, generation=1))
        world = world_from_spec(world_spec_for(prompt))              # each side acts in its own copy
        context = model_context(backend, [dict(m) for m in messages])  # the loop appends to it: one per side
        self.stopping = False                    # Stop: the turn ends at this side's next forward
        self.events = act_steps(backend, world, context, config, max_replies=MAX_REPLIES, text_answers=True,
                                should_stop=lambda: self.stopping)
        self.decided: list[Frame] = []           # worker: frames of the generation in progress
        self.done: list[Step] = []               # worker: finished generations, in order
        self.answer: str | None = None
        self.over = False
        # the handler's side
        self.finished = False                    # the display has reached the end of this side
        self.cut = False                         # Stop came before this side's turn was over

    @property
    def name(self) -> str:
        """The side's model, as its picker names it."""
        return self.model

    @property
    def running(self) -> bool:
        return not self.over

    def step(self) -> tuple[list[Step], Frame | None]:
        """Advance to this side's next forward: (generations finished on the way, the frame), the
        frame None once the turn is over."""
        finished = []
        while True:
            try:
                item = next(self.events)
            except StopIteration as done:
                self.answer = (done.value or (None, ""))[0]
                self.over = True
                return finished, None
            if isinstance(item, Step):
                self.done.append(item)
                self.decided = []
                finished.append(item)
                continue
            self.decided.append(item)
            return finished, item

    def stop(self) -> list[Step]:
        """Stopped: the turn's loop is told so and stepped once more, so the generation in progress
        ends as the engine's cancelled step (engine.generate.until_stopped) without another
        forward; returns the steps that ended on the way."""
        self.stopping = True
        self.cut = self.cut or not self.over
        ended: list[Step] = []
        while not self.over:
            finished, _ = self.step()
            ended += finished
        self.decided = []
        return ended

    # -- the handler's side -------------------------------------------------------------------
    def turn_numbers(self, stopped: bool = False) -> Any:
        """This side's turn so far (engine.metrics.combined): the generations shown, and the one in progress."""
        parts = [s.result.stats for s in self.steps if s.result is not None]
        if self.pending and self.view.frames:
            parts.append(numbers(self.view.frames, self.view.ends or Ends.of(self.backend),
                                 "stopped" if stopped else "running"))
        return combined(parts), len(parts)


def answer_html(racer: Racer) -> Markup:
    """A finished side's answer as a person reads it, under its grid: the text of its last reply,
    model text escaped (the tool calls before it are in the grid's generations and the table)."""
    calls = sum(1 for step in racer.steps if step.call is not None and step.call.get("name") != FINISH)
    made = f" after {calls} tool call(s)" if calls else ""
    if racer.answer:
        return Markup('<div class="dp-answer-text" data-side="{}"><b>Answer{}:</b> {}</div>').format(
            racer.name, made, racer.answer)
    why = "stopped before it answered" if racer.cut else "no answer in text"
    return Markup('<div class="dp-answer-text" data-side="{}"><i>{}{}</i></div>').format(racer.name, why, made)


def encode_prompt(backend: Any, messages: list[dict[str, str]]) -> list[int]:
    """Prompt ids, or ConfigError when the tokenizer cannot read the text."""
    try:
        return list(backend.encode_chat(messages))
    except ValueError as exc:
        raise ConfigError(f"The tokenizer of {backend.name} cannot read this prompt ({exc}).") from exc


TABLE_NUMBERS = ("seconds", "first_token_s", "nfe", "new_tokens", "tokens_per_forward", "tokens_per_s", "stop_reason")


def stats_table(racers: list[Racer], stopped: bool = False) -> str:
    """Per model, the numbers of its whole turn (engine/metrics.py, under its labels; live: the
    frames shown so far), each row saying what it covers."""
    rows = []
    for racer in racers:
        shown, count = racer.turn_numbers(stopped)
        values = formatted(shown)
        cells = [values[k] for k in TABLE_NUMBERS]
        state = "stopped" if racer.cut else "finished" if racer.finished else "running"
        rows.append(Markup('<tr data-side-state="{}"><th>{}<br><small>{} · {}</small></th>{}</tr>').format(
            state, racer.name, scope_label("turn", count), state,
            Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    head = ("model", *(LABELS[k] for k in TABLE_NUMBERS))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    caption = Markup("<caption>Each model's whole turn: its tool calls and its answer, added up</caption>")
    return str(Markup('<table class="dp-table">{}<tr>{}</tr>{}</table>').format(
        caption, header, Markup("").join(rows)))


class CompareHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second

    def run(self, prompt: str, diffusion_model: str, baseline_model: str, *, settings: Mapping[str, Any],
            key: tuple = (None, "compare")) -> Generator[tuple, None, None]:
        """Race the two models on `prompt`; yields one tuple of COMPARE_OUTPUTS per update."""
        prompt = prompt or ""
        if not prompt.strip():
            raise user_error("The prompt is empty: type what both models should answer.")
        try:
            read = read_settings(settings)
            config = read.config
        except ConfigError as exc:
            raise user_error(str(exc)) from None
        names = [(diffusion_model or "").strip(), (baseline_model or "").strip()]
        if names[0] and names[0] == names[1]:
            raise user_error(f"Both sides are '{names[0]}': pick two different models to compare.")
        try:
            with ExitStack() as held:
                backends = {}
                for name in sorted(names):      # a fixed order, so two races never wait on each other
                    backends[name] = held.enter_context(self.ctx.registry.using(name))
                messages = [{"role": "user", "content": prompt}]
                racers = []
                for name in names:
                    encode_prompt(backends[name], messages)      # a prompt its tokenizer cannot read: a sentence
                    racers.append(Racer(name, backends[name], messages, config, prompt))
                with Run(self.ctx.runs, key, read.pace_ms, self.updates_per_second,
                         parts=lambda frame, lane: racers[lane].part_count(frame)) as run:
                    yield from self._race(run, racers, config, prompt)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    @staticmethod
    def _panels(run: Run, racers: list[Racer], lane: int = -1, part: tuple[int, int] | None = None) -> dict[str, str]:
        """Both panels by name: a side Stop cut as stopped, a finished one as finished, the others
        live or replay (app/runs.py `mode`); a finished side's answer as text under its grid."""
        out = []
        for index, racer in enumerate(racers):
            racer.view.generations = len(racer.steps) if racer.finished else 0
            mode = "stopped" if racer.cut else "done" if racer.finished else run.mode(index)
            panel = racer.view.panel(mode, part=part if index == lane else None, behind=run.behind(index))
            out.append(panel + str(answer_html(racer)) if racer.finished else panel)   # both HTML already
        return dict(zip(("panel_diffusion", "panel_baseline"), out, strict=True))

    def _race(self, run: Run, racers: list[Racer], config: GenerationConfig, prompt: str
              ) -> Generator[tuple, None, None]:
        def work(run: Run) -> None:
            while any(racer.running for racer in racers):
                for lane, racer in enumerate(racers):   # interleaved: one forward each, in turn
                    if run.should_stop():
                        for side, cut in enumerate(racers):
                            for step in cut.stop():
                                run.put("step", step, side)
                        return
                    if racer.running:
                        steps, frame = racer.step()
                        for step in steps:
                            run.put("step", step, lane)
                        if frame is not None:
                            run.frame(frame, lane)
                        else:
                            run.end_lane(lane)

        def keep(cut: bool) -> int | None:
            self._finish(racers, stopped=cut or any(not r.finished for r in racers))
            return self._save(racers, config, prompt)

        run.start(work, name="compare-race")
        # the last race's results go at once
        yield COMPARE_OUTPUTS.update(panel_diffusion=EMPTY_PANEL, panel_baseline=EMPTY_PANEL, table="", race=None,
                                     status="Racing…")
        with Watch(run, lambda frame, lane: racers[lane].read_frame(frame),
                   lambda step, lane: racers[lane].read_step(step), keep) as watch:
            for event in watch.events():
                if event.kind == "frame" and event.show:
                    yield COMPARE_OUTPUTS.update(**self._panels(run, racers, event.lane, (event.part, event.parts)),
                                                 table=stats_table(racers))
                elif event.kind == "lane_done":
                    racers[event.lane].finished = True   # this side is done the moment its end is shown
                    if not run.stop_requested:
                        yield COMPARE_OUTPUTS.update(**self._panels(run, racers), table=stats_table(racers))
        stopped = any(not r.finished for r in racers)
        saved = watch.save()
        if stopped:
            status = "Stopped. What each model decided is kept (stored as stopped)."
        else:
            (first, first_count), (second, second_count) = (racer.turn_numbers() for racer in racers)
            speedup = f"{second.seconds / first.seconds:.2f}x" if first.seconds > 0 else "–"
            status = ("Stopped the replay: both turns were already complete. " if run.stop_requested else "")
            status += (f"{scope_label('turn')}: {racers[0].name} took {first.seconds:.3f} s of model time "
                      f"({first_count} generation(s)), {racers[1].name} {second.seconds:.3f} s "
                      f"({second_count}) ({speedup} as fast).")
        if saved is not None:
            status += f" Stored as comparison #{saved}."
        panels = {**self._panels(run, racers), "table": stats_table(racers, stopped)}
        yield COMPARE_OUTPUTS.update(**panels, status=status)
        # then the plot: for a long answer it takes a while to build
        sides = [(racer.name, [(s.result.frames, ends_of(s.result, config)) for s in racer.steps
                               if s.result is not None]) for racer in racers]
        yield COMPARE_OUTPUTS.update(**panels, race=turn_race_plot(sides, scope=scope_label("turn")), status=status)

    @staticmethod
    def _finish(racers: list[Racer], stopped: bool) -> None:
        """Every side ends with its steps read (a cancelled one where Stop came first), its view final."""
        for racer in racers:
            if stopped or racer.running:
                racer.stop()
            for step in racer.done[len(racer.steps):]:
                racer.read_step(step)
            racer.finished = True

    def _save(self, racers: list[Racer], config: GenerationConfig, prompt: str) -> int | None:
        """The pair as one conversation: the prompt, then each model's turn with its frames."""
        if not any(r.done for r in racers):
            return None                               # stopped before the first forward: nothing to keep
        names = [r.name for r in racers]
        exchange = Exchange(
            "compare", title_of(prompt), f"{names[0]} vs {names[1]}",
            meta={"diffusion": names[0], "baseline": names[1], "config": config.to_dict(),
                  "schedule": "interleaved: one forward each in turn, one thread, per-model clocks",
                  "answers": {r.name: r.answer for r in racers}},
            turns=[TurnRecord("user", prompt)] + [t for r in racers for t in step_turns(r.done, config, r.name)])
        return save(self.ctx, exchange, "This comparison")


def ends_of(result: Any, config: GenerationConfig) -> Ends:
    return Ends.of_result(result, config.gen_length)


# -- layout -----------------------------------------------------------------------------------
def build(ctx: AppContext) -> dict[str, Any]:
    """The Compare tab, inside the caller's gr.Tab; returns the two model pickers."""
    compare = CompareHandlers(ctx)
    gr.Markdown(FAIRNESS_NOTE, elem_id="fairness")
    with gr.Row():
        diffusion = model_picker(ctx.registry.choices(("diffusion",)), ctx.default_model, "Diffusion model",
                                 "compare-diffusion")
        baseline = model_picker(ctx.registry.choices(("autoregressive",)), ctx.baseline_model, "AR baseline",
                                "compare-baseline")
    prompt = gr.Textbox(label="Prompt for both models", lines=1, max_lines=8, elem_id="compare-prompt",
                        placeholder="Enter races, Shift+Enter starts a new line")
    with gr.Row():
        race_btn = gr.Button("Race", variant="primary", elem_id="race")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="compare-stop")
    # the race and both answers (each under its grid) on the first screen; the numbers, the
    # examples and the settings follow
    with gr.Row():
        panel_a = gr.HTML(EMPTY_PANEL, label="Diffusion", elem_id="compare-diffusion-panel")
        panel_b = gr.HTML(EMPTY_PANEL, label="AR baseline", elem_id="compare-baseline-panel")
    status = gr.Markdown(elem_id="compare-status")
    table = gr.HTML(elem_id="compare-table")
    race = gr.Plot(label="Tokens decided over time")
    card_md, examples = card_examples("compare", card_for(ctx.default_model, ctx.registry.listing()))
    with gr.Accordion("Generation settings", open=False, elem_id="compare-settings"):
        controls = generation_controls("compare", DEFAULTS, ctx=ctx)
    controls["scaffold"] = gr.Checkbox(False, label="Scaffolded tool call (both models)", elem_id="compare-scaffold",
                                       info=SCAFFOLD_INFO)
    handler = with_settings(compare.run, "compare", list(controls))
    inputs = [prompt, diffusion, baseline, *controls.values()]
    parts = {"panel_diffusion": panel_a, "panel_baseline": panel_b, "table": table, "race": race, "status": status}
    outputs = COMPARE_OUTPUTS.components(parts)
    race_btn.click(handler, inputs, outputs, api_name="compare", **GENERATE)
    prompt.submit(handler, inputs, outputs, api_visibility="private", **GENERATE)
    stop_btn.click(stopper(ctx.runs, "compare"), None, None, queue=False, api_visibility="private")
    diffusion.change(lambda name: card_update(ctx, name), [diffusion], [card_md, examples],
                     api_visibility="private", **QUIET)
    follow_noise_models(ctx, diffusion, controls)      # DiffusionGemma: its own canvas and schedule
    examples.click(lambda sample: sample[0], [examples], [prompt], api_visibility="private", **QUIET)
    return {**parts, "diffusion": diffusion, "baseline": baseline}
