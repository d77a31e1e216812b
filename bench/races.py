"""`python -m bench races`: the same Compare race run N times through the Compare tab's own handler
(app/compare.py), the page left out, to see whether its numbers mean something.

Each race is stored as the tab stores it; each side's model time is read back from that row:
engine.metrics.combined over the side's generations, the number the tab's table and status line
show. Per side: every race's seconds, the median, and the spread (max / median, median / min).
Issue 46's target: each race within 1.5x of its side's median, on a quiet machine. The models are
warmed first, as the app warms them at launch (app/warmup.py): unwarmed, the first race's
diffusion model time was 1.9x its median on a quiet machine (first-call costs counted as model
time), and the page never shows that race. After the warm-up the first race counts as any other.

    python -m bench races [--races 5] [--prompt "..."] [--diffusion sprout-bd] [--baseline sprout-ar] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import print_report, seconds_line

TARGET_SPREAD = 1.5


def run_races(races: int, prompt: str, diffusion: str, baseline: str, device: str = "cpu",
              preloaded: dict[str, Any] | None = None) -> dict[str, Any]:
    """`races` races of `prompt`; `preloaded`: backends by name instead of loading (the tests')."""
    from app.compare import CompareHandlers
    from app.settings import DEFAULTS
    from app.state import AppContext
    from app.warmup import warm_up
    from engine.metrics import combined

    if races < 2:
        raise ValueError(f"--races must be at least 2 to show a spread, got {races}.")
    with tempfile.TemporaryDirectory() as folder:
        ctx = AppContext.create(Path(folder) / "races.db", model=diffusion, baseline=baseline, device=device,
                                watch=False, preloaded=preloaded)
        try:
            warm_up(ctx, block=True)          # as launch.py does before the page takes a request
            handlers = CompareHandlers(ctx)
            settings = {**DEFAULTS, "pace_ms": 0}         # drawn as it computes: the page's pace is not timed
            seconds: dict[str, list[float]] = {diffusion: [], baseline: []}
            walls = []
            for _ in range(races):
                started = time.perf_counter()
                for _update in handlers.run(prompt, diffusion, baseline, settings=settings):
                    pass
                walls.append(time.perf_counter() - started)
                stored = ctx.store.get_conversation(ctx.store.list_conversations()[0]["id"])
                for name in seconds:
                    parts = [t["generation"].stats for t in stored["turns"]
                             if t["model"] == name and t["generation"] is not None]
                    seconds[name].append(combined(parts).seconds)
        finally:
            ctx.close()
    sides = {}
    for name, values in seconds.items():
        median = statistics.median(values)
        # seconds to the microsecond, so that the ratios can be worked out again from the report
        # (a fake model's race takes about a millisecond); the verdict is read off the ratios as
        # the report shows them, the one definition of "within the target"
        sides[name] = {"model_s": [round(v, 6) for v in values], "median_s": round(median, 6),
                       "max_over_median": round(max(values) / median, 3),
                       "median_over_min": round(median / min(values), 3)}
        sides[name]["within_target"] = max(sides[name]["max_over_median"], sides[name]["median_over_min"]) \
            <= TARGET_SPREAD
    return {"prompt": prompt, "races": races, "sides": sides, "wall_s": [round(w, 3) for w in walls],
            "target_spread": TARGET_SPREAD}


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['races']} races of {report['prompt']!r} (model seconds per race; target: each within "
             f"{report['target_spread']}x of its side's median)", ""]
    for name, side in report["sides"].items():
        figures = (f"median {side['median_s']:.3f}  max/median {side['max_over_median']:.2f}  "
                   f"median/min {side['median_over_min']:.2f}")
        lines.append(seconds_line(name, side["model_s"], 16, figures, side["within_target"]))
    lines.append("wall seconds per race (loading included): " + " ".join(f"{w:.2f}" for w in report["wall_s"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    cli = argparse.ArgumentParser(prog="python -m bench races", description=__doc__.split("\n\n")[0])
    cli.add_argument("--races", type=int, default=5)
    cli.add_argument("--prompt", default="Add 2 pink hoodies in size XL.")
    cli.add_argument("--diffusion", default="sprout-bd")
    cli.add_argument("--baseline", default="sprout-ar")
    cli.add_argument("--device", default="cpu")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    return print_report(lambda: run_races(args.races, args.prompt, args.diffusion, args.baseline, args.device),
                        args.json, table)
