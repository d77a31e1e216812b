"""`python -m bench stop`: how long Stop takes in Chat, the Agent tab and Compare, through the
tabs' own handlers (app/chat.py, app/agent_tab.py, app/compare.py; the page left out).

Each trial starts a long answer, lets it draw a few updates, presses Stop (`RunBoard.stop`, what
the button does) and times until the handler's update that says "Stopped" in the status line. Stop is
cooperative: the worker ends at its next forward (app/runs.py), so the time is about one forward
plus the handler's end (the save, the final panel). The models are the tests' fakes
(tests/fakes.py) slowed to `--forward-ms` a forward, standing for a model of that speed whose
answer is long: the bundled twins answer in a few forwards, too soon to be stopped. The target:
every trial under a second, on a quiet machine; a loaded one stretches it (the e2e tests check
only that Stop ends the run, tests/e2e/test_first_contact.py).

    python -m bench stop [--trials 5] [--forward-ms 50] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import print_report, seconds_line

TARGET_S = 1.0
TABS = ("chat", "agent", "compare")
# one token per forward, so an answer lasts long enough to be stopped in its middle
SETTINGS = {"gen_length": 256, "block_size": 8, "steps": 8, "sampler": "low_confidence", "threshold": 0.9,
            "temperature": 0.0, "seed": 0, "pace_ms": 0}
UPDATES_BEFORE_STOP = 4


def slow_backends(forward_ms: float) -> dict[str, Any]:
    """A diffusion and an AR fake (tests/fakes.py) whose every forward sleeps `forward_ms`."""
    from tests.e2e.app_fakes import Slow
    from tests.fakes import FakeARBackend, FakeDiffusionBackend

    text = "word " * 200
    return {"fake-bd": Slow(FakeDiffusionBackend(text, name="fake-bd", max_length=8192), forward_ms / 1000),
            "fake-ar": Slow(FakeARBackend(text, name="fake-ar"), forward_ms / 1000)}


def one_stop(ctx: Any, tab: str, trial: int) -> float:
    """Seconds from Stop to the handler's first update that says "Stopped" in `tab`'s status line
    (what the person reads; Chat's plots come in a later update)."""
    from app.agent_tab import AGENT_OUTPUTS, AgentHandlers
    from app.chat import CHAT_OUTPUTS, ChatHandlers
    from app.compare import COMPARE_OUTPUTS, CompareHandlers

    key = (f"bench-{trial}", tab)
    if tab == "chat":
        stream = ChatHandlers(ctx).submit("Tell me a long story.", [], None, None, None, ctx.default_model, "",
                                          False, settings=SETTINGS, key=key)
    elif tab == "agent":
        stream = AgentHandlers(ctx).run("", "Tell me a long story.", ctx.default_model, 1, settings=SETTINGS, key=key)
    else:
        stream = CompareHandlers(ctx).run("Tell me a long story.", ctx.default_model, ctx.baseline_model,
                                          settings=SETTINGS, key=key)
    for _ in range(UPDATES_BEFORE_STOP):
        next(stream)
    status = {"chat": CHAT_OUTPUTS, "agent": AGENT_OUTPUTS, "compare": COMPARE_OUTPUTS}[tab].index("status")
    started = time.perf_counter()
    if not ctx.runs.stop(key):
        raise RuntimeError(f"the {tab} run ended before Stop: give it a longer answer (--forward-ms)")
    said = None
    for update in stream:
        if said is None and isinstance(update[status], str) and "Stopped" in update[status]:
            said = time.perf_counter() - started
    if said is None:
        raise RuntimeError(f"the {tab} tab never said it stopped")
    return said


def run_stops(trials: int, forward_ms: float, preloaded: dict[str, Any] | None = None) -> dict[str, Any]:
    from app.state import AppContext

    if trials < 1:
        raise ValueError(f"--trials must be at least 1, got {trials}.")
    backends = preloaded or slow_backends(forward_ms)
    with tempfile.TemporaryDirectory() as folder:
        ctx = AppContext.create(Path(folder) / "stop.db", model="fake-bd", baseline="fake-ar", watch=False,
                                preloaded=backends)
        try:
            seconds = {tab: [one_stop(ctx, tab, k) for k in range(trials)] for tab in TABS}
        finally:
            ctx.close()
    tabs = {tab: {"stop_s": [round(v, 4) for v in values], "median_s": round(statistics.median(values), 4),
                  "max_s": round(max(values), 4), "within_target": max(values) < TARGET_S}
            for tab, values in seconds.items()}
    return {"trials": trials, "forward_ms": forward_ms, "tabs": tabs, "target_s": TARGET_S}


def table(report: dict[str, Any]) -> str:
    lines = [f"Stop, {report['trials']} trial(s) per tab, a forward of {report['forward_ms']:.0f} ms "
             f"(seconds from Stop to 'Stopped' in the status line; target under {report['target_s']:.1f} s)", ""]
    for tab, row in report["tabs"].items():
        lines.append(seconds_line(tab, row["stop_s"], 8, f"median {row['median_s']:.3f}  max {row['max_s']:.3f}",
                                  row["within_target"]))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    cli = argparse.ArgumentParser(prog="python -m bench stop", description=__doc__.split("\n\n")[0])
    cli.add_argument("--trials", type=int, default=5)
    cli.add_argument("--forward-ms", type=float, default=50.0, help="how long each fake forward takes (default 50)")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    return print_report(lambda: run_stops(args.trials, args.forward_ms), args.json, table)
