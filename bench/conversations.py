"""`python -m bench agent --task-set conversations|handwritten|office-six`: whole conversations, graded per
request and per conversation, and what the history costs.

Each request is graded from the gold state before it (`success_rate`, `pass_hat_3` per request);
a conversation succeeds when all its requests do (`conversation_success_rate`,
`conversation_pass_hat_3`); `groups` splits requests into new topic, follow-up, closing, outside.

**The cost of memory** (`by_position`): for the request at position k of its conversation (1 =
the first), the median seconds it took (its whole agent loop: every reply and the world's work),
the median model time per forward, and the median length of the history it read, in tokens. A
reply's forwards all read that history: with a plain transformer the attention part of a forward
grows with it; Sprout's G layers keep a fixed-size state, and only its A layers' caches grow.
The prompt cache is on (it is cleared between conversations only), so each request prefills
only what is new since the last reply. `position_ratio` = position P / position 1 of each number,
P = 6 where conversations are that long (else the longest with requests).

`office-six` (world/office_six.py) is the seed's six office tasks in one conversation, chain after
chain. `--via webmcp` runs every tool call in the shop's and the office's pages (one visit per
conversation, bench/venue.py) and adds `browser_ms_per_call`, as for tasks.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.episodes import (
    DEFAULT_CONFIG,
    episode_record,
    episode_summary,
    forget_prompts,
    interleaved,
    median_ratio,
    milliseconds,
    pass_hat_k,
    write_lines,
)
from bench.report import load_model, progress_bar
from bench.venue import venue, via_of, webmcp_of
from engine.trace import GenerationConfig
from world import conversation_sets, office_six
from world.agent import DEFAULT_MAX_REPLIES, ConversationTranscript, one_request, prompt_ids_for, run_conversation

# The seed's claim is about six tasks in a row: the ratio is read at position 6 when it exists.
RATIO_POSITION = 6


# the conversation benchmarks: name -> (the benchmark's conversations, n validation conversations)
CONVERSATION_SETS: dict[str, tuple[Callable[[], list[dict]], Callable[[int], list[dict]] | None]] = {
    "conversations": (conversation_sets.load_conversations, conversation_sets.validation_conversations),
    "handwritten": (lambda: conversation_sets.load_conversations(conversation_sets.HANDWRITTEN_PATH), None),
    "office-six": (office_six.load_office_six, office_six.validation_office_six),
}


def run_conversation_benchmark(backends: dict[str, Any], conversations: list[dict[str, Any]], attempts: int = 3,
                               config: GenerationConfig = DEFAULT_CONFIG, *, max_replies: int = DEFAULT_MAX_REPLIES,
                               system: str | None = "auto", reads: str = "declared", warmup: bool = True,
                               progress: Callable[[int, int], None] | None = None,
                               on_conversation: Callable[[str, int, ConversationTranscript], None] | None = None,
                               pages: Any = None) -> dict[str, Any]:
    """Every conversation `attempts` times on every backend, interleaved as run_agent_benchmark
    interleaves tasks; the per-request numbers are episode_summary()'s, plus the conversations', plus
    the cost of the history by position (by_position). `pages` (a world.webmcp.venue.PageVenue)
    runs every tool call in the shop's and the office's pages, one visit per conversation; the
    report then says `via` webmcp and `browser_ms_per_call`, as run_agent_benchmark's does."""
    if not backends:
        raise ValueError("Give at least one backend to benchmark.")
    if not conversations or attempts < 1:
        raise ValueError("Give at least one conversation and one attempt.")
    names = list(backends)
    if warmup:
        for name in names:
            forget_prompts(backends[name])
            run_conversation(backends[name], conversations[0], config, max_replies=max_replies, system=system,
                             reads=reads, pages=pages)
    if pages is not None:
        pages.driver.call_ms.clear()        # the warm-up's calls (first page loads, compiles) stay out

    def one_conversation(name: str, conversation: dict[str, Any], attempt: int) -> ConversationTranscript:
        forget_prompts(backends[name])
        return run_conversation(backends[name], conversation, config.replace(seed=config.seed + attempt),
                                max_replies=max_replies, system=system, reads=reads, pages=pages)

    runs = interleaved(conversations, attempts, names, one_conversation, on_conversation, progress)
    kind_of = {f"{c['id']}.{k}": conversation_sets.request_kind(t)
               for c in conversations for k, t in enumerate(c["turns"])}
    models, groups = {}, {}
    for name in names:
        requests = [(t.task_id, t) for _, ran in runs[name] for t in ran.requests]
        per_conversation: dict[str, list[bool]] = {}
        for conversation_id, ran in runs[name]:
            per_conversation.setdefault(conversation_id, []).append(ran.success)
        whole = sum(ran.success for _, ran in runs[name])
        models[name] = {**episode_summary(requests), "scaffold": False, "conversations": len(runs[name]),
                        "conversation_successes": whole, "conversation_success_rate": whole / len(runs[name]),
                        "conversation_pass_hat_3": pass_hat_k([(sum(v), len(v)) for v in per_conversation.values()]),
                        "median_conversation_s": statistics.median(ran.seconds for _, ran in runs[name])}
        groups[name] = {}
        for task_id, t in requests:
            row = groups[name].setdefault(kind_of[task_id], {"attempts": 0, "successes": 0})
            row["attempts"] += 1
            row["successes"] += int(t.success)
    return {"models": models, "median_ratio": median_ratio(models, names), "tasks": len(conversations),
            "requests": len(kind_of), "attempts": attempts, "config": config.to_dict(), "groups": groups,
            "scaffold": False, "reads": reads, "via": via_of(pages), "webmcp": webmcp_of(pages),
            "browser_ms_per_call": None if pages is None else milliseconds(pages.driver.call_ms),
            "by_position": {name: {**by_position(backends[name], [ran for _, ran in runs[name]]),
                                   "reads": what_it_reads(backends[name], reads)} for name in names}}

