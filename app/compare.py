"""The Compare tab: one prompt to a diffusion model and an AR baseline, streamed side by side.

Fairness: both runs happen in ONE worker thread, interleaved: one forward of the diffusion model,
then one forward of the AR model, and so on until both are done. They never compute at the same
time, so neither slows the other down by sharing cores or the GPU, and each model's clock counts
only the time spent inside its own forwards (its frames' elapsed_s are rewritten to that clock).
The two answers are stored together as one "compare" conversation.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator
from contextlib import ExitStack
from typing import Any

import gradio as gr
from markupsafe import Markup

from engine.generate import generate, summarize
from engine.trace import ConfigError, GenerationConfig, Result
from sessions import StoreError
from visualizer import race_plot

from .chat import encode_prompt, failure
from .live import TraceView
from .messages import user_error, warn
from .settings import config_from_controls
from .state import AppContext
from .throttle import Throttle

COMPARE_OUTPUTS = ("panel_diffusion", "panel_baseline", "table", "race", "status")
FAIRNESS_NOTE = (
    "**How the race shares the machine:** both models run in one worker thread, *interleaved*: one forward "
    "of the diffusion model, then one forward of the AR baseline, in turn, until both finish. They never "
    "compute at the same time, so neither steals cores or GPU time from the other, and each model's clock "
    "counts only its own forwards. Wall time, time to first token and tokens/s below are those per-model clocks."
)


class Racer:
    """One side of the race: its generator, its own clock and its frames."""

    def __init__(self, name: str, backend: Any, frames: Generator, view: TraceView) -> None:
        self.name, self.backend, self.frames, self.view = name, backend, frames, view
        self.own_s = 0.0
        self.result: Result | None = None

    @property
    def running(self) -> bool:
        return self.result is None

    def step(self) -> None:
        """One forward, timed on this model's clock."""
        started = time.perf_counter()
        try:
            frame = next(self.frames)
        except StopIteration as done:
            self.own_s += time.perf_counter() - started
            stop_reason = done.value.stats.stop_reason if done.value is not None else "length"
            self.result = summarize(self.backend, self.view.frames, self.own_s, stop_reason)
            self.view.finish(self.result)
            return
        self.own_s += time.perf_counter() - started
        self.view.add(dataclasses.replace(frame, elapsed_s=self.own_s), self.backend)

    def stop(self) -> Result:
        self.frames.close()
        if self.result is None:
            self.result = summarize(self.backend, self.view.frames, self.own_s, "cancelled")
        return self.result


def _number(value: float | None, unit: str = "", digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}{unit}"


def stats_table(racers: list[Racer]) -> str:
    """Per model: time, first token, NFE, tokens, tokens per forward, tokens/s (live while running)."""
    rows = []
    for r in racers:
        frames = r.view.frames
        decided = sum(len(f.committed) for f in frames)
        if r.result is not None:
            s = r.result.stats
            cells = [_number(s.seconds, " s"), _number(s.first_token_s, " s"), str(s.nfe), str(s.new_tokens),
                     _number(s.tokens_per_forward, "", 2), _number(s.tokens_per_s, "", 1), s.stop_reason]
        else:
            nfe = frames[-1].nfe if frames else 0
            per_forward = decided / nfe if nfe else None
            per_second = decided / r.own_s if r.own_s else None
            cells = [_number(r.own_s, " s"), "…", str(nfe), f"{decided} decided", _number(per_forward, "", 2),
                     _number(per_second, "", 1), "running"]
        rows.append(Markup("<tr><th>{}</th>{}</tr>").format(
            r.name, Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    head = ("model", "time (own)", "first token", "NFE", "tokens", "tokens/forward", "tokens/s", "stopped by")
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table"><tr>{}</tr>{}</table>').format(header, Markup("").join(rows)))


class CompareHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second

    def run(self, prompt: str, diffusion_model: str, baseline_model: str, gen_length: Any, block_size: Any,
            steps: Any, sampler: str, threshold: Any, temperature: Any, seed: Any) -> Generator[tuple, None, None]:
        """Race the two models on `prompt`; yields one tuple of COMPARE_OUTPUTS per update."""
        prompt = prompt or ""
        if not prompt.strip():
            raise user_error("The prompt is empty: type what both models should answer.")
        try:
            config = config_from_controls(gen_length, block_size, steps, sampler, threshold, temperature, seed)
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
                    frames = generate(backend, encode_prompt(backend, messages), config)
                    racers.append(Racer(name, backend, frames, TraceView.for_run(backend, config, name, prompt)))
                yield from self._race(racers, config, prompt)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001
            raise failure(exc) from None

    def _race(self, racers: list[Racer], config: GenerationConfig, prompt: str) -> Generator[tuple, None, None]:
        throttle = Throttle(self.updates_per_second)
        try:
            while any(r.running for r in racers):
                for r in racers:                # interleaved: one forward each, in turn
                    if r.running:
                        r.step()
                if throttle.ready():
                    yield (racers[0].view.panel("live"), racers[1].view.panel("live"), stats_table(racers),
                           gr.skip(), gr.skip())
        except GeneratorExit:
            for r in racers:
                r.stop()
            self._save(racers, config, prompt)
            raise
        saved = self._save(racers, config, prompt)
        a, b = (r.result.stats for r in racers)
        speedup = f"{b.seconds / a.seconds:.2f}x" if a.seconds > 0 else "–"
        status = f"{racers[0].name} took {a.seconds:.3f} s, {racers[1].name} {b.seconds:.3f} s ({speedup} as fast)."
        if saved is not None:
            status += f" Stored as comparison #{saved}."
        race = race_plot(racers[0].view.frames, racers[1].view.frames, labels=(racers[0].name, racers[1].name))
        yield racers[0].view.panel("done"), racers[1].view.panel("done"), stats_table(racers), race, status

    def _save(self, racers: list[Racer], config: GenerationConfig, prompt: str) -> int | None:
        """The pair as one conversation: the prompt, then each model's answer with its frames."""
        store = self.ctx.store
        if store is None:
            warn(f"This comparison was not saved: {self.ctx.store_problem}")
            return None
        names = [r.name for r in racers]
        try:
            cid = store.create_conversation(
                "compare", " ".join(prompt.split())[:80], model=f"{names[0]} vs {names[1]}",
                meta={"diffusion": names[0], "baseline": names[1], "config": config.to_dict(),
                      "schedule": "interleaved: one forward each in turn, one thread, per-model clocks"})
            store.add_turn(cid, "user", prompt)
            for r in racers:
                store.add_turn(cid, "assistant", r.result.text, generation=r.result, config=config, model=r.name)
            return cid
        except StoreError as exc:
            warn(f"This comparison was not saved: {exc}")
            return None
