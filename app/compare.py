"""The Compare tab: one prompt to a diffusion model and an AR baseline, streamed side by side.

Fairness: both runs happen in ONE worker thread, interleaved: one forward of the diffusion model,
then one forward of the AR model, and so on until both are done. They never compute at the same
time, so neither slows the other down by sharing cores or the GPU, and each model's clock counts
only the time spent inside its own forwards (its frames' elapsed_s are rewritten to that clock).
The two answers are stored together as one "compare" conversation. The race computes in the
run path's worker (app/runs.py); the handler draws both sides at the chosen pace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Mapping
from contextlib import ExitStack
from typing import Any

import gradio as gr
from markupsafe import Markup

from engine.generate import generate
from engine.metrics import LABELS, Ends, formatted, numbers
from engine.result import summarize
from engine.trace import ConfigError, GenerationConfig, Result
from visualizer import race_plot
from world.format import TOOL_CALLS

from .cards import card_for
from .chat import EMPTY_PANEL, failure
from .live import TraceView
from .messages import user_error
from .runs import Exchange, Run, Turn, save, title_of
from .settings import DEFAULTS, config_from_settings
from .state import AppContext
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

COMPARE_OUTPUTS = ("panel_diffusion", "panel_baseline", "table", "race", "status")
SCAFFOLD_INFO = ("Both answers are one tool call whose fixed text (tags, keys, quotes, braces) is known in advance: "
                 "the diffusion model finds it pre-filled and decodes only the values; the AR baseline appends each "
                 "known run in one forward (jump-forward) and decodes the values token by token. Like with like.")
FAIRNESS_NOTE = (
    "**How the race shares the machine:** both models run in one worker thread, *interleaved*: one forward "
    "of the diffusion model, then one forward of the AR baseline, in turn, until both finish. They never "
    "compute at the same time, so neither steals cores or GPU time from the other, and each model's clock "
    "counts only its own forwards. Model time, first answer token and tokens/s below are those per-model clocks."
)


class Racer:
    """One side of the race: its generator and its own clock (worker side), its view (handler side)."""

    def __init__(self, name: str, backend: Any, frames: Generator, view: TraceView) -> None:
        self.name, self.backend, self.frames, self.view = name, backend, frames, view
        self.decided: list = []                  # the frames as the worker produced them
        self.own_s = 0.0
        self.result: Result | None = None

    @property
    def running(self) -> bool:
        return self.result is None

    def step(self) -> Any:
        """One forward, timed on this model's clock; the frame, or None once the answer is complete."""
        started = time.perf_counter()
        try:
            frame = next(self.frames)
        except StopIteration as done:
            self.own_s += time.perf_counter() - started
            stop_reason = done.value.stats.stop_reason if done.value is not None else "length"
            self.result = summarize(self.backend, self.decided, self.own_s, stop_reason, self.view.gen_length)
            return None
        self.own_s += time.perf_counter() - started
        frame = dataclasses.replace(frame, elapsed_s=self.own_s)
        self.decided.append(frame)
        return frame

    def stop(self) -> Result:
        self.frames.close()
        if self.result is None:
            self.result = summarize(self.backend, self.decided, self.own_s, "cancelled", self.view.gen_length)
        return self.result


def encode_prompt(backend: Any, messages: list[dict[str, str]]) -> list[int]:
    """Prompt ids, or ConfigError when the tokenizer cannot read the text."""
    try:
        return list(backend.encode_chat(messages))
    except ValueError as exc:
        raise ConfigError(f"The tokenizer of {backend.name} cannot read this prompt ({exc}).") from exc


TABLE_NUMBERS = ("seconds", "first_token_s", "nfe", "new_tokens", "tokens_per_forward", "tokens_per_s", "stop_reason")


