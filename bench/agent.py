"""`python -m bench agent`: success and speed of one or two models on the agent tasks.

`agent` runs the fixed held-out tasks (world/heldout_tasks.json): every attempt of a
task uses its own seed, both models run in this one process, interleaved per task (their order
alternating between attempts) after one warm-up episode each. Per model: attempts,
successes, success_rate, pass_hat_3 (tau-bench pass^k, k = 3: mean over tasks of
C(c, k) / C(n, k)), median / p90 task seconds, mean NFE per task, tokens per forward, and
failures by error_type; median_ratio = median_task_s of A / that of B.

`--task-set` picks the benchmark: `templates` (the default: the committed set above, worded by
the templates the twins trained on), `phrasing` (world/heldout_phrasing_tasks.json:
held-out sentence frames and combinations on held-out values, with two-goal and
outside-the-world requests) or `words` (training frames with held-out synonyms; reported).
`groups` then gives success per kind of task, and for outside-the-world tasks the attempts
that called a tool.

`--scaffold` runs every model twice in the same interleaved run, as it is and scaffolded
(engine/scaffold/: the call's fixed text written by the registry's schema; jump-forward for an
AR model), each with `forwards_per_call` (forwards per generated reply) and `scaffold`;
`median_ratio_scaffold` is A scaffolded / B scaffolded.

`--via webmcp` (default `--via world`) runs every tool call through the shop's and the office's web
pages in headless Chromium (world/webmcp/venue.py) instead of on the World directly; the report
says `via` and `webmcp` (native: the browser's own WebMCP; polyfill: world/webmcp/polyfill.js;
`--webmcp` picks, auto by default) and adds `browser_ms_per_call` (median, p95, calls: the browser's time per tool call,
the page's own work and its request to the world included), and the task seconds then include the
browser (the pages put on each episode's world: loaded for the first, started over in place after
that, world/webmcp/venue.py). Opening the pages is a fixed cost of every task, the same for both
models: `median_open_s` and `median_task_s_after_open` per model, and `median_ratio_after_open`,
give the times without it.

`--task-set conversations`, `handwritten` and `office-six` run whole conversations instead
(bench/conversations.py: graded per request and per conversation, and the cost by position).

`--validation N` runs N validation tasks of the chosen set instead: phrased and valued as it
is, but none of its tasks, so checkpoints and sampler settings can be chosen there without
looking at a benchmark.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.conversations import CONVERSATION_SETS, conversation_report, position_table
from bench.episodes import (
    DEFAULT_CONFIG,
    episode_record,
    episode_summary,
    forget_prompts,
    interleaved,
    median_ratio,
    median_ratio_after_open,
    milliseconds,
    write_lines,
)
from bench.report import load_model, print_report, progress_bar
from bench.venue import VIAS, WEBMCP_MODES, venue, via_of, webmcp_of
from engine.metrics import LABELS
from engine.sampler_table import REMASK_SCHEDULES
from engine.trace import GenerationConfig
from world.agent import DEFAULT_MAX_REPLIES, Transcript, run_episode
from world.task_sets import TASK_SETS, load_heldout_tasks
from world.tasks import task_group


def run_agent_benchmark(backends: dict[str, Any], tasks: list[dict[str, Any]], attempts: int = 3,
                        config: GenerationConfig = DEFAULT_CONFIG, *, max_replies: int = DEFAULT_MAX_REPLIES,
                        system: str | None = "auto", warmup: bool = True, scaffold: bool = False,
                        progress: Callable[[int, int], None] | None = None,
                        on_episode: Callable[[str, int, Transcript], None] | None = None,
                        pages: Any = None) -> dict[str, Any]:
    """Run every task `attempts` times on every backend, interleaved; the first name is A,
    the second (if any) the baseline B. With `scaffold`, every backend runs twice, as it is and
    scaffolded ("<name> (scaffold)": engine/scaffold/, jump-forward for AR), all in one
    interleaved run; `median_ratio_scaffold` is then A scaffolded / B scaffolded. `on_episode`
    gets (name, attempt, transcript) after each episode. `pages` (a world.webmcp.venue.PageVenue)
    runs the tool calls through the web pages."""
    if not backends:
        raise ValueError("Give at least one backend to benchmark.")
    if not tasks or attempts < 1:
        raise ValueError("Give at least one task and one attempt.")
    runs = {name: (backend, config.replace(scaffold=False)) for name, backend in backends.items()}
    if scaffold:
        runs.update({f"{name} (scaffold)": (backend, config.replace(scaffold=True))
                     for name, backend in backends.items()})
    names = list(runs)
    if warmup:  # first-call costs (allocation, caches, lazy imports) stay out of the numbers
        for name in names:
            forget_prompts(runs[name][0])
            run_episode(runs[name][0], tasks[0], runs[name][1], max_replies=max_replies, system=system, pages=pages)
    if pages is not None:
        pages.driver.call_ms.clear()        # the warm-up's calls (first page loads, compiles) stay out

    def one_episode(name: str, task: dict[str, Any], attempt: int) -> Transcript:
        backend, run_config = runs[name]
        forget_prompts(backend)
        return run_episode(backend, task, run_config.replace(seed=config.seed + attempt), max_replies=max_replies,
                           system=system, pages=pages)

    episodes = interleaved(tasks, attempts, names, one_episode, on_episode, progress)
    models = {name: {**episode_summary(episodes[name]), "scaffold": runs[name][1].scaffold} for name in names}
    plain = list(backends)
    report = {"models": models, "median_ratio": median_ratio(models, plain), "tasks": len(tasks), "attempts": attempts,
              "config": config.to_dict(), "groups": {name: by_group(tasks, episodes[name]) for name in names},
              "scaffold": scaffold, "via": via_of(pages), "webmcp": webmcp_of(pages),
              "browser_ms_per_call": None if pages is None else milliseconds(pages.driver.call_ms),
              "median_ratio_after_open": median_ratio_after_open(models, plain)}
    if scaffold:
        report["median_ratio_scaffold"] = median_ratio(models, [f"{name} (scaffold)" for name in plain])
    return report


def by_group(tasks: list[dict[str, Any]], episodes: list[tuple[str, Transcript]]) -> dict[str, dict[str, int]]:
    """Attempts and successes per task group (world.tasks.task_group); outside-the-world
    groups also count the attempts that called a tool (an honest answer calls none)."""
    group_of = {t["id"]: task_group(t) for t in tasks}
    out: dict[str, dict[str, int]] = {}
    for task_id, t in episodes:
        group = group_of[task_id]
        row = out.setdefault(group, {"attempts": 0, "successes": 0})
        row["attempts"] += 1
        row["successes"] += int(t.success)
        if group == "outside":
            called = any(s.call and s.call["name"] != "finish" for s in t.steps)
            row["tool_calls"] = row.get("tool_calls", 0) + int(called)
    return out


# -- CLI -------------------------------------------------------------------------------------
def table(report: dict[str, Any]) -> str:
    # tokens per forward labelled as in every view (engine/metrics.py LABELS)
    head = (f"{'model':<28} {'success':>9} {'pass^3':>7} {'median s':>9} {'p90 s':>8} {'NFE':>7} "
            f"{LABELS['tokens_per_forward']:>18} {'fwd/call':>8}  errors")
    rows = [head, "-" * len(head)]
    for name, m in report["models"].items():
        p3 = "-" if m["pass_hat_3"] is None else f"{m['pass_hat_3']:.3f}"
        if "conversations" in m:
            c3 = "-" if m["conversation_pass_hat_3"] is None else f"{m['conversation_pass_hat_3']:.3f}"
            rows.append(f"{name[-28:]:<28} conversations {m['conversation_successes']}/{m['conversations']} "
                        f"({m['conversation_success_rate']:.1%}), pass^3 {c3}; requests below")
        errors = ", ".join(f"{k} {v}" for k, v in m["errors"].items()) or "none"
        label = name if len(name) <= 28 else "..." + name[-25:]
        rows.append(f"{label:<28} {m['successes']:>4}/{m['attempts']:<4} {p3:>7} {m['median_task_s']:>9.3f} "
                    f"{m['p90_task_s']:>8.3f} {m['mean_nfe']:>7.1f} {m['tokens_per_forward']:>18.2f} "
                    f"{m.get('forwards_per_call', 0.0):>8.2f}  {errors}")
    for name, groups in report.get("groups", {}).items():
        if len(groups) > 1:
            label = name if len(name) <= 28 else "..." + name[-25:]
            parts = [f"{g} {r['successes']}/{r['attempts']}" + (f" ({r['tool_calls']} with a tool call)"
                                                               if "tool_calls" in r else "") for g, r in groups.items()]
            rows.append(f"{label:<28} by group: {', '.join(parts)}")
    if report.get("task_set"):
        what = f"{report['tasks']} conversations ({report['requests']} requests)" if "requests" in report \
            else report["tasks"]
        rows.append(f"tasks: {report['task_set']}, {what} x {report['attempts']} attempts")
    rows += position_table(report)
    browser = report.get("browser_ms_per_call")
    if browser and browser["calls"]:
        rows.append(f"tool calls through the web pages ({report.get('webmcp')} WebMCP): {browser['calls']}, "
                    f"browser ms per call "
                    f"median {browser['median']:.1f}, p95 {browser['p95']:.1f}")
    if report["median_ratio"] is not None:
        rows.append(f"median task time ratio (A / B): {report['median_ratio']:.3f}")
    if report.get("median_ratio_after_open") is not None:
        opens = ", ".join(f"{m['median_open_s']:.3f}" for m in report["models"].values() if "median_open_s" in m)
        rows.append(f"median task time ratio without opening the pages (A / B): {report['median_ratio_after_open']:.3f}"
                    f" (median seconds to open them per task: {opens})")
    if report.get("median_ratio_scaffold") is not None:
        rows.append(f"median task time ratio, both scaffolded (A / B jump-forward): "
                    f"{report['median_ratio_scaffold']:.3f}")
    return "\n".join(rows)


def _parser() -> argparse.ArgumentParser:
    agent = argparse.ArgumentParser(prog="python -m bench agent", description="Success and speed on the held-out "
                                    "agent tasks.")
    agent.add_argument("--model", required=True, help="model A: catalog name, folder, or py:module:function")
    agent.add_argument("--baseline", help="model B, run interleaved with A")
    agent.add_argument("--tasks", type=int, default=None,
                       help="how many of the tasks (default: all; the committed held-out set has 49)")
    agent.add_argument("--attempts", type=int, default=3)
    agent.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    agent.add_argument("--device", default="auto")
    agent.add_argument("--max-replies", "--max-steps", dest="max_replies", type=int, default=DEFAULT_MAX_REPLIES,
                       help="replies of the model per task (each a tool call or the answer); old name --max-steps")
    agent.add_argument("--system", choices=("auto", "none", "compact", "full"), default="auto")
    agent.add_argument("--task-set", choices=tuple(TASK_SETS) + tuple(CONVERSATION_SETS), default="templates",
                       help="which benchmark: templates (default), phrasing (held-out wording), words (held-out "
                            "synonyms), conversations (2 to 6 requests each), handwritten (people's wording), "
                            "office-six (the six office tasks in one conversation); "
                            "--validation draws from the same kind")
    agent.add_argument("--sample", type=int, metavar="N",
                       help="conversation sets: N conversations spread evenly over the set (a quick measurement)")
    agent.add_argument("--reads", choices=("declared", "conversation", "latest_request"), default="declared",
                       help="conversation sets: what the model reads (default: what its weights declare)")
    task_set = agent.add_mutually_exclusive_group()
    task_set.add_argument("--tasks-file", help="a JSON task list instead of the committed held-out set")
    task_set.add_argument("--validation", type=int, metavar="N",
                          help="N validation tasks (held-out values, none of the benchmark's) instead")
    agent.add_argument("--no-warmup", action="store_true")
    agent.add_argument("--via", choices=VIAS, default="world",
                       help="where tool calls run: on the World (default), or through its web pages in headless "
                            "Chromium (WebMCP)")
    agent.add_argument("--webmcp", choices=WEBMCP_MODES, default="auto",
                       help="with --via webmcp: whose WebMCP runs the calls, the browser's own (native), "
                            "world/webmcp/polyfill.js, or auto (native where the browser has it)")
    agent.add_argument("--episodes", metavar="PATH",
                       help="also write one JSON line per episode (model, task, attempt, success, error, "
                            "the calls made, the final answer, seconds, forwards) to PATH")
    agent.add_argument("--scaffold", action="store_true",
                       help="run every model twice in one interleaved run: as it is, and scaffolded (engine/scaffold/; "
                            "an AR model with jump-forward)")
    for key in ("gen_length", "block_size", "steps", "seed"):
        agent.add_argument(f"--{key.replace('_', '-')}", type=int, default=getattr(DEFAULT_CONFIG, key))
    agent.add_argument("--sampler", default=DEFAULT_CONFIG.sampler)
    agent.add_argument("--threshold", type=float, default=DEFAULT_CONFIG.threshold)
    agent.add_argument("--scaffold-threshold", type=float, default=DEFAULT_CONFIG.scaffold_threshold,
                       help="scaffolded value tokens commit at confidence >= min(threshold, this)")
    agent.add_argument("--temperature", type=float, default=DEFAULT_CONFIG.temperature)
    agent.add_argument("--remask", choices=REMASK_SCHEDULES, default=DEFAULT_CONFIG.remask,
                       help="remasking schedule (engine/remask.py, ReMDM); off by default")
    agent.add_argument("--remask-rounds", type=int, default=DEFAULT_CONFIG.remask_rounds,
                       help="remasking rounds per block (the budget)")
    agent.add_argument("--remask-count", type=int, default=DEFAULT_CONFIG.remask_count,
                       help="tokens put back to the mask in each remasking round")
    return agent


def main(argv: list[str]) -> int:
    """`python -m bench agent ...` (argv after the word `agent`)."""
    args = _parser().parse_args(argv)
    return print_report(lambda: _agent_report(args), args.json, table)


def _agent_report(args: argparse.Namespace) -> dict[str, Any]:
    config = GenerationConfig(gen_length=args.gen_length, block_size=args.block_size, steps=args.steps,
                              sampler=args.sampler, threshold=args.threshold, temperature=args.temperature,
                              seed=args.seed, scaffold_threshold=args.scaffold_threshold, remask=args.remask,
                              remask_rounds=args.remask_rounds, remask_count=args.remask_count)
    if args.validation is not None and args.validation < 1:
        raise ValueError(f"--validation must be at least 1, got {args.validation}.")
    if args.tasks_file and args.task_set != "templates":
        raise ValueError("Give either --tasks-file or --task-set, not both.")
    if args.task_set in CONVERSATION_SETS:
        return conversation_report(args, config)
    benchmark, validation = TASK_SETS[args.task_set]
    if args.validation:
        tasks = validation(args.validation)
    else:
        tasks = load_heldout_tasks(args.tasks_file) if args.tasks_file else benchmark()
    if args.tasks is None:
        args.tasks = len(tasks)
    if not 1 <= args.tasks <= len(tasks):
        raise ValueError(f"--tasks must be between 1 and {len(tasks)}, got {args.tasks}.")
    backends = {args.model: load_model(args.model, args.device)}
    if args.baseline:
        backends[args.baseline if args.baseline != args.model else f"{args.baseline} (B)"] = load_model(
            args.baseline, args.device)
    system = None if args.system == "none" else args.system
    lines: list[str] = []
    with venue(args.via, args.webmcp) as pages:
        report = run_agent_benchmark(backends, tasks[: args.tasks], args.attempts, config, max_replies=args.max_replies,
                                     system=system, warmup=not args.no_warmup, scaffold=args.scaffold,
                                     progress=progress_bar(), pages=pages,
                                     on_episode=lambda *e: lines.append(json.dumps(episode_record(*e))))
    if args.episodes:
        write_lines(Path(args.episodes), lines)
    named = "" if args.task_set == "templates" else f"{args.task_set} "
    report["task_set"] = (f"{named}validation ({args.validation})" if args.validation
                          else args.tasks_file or f"{named or 'held-out '}benchmark")
    return report
