"""The fused pass of Sprout-BD against its reference, as a CLI: the same replies, in how much time?

    python -m bench fused --model models/sprout-bd [--task-set phrasing] [--attempts 2] [--json]

Every task of the chosen benchmark runs as an agent episode twice per attempt on one loaded
model: with `fuse_commit` on (each commit, and the prompt's last piece, run inside the next
denoise: `SproutModel.commit_then_denoise`) and off (every pass on its own), in alternating
order. Printed: episodes, how many gave the same replies token for token, the summed task
seconds of each way and their ratio (fused / two passes), and the median ratio per task.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from world.task_sets import TASK_SETS


def run_fused(backend: Any, tasks: list[dict[str, Any]], attempts: int = 2) -> dict[str, Any]:
    from bench.agent import DEFAULT_CONFIG
    from world.agent import run_episode

    if not backend.can_fuse_commit:
        raise ValueError(f"{getattr(backend, 'name', 'this model')} has no fused pass (only Sprout-BD does).")
    run_episode(backend, tasks[0], DEFAULT_CONFIG)                              # warm-up, not counted
    seconds = {True: 0.0, False: 0.0}
    same, ratios = 0, []
    kept = backend.fuse_commit
    try:
        for attempt in range(attempts):
            for task in tasks:
                replies, took = {}, {}
                for fused in ((True, False) if attempt % 2 == 0 else (False, True)):
                    backend.fuse_commit = fused
                    transcript = run_episode(backend, task, DEFAULT_CONFIG)
                    replies[fused] = [s.result.token_ids for s in transcript.steps if s.result is not None]
                    took[fused] = transcript.seconds
                    seconds[fused] += transcript.seconds
                same += replies[True] == replies[False]
                ratios.append(took[True] / took[False] if took[False] > 0 else 1.0)
    finally:
        backend.fuse_commit = kept                                              # the backend as it was given
    return {"model": getattr(backend, "name", "?"), "episodes": len(ratios), "same_replies": same,
            "fused_s": seconds[True], "two_pass_s": seconds[False],
            "ratio": seconds[True] / seconds[False] if seconds[False] > 0 else 1.0,
            "median_task_ratio": statistics.median(ratios)}


def table(report: dict[str, Any]) -> str:
    return (f"{report['model']}: {report['same_replies']}/{report['episodes']} episodes gave the same replies; "
            f"task time fused {report['fused_s']:.2f} s, two passes {report['two_pass_s']:.2f} s, "
            f"ratio {report['ratio']:.3f} (median per task {report['median_task_ratio']:.3f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench fused", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a Sprout-BD folder or catalog name")
    parser.add_argument("--task-set", choices=tuple(TASK_SETS), default="templates")
    parser.add_argument("--attempts", type=int, default=2, help="runs of every task, each way")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from bench.report import load_model, print_report

    def report() -> dict[str, Any]:
        if args.attempts < 1:
            raise ValueError("--attempts must be at least 1.")
        return run_fused(load_model(args.model, args.device), TASK_SETS[args.task_set][0](), args.attempts)

    return print_report(report, args.json, table)


if __name__ == "__main__":
    raise SystemExit(main())