def what_it_reads(backend: Any, reads: str) -> str:
    """"conversation" or "latest_request": what the model read in this run (`reads` as
    run_conversation takes it)."""
    latest = reads == "latest_request" or (reads == "declared" and one_request(backend))
    return "latest_request" if latest else "conversation"


def by_position(backend: Any, runs: list[ConversationTranscript]) -> dict[str, Any]:
    """Per position k (1-based) of a request in its conversation: requests, median request
    seconds, median milliseconds of model time per forward, median history tokens read; and
    position_ratio (module docstring)."""
    rows: dict[int, dict[str, list[float]]] = {}
    for ran in runs:
        for k, t in enumerate(ran.requests, start=1):
            row = rows.setdefault(k, {"request_s": [], "forward_ms": [], "history_tokens": []})
            row["request_s"].append(t.seconds)
            forwards = sum(s.result.stats.nfe for s in t.steps if s.result is not None)
            if forwards:
                model_s = sum(s.result.stats.seconds for s in t.steps if s.result is not None)
                row["forward_ms"].append(1000 * model_s / forwards)
            row["history_tokens"].append(len(prompt_ids_for(backend, t.messages[: t.context_messages])))
    table = [{"position": k, "requests": len(r["request_s"]),
              **{f"median_{key}": statistics.median(r[key]) if r[key] else None for key in r}}
             for k, r in sorted(rows.items())]
    return {"positions": table, "position_ratio": position_ratio(table)}


def position_ratio(table: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Each median at RATIO_POSITION (or the last position there is) over the same at position 1."""
    if len(table) < 2:
        return None
    last = next((row for row in table if row["position"] == RATIO_POSITION), table[-1])
    first = table[0]
    out: dict[str, Any] = {"position": last["position"]}
    for key in ("median_request_s", "median_forward_ms", "median_history_tokens"):
        a, b = last[key], first[key]
        out[key.removeprefix("median_")] = a / b if a is not None and b else None
    return out


def position_table(report: dict[str, Any]) -> list[str]:
    """Rows of the printed table: the cost by position, one line per model and position."""
    rows = []
    for name, cost in report.get("by_position", {}).items():
        label = name if len(name) <= 28 else "..." + name[-25:]
        for row in cost["positions"]:
            ms = "-" if row["median_forward_ms"] is None else f"{row['median_forward_ms']:.1f}"
            rows.append(f"{label:<28} position {row['position']}: {row['requests']:>3} requests, median "
                        f"{row['median_request_s']:.3f} s / request, {ms} ms / forward, "
                        f"{row['median_history_tokens']:.0f} history tokens")
        ratio = cost["position_ratio"]
        if ratio is not None:
            ms = "-" if ratio["forward_ms"] is None else f"{ratio['forward_ms']:.2f}"
            rows.append(f"{label:<28} position {ratio['position']} / position 1: {ratio['request_s']:.2f} x "
                        f"seconds per request, {ms} x ms per forward, {ratio['history_tokens']:.1f} x history")
    return rows


def conversation_record(name: str, attempt: int, ran: ConversationTranscript) -> dict[str, Any]:
    """One conversation as a JSON line of `--episodes`: each request as episode_record writes it."""
    return {"model": name, "conversation_id": ran.conversation_id, "attempt": attempt, "success": ran.success,
            "seconds": ran.seconds, "requests": [episode_record(name, attempt, t) for t in ran.requests]}


def conversation_report(args: argparse.Namespace, config: GenerationConfig) -> dict[str, Any]:
    if args.tasks_file or args.scaffold:
        raise ValueError(f"--task-set {args.task_set} takes neither --tasks-file nor --scaffold.")
    benchmark, validation = CONVERSATION_SETS[args.task_set]
    if args.validation is not None and validation is None:
        raise ValueError(f"The {args.task_set} set has no validation draw: it is written by hand.")
    conversations = validation(args.validation) if args.validation else benchmark()
    if args.sample is not None:
        if not 1 <= args.sample <= len(conversations):
            raise ValueError(f"--sample must be between 1 and {len(conversations)}, got {args.sample}.")
        conversations = [conversations[i * len(conversations) // args.sample] for i in range(args.sample)]
    count = len(conversations) if args.tasks is None else args.tasks
    if not 1 <= count <= len(conversations):
        raise ValueError(f"--tasks must be between 1 and {len(conversations)}, got {count}.")
    backends = {args.model: load_model(args.model, args.device)}
    if args.baseline:
        backends[args.baseline if args.baseline != args.model else f"{args.baseline} (B)"] = load_model(
            args.baseline, args.device)
    lines: list[str] = []
    with venue(args.via, args.webmcp) as pages:
        report = run_conversation_benchmark(
            backends, conversations[:count], args.attempts, config, max_replies=args.max_replies,
            system=None if args.system == "none" else args.system, reads=args.reads, warmup=not args.no_warmup,
            progress=progress_bar(), on_conversation=lambda *e: lines.append(json.dumps(conversation_record(*e))),
            pages=pages)
    if args.episodes:
        write_lines(Path(args.episodes), lines)
    report["task_set"] = f"{args.task_set} validation ({args.validation})" if args.validation \
        else f"{args.task_set} benchmark" + (f", {args.sample} spread evenly" if args.sample else "")
    return report