def stats_table(racers: list[Racer], stopped: bool = False) -> str:
    """Per model, the numbers of engine/metrics.py under its labels (live: from the frames so far)."""
    rows = []
    for racer in racers:
        if racer.result is not None:
            shown = racer.result.stats
        else:
            shown = numbers(racer.view.frames, racer.view.ends or Ends.of(racer.backend),
                            "stopped" if stopped else "running")
        values = formatted(shown)
        cells = [values[k] for k in TABLE_NUMBERS]
        rows.append(Markup("<tr><th>{}</th>{}</tr>").format(
            racer.name, Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    head = ("model", *(LABELS[k] for k in TABLE_NUMBERS))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table"><tr>{}</tr>{}</table>').format(header, Markup("").join(rows)))


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
            config = config_from_settings(settings)
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
                    backend = backends[name]
                    frames = generate(backend, encode_prompt(backend, messages), config, TOOL_CALLS)
                    racers.append(Racer(name, backend, frames, TraceView.for_run(backend, config, name, prompt)))
                with Run(self.ctx.runs, key, settings.get("pace_ms", 0), self.updates_per_second) as run:
                    yield from self._race(run, racers, config, prompt)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    def _race(self, run: Run, racers: list[Racer], config: GenerationConfig, prompt: str
              ) -> Generator[tuple, None, None]:
        def work(run: Run) -> None:
            while any(racer.running for racer in racers):
                for lane, racer in enumerate(racers):   # interleaved: one forward each, in turn
                    if racer.running:
                        frame = racer.step()
                        if frame is not None:
                            run.frame(frame, lane)

        run.start(work, name="compare-race")
        yield EMPTY_PANEL, EMPTY_PANEL, "", None, "Racing…"        # the last race's results go at once
        try:
            for event in run.events():
                if event.kind == "frame":
                    racers[event.lane].view.add(event.value, racers[event.lane].backend)
                    if event.show:
                        yield (racers[0].view.panel("live"), racers[1].view.panel("live"), stats_table(racers),
                               gr.skip(), gr.skip())
                elif event.kind == "stopped":
                    break
        except GeneratorExit:
            run.close()
            self._finish(racers, stopped=True)
            self._save(racers, config, prompt)
            raise
        finally:
            run.close()
        stopped = any(r.result is None or r.result.stats.stop_reason == "cancelled" for r in racers)
        self._finish(racers, stopped)
        saved = self._save(racers, config, prompt)
        mode = "stopped" if stopped else "done"
        if stopped:
            status = "Stopped. What each model decided is kept (stored as stopped)."
        else:
            first, second = (racer.result.stats for racer in racers)
            speedup = f"{second.seconds / first.seconds:.2f}x" if first.seconds > 0 else "–"
            status = (f"{racers[0].name} took {first.seconds:.3f} s, {racers[1].name} {second.seconds:.3f} s "
                      f"({speedup} as fast).")
        if saved is not None:
            status += f" Stored as comparison #{saved}."
        panels = racers[0].view.panel(mode), racers[1].view.panel(mode), stats_table(racers)
        yield *panels, gr.skip(), status
        # then the plot: for a long answer it takes a while to build
        yield *panels, race_plot(racers[0].view.frames, racers[1].view.frames, labels=(racers[0].name, racers[1].name),
                                 ends=(racers[0].view.ends, racers[1].view.ends)), status

    @staticmethod
    def _finish(racers: list[Racer], stopped: bool) -> None:
        """Every side ends with a Result (cancelled when Stop came first), its view finished."""
        for racer in racers:
            if stopped or racer.result is None:
                racer.stop()
            racer.view.finish(racer.result)

    def _save(self, racers: list[Racer], config: GenerationConfig, prompt: str) -> int | None:
        """The pair as one conversation: the prompt, then each model's answer with its frames."""
        if not any(r.decided for r in racers):
            return None                               # stopped before the first forward: nothing to keep
        names = [r.name for r in racers]
        exchange = Exchange(
            "compare", title_of(prompt), f"{names[0]} vs {names[1]}",
            meta={"diffusion": names[0], "baseline": names[1], "config": config.to_dict(),
                  "schedule": "interleaved: one forward each in turn, one thread, per-model clocks"},
            turns=[Turn("user", prompt)] + [Turn("assistant", r.result.text, generation=r.result, config=config,
                                                 model=r.name) for r in racers])
        return save(self.ctx, exchange, "This comparison")


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
    card_md, examples = card_examples("compare", card_for(ctx.default_model, ctx.registry.listing()))
    prompt = gr.Textbox(label="Prompt for both models", lines=1, max_lines=8, elem_id="compare-prompt",
                        placeholder="Enter races, Shift+Enter starts a new line")
    with gr.Accordion("Generation settings", open=False, elem_id="compare-settings"):
        controls = generation_controls("compare", DEFAULTS, ctx=ctx)
    controls["scaffold"] = gr.Checkbox(False, label="Scaffolded tool call (both models)", elem_id="compare-scaffold",
                                       info=SCAFFOLD_INFO)
    with gr.Row():
        race_btn = gr.Button("Race", variant="primary", elem_id="race")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="compare-stop")
    with gr.Row():
        panel_a = gr.HTML(EMPTY_PANEL, label="Diffusion", elem_id="compare-diffusion-panel")
        panel_b = gr.HTML(EMPTY_PANEL, label="AR baseline", elem_id="compare-baseline-panel")
    table = gr.HTML(elem_id="compare-table")
    race = gr.Plot(label="Tokens decided over time")
    status = gr.Markdown(elem_id="compare-status")
    handler = with_settings(compare.run, "compare", list(controls))
    inputs = [prompt, diffusion, baseline, *controls.values()]
    outputs = [panel_a, panel_b, table, race, status]
    race_btn.click(handler, inputs, outputs, api_name="compare", **GENERATE)
    prompt.submit(handler, inputs, outputs, api_visibility="private", **GENERATE)
    stop_btn.click(stopper(ctx.runs, "compare"), None, None, queue=False, api_visibility="private")
    diffusion.change(lambda name: card_update(ctx, name), [diffusion], [card_md, examples],
                     api_visibility="private", **QUIET)
    examples.click(lambda sample: sample[0], [examples], [prompt], api_visibility="private", **QUIET)
    return {"diffusion": diffusion, "baseline": baseline}
