"""`python -m bench pages`: what the shop's and the office's web pages cost an agent task, per
WebMCP mode, with no model in the way.

The oracle (world/oracle.py) answers every step at once, so an episode's seconds are the pages'
own: opening them for the task (start-over in place), reading the tool list each step, and each
call's browser time. Every mode asked runs in this one process with a browser of its own,
interleaved task by task (the order alternating), so a busy machine weighs on each alike. Per
mode: successes (the oracle's: every task, or the pages broke something), browser ms per call
(median, p95), and the medians of opening, of the task after opening, and of the whole task, in
ms: what the pages add to a model's task time.

    python -m bench pages [--tasks 20] [--task-set templates] [--modes native polyfill] [--json]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from bench.episodes import milliseconds
from bench.report import print_report
from engine.trace import GenerationConfig
from world.agent import run_episode
from world.oracle import OracleModel
from world.task_sets import TASK_SETS
from world.webmcp.driver import CHROMIUM, launch_flags
from world.webmcp.venue import PageVenue

MODES = ("native", "polyfill")


def run_pages_benchmark(tasks: list[dict[str, Any]], modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    """Each task through the pages in each mode, interleaved; the summary per mode."""
    from playwright.sync_api import sync_playwright

    config = GenerationConfig()
    playwright = sync_playwright().start()          # one playwright (its sync API), a browser per mode
    venues = {}
    try:
        for mode in modes:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=launch_flags(mode))
            venues[mode] = PageVenue(browser=browser, webmcp=mode).__enter__()
        episodes: dict[str, list[Any]] = {mode: [] for mode in modes}
        for venue in venues.values():           # warm-up: first loads, compiles; stays out of the numbers
            run_episode(None, tasks[0], config, generate_fn=OracleModel(tasks[0]), system=None, pages=venue)
            venue.driver.call_ms.clear()
        for k, task in enumerate(tasks):
            for mode in (modes if k % 2 == 0 else modes[::-1]):
                episodes[mode].append(run_episode(None, task, config, generate_fn=OracleModel(task), system=None,
                                                  pages=venues[mode]))
        return {"tasks": len(tasks), "modes": {mode: summary(episodes[mode], venues[mode]) for mode in modes}}
    finally:
        for venue in venues.values():
            venue.__exit__(None, None, None)
            venue.browser.close()
        playwright.stop()


def summary(episodes: list[Any], venue: PageVenue) -> dict[str, Any]:
    def median_ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    return {"webmcp": venue.driver.webmcp, "successes": sum(t.success for t in episodes),
            "browser_ms_per_call": milliseconds(venue.driver.call_ms),
            "median_open_ms": median_ms([t.open_s for t in episodes]),
            "median_after_open_ms": median_ms([t.seconds - t.open_s for t in episodes]),
            "median_task_ms": median_ms([t.seconds for t in episodes]),
            "calls_per_task": round(len(venue.driver.call_ms) / max(len(episodes), 1), 2),
            "refused": len(venue.driver.refused), "page_errors": len(venue.driver.page_errors)}


def table(report: dict[str, Any]) -> str:
    head = f"{'webmcp':<10} {'ok':>7} {'ms/call med':>11} {'p95':>7} {'open ms':>8} {'after open':>10} {'task ms':>8}"
    rows = [head, "-" * len(head)]
    for mode, m in report["modes"].items():
        calls = m["browser_ms_per_call"]
        rows.append(f"{mode:<10} {m['successes']:>3}/{report['tasks']:<3} {calls['median']:>11.1f} "
                    f"{calls['p95']:>7.1f} {m['median_open_ms']:>8.1f} {m['median_after_open_ms']:>10.1f} "
                    f"{m['median_task_ms']:>8.1f}")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench pages", description="The web pages' own cost per "
                                     "agent task, per WebMCP mode (the oracle, no model).")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--task-set", choices=tuple(TASK_SETS), default="templates")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    def report() -> dict[str, Any]:
        tasks = [t for t in TASK_SETS[args.task_set][0]() if t.get("domain") != "document"]
        if not 1 <= args.tasks <= len(tasks):
            raise ValueError(f"--tasks must be between 1 and {len(tasks)}, got {args.tasks}.")
        return run_pages_benchmark(tasks[: args.tasks], tuple(args.modes))

    return print_report(report, args.json, table)
