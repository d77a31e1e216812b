"""Model time the display cannot inflate (app/turnstile.py): a fake model whose every forward
takes a fixed amount of CPU work, consumed by a display that is busy for longer than a forward
at every frame. With the turnstile no draw overlaps a forward and the measured model time is the
forwards' own time; with it let open (the way runs went before), the same display lands inside
the forwards and stretches them.

The forward and the display both spin in Python, so without the turnstile they share the
interpreter lock (and on a small CPU the cores) for as long as they overlap. Other load on the
machine stretches both runs alike, so the checks compare intervals and ratios, not seconds."""

from __future__ import annotations

import time

from app.runs import Run, RunBoard
from engine.generate import run as generate_all
from engine.trace import GenerationConfig
from tests.fakes import FakeDiffusionBackend

FORWARD_S = 0.02            # CPU seconds of work in each fake forward
DRAW_S = 0.03               # CPU seconds the display spends on every frame it is handed
CONFIG = GenerationConfig(gen_length=16, block_size=4, steps=4, sampler="low_confidence")   # 16 forwards


def spin(seconds: float) -> None:
    """Busy for `seconds` of this thread's CPU time (time.thread_time), holding the GIL."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class FixedForward(FakeDiffusionBackend):
    """Every forward is FORWARD_S of CPU work; `spans` records when each one ran (wall clock)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[float, float]] = []

    def denoise(self, canvas, block):
        started = time.perf_counter()
        spin(FORWARD_S)
        logits = super().denoise(canvas, block)
        self.spans.append((started, time.perf_counter()))
        return logits


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in a for y0, y1 in b)


def race_display(turnstile: bool) -> dict:
    """A generation shown at pace 0 by a display that spins DRAW_S per frame."""
    backend = FixedForward("abcdefghijklmnop")
    run = Run(RunBoard(), ("test", "model-time"), pace_ms=0, updates_per_second=1e9)
    if not turnstile:
        run.turnstile.open()                      # computing and drawing may overlap
    run.start(lambda r: generate_all(backend, backend.encode_chat([{"role": "user", "content": "hi"}]), CONFIG,
                                     on_frame=r.frame))
    draws, result = [], None
    with run:
        for event in run.events():
            if event.kind == "frame":
                started = time.perf_counter()
                spin(DRAW_S)                      # a slow page: longer than one forward
                draws.append((started, time.perf_counter()))
            elif event.kind == "done":
                result = event.value
    forwards = sum(end - start for start, end in backend.spans)
    return {"model_s": result.stats.seconds, "nfe": result.stats.nfe, "forwards_s": forwards,
            "draws_s": sum(end - start for start, end in draws), "draws": len(draws),
            "overlap_s": overlap(backend.spans, draws)}


def test_a_busy_display_does_not_stretch_model_time_with_the_turnstile():
    shielded = race_display(turnstile=True)
    exposed = race_display(turnstile=False)
    assert shielded["nfe"] == 16 and shielded["draws"] == 16              # every frame was drawn, slowly
    # with the turnstile no draw runs during a forward, and model time is the forwards' own
    # (plus the sampler between them), none of the display's
    assert shielded["overlap_s"] == 0.0, shielded
    assert shielded["forwards_s"] <= shielded["model_s"] < shielded["forwards_s"] + 0.5 * shielded["draws_s"], shielded
    # without it the display's work overlaps the forwards and stretches them (about 2x on one
    # interpreter), and model time with them: the test fails if the turnstile does nothing
    assert exposed["overlap_s"] > 0.2 * exposed["draws_s"], exposed
    assert shielded["model_s"] < 0.75 * exposed["model_s"], (shielded, exposed)
