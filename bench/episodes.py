"""The numbers of agent episodes, shared by the task and the conversation benchmarks
(bench/agent.py, bench/conversations.py): success, pass^k, task seconds, forwards, errors; and the
episode's JSON line for `--episodes`."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from math import comb
from pathlib import Path
from typing import Any

from bench.report import percentile
from engine.catalog import bundled_decoding
from engine.metrics import total_tokens_per_forward
from engine.trace import GenerationConfig
from world.agent import Transcript
from world.grader import ERROR_TYPES

PASS_K = 3
# The left-to-right threshold rule at 0.99 (engine.samplers.prefix_threshold), not Fast-dLLM's
# plain rule at 0.9: measured on 300 validation tasks (--validation 300), see models/README.md.
DEFAULT_CONFIG = GenerationConfig(**{**bundled_decoding(), "gen_length": 128})


def pass_hat_k(counts: list[tuple[int, int]], k: int = PASS_K) -> float | None:
    """tau-bench pass^k from (successes c, attempts n) per task; None when some n < k."""
    if not counts or any(n < k for _, n in counts):
        return None
    return sum(comb(c, k) / comb(n, k) for c, n in counts) / len(counts)


def episode_summary(episodes: list[tuple[str, Transcript]]) -> dict[str, Any]:
    """One model's numbers from its (task_id, transcript) list."""
    per_task: dict[str, list[bool]] = {}
    for task_id, t in episodes:
        per_task.setdefault(task_id, []).append(t.success)
    seconds = [t.seconds for _, t in episodes]
    nfe = sum(t.nfe for _, t in episodes)
    calls = [s.result.stats.nfe for _, t in episodes for s in t.steps if s.result is not None]
    successes = sum(t.success for _, t in episodes)
    errors = Counter(t.error_type for _, t in episodes if not t.success)
    return {
        "attempts": len(episodes), "successes": successes,
        "success_rate": successes / len(episodes) if episodes else 0.0,
        "pass_hat_3": pass_hat_k([(sum(v), len(v)) for v in per_task.values()]),
        "median_task_s": statistics.median(seconds) if seconds else 0.0,
        "p90_task_s": percentile(seconds, 90) if seconds else 0.0,
        "mean_nfe": nfe / len(episodes) if episodes else 0.0,
        "tokens_per_forward": total_tokens_per_forward((t.new_tokens, t.nfe) for _, t in episodes),
        "forwards_per_call": sum(calls) / len(calls) if calls else 0.0,   # forwards per generated reply
        # rewritten answer tokens (editing and remasking samplers), apart from tokens per forward
        "edits": sum(s.result.stats.edits for _, t in episodes for s in t.steps if s.result is not None),
        "errors": {e: errors[e] for e in ERROR_TYPES if errors[e]},
        **_after_open(episodes),
    }


def _after_open(episodes: list[tuple[str, Transcript]]) -> dict[str, float]:
    """Through the web pages, each task first opens its pages (a fixed browser cost, the same for
    every model): its median, and the median task time without it (the model's and the tool calls')."""
    opens = [t.open_s for _, t in episodes]
    if not any(opens):
        return {}
    return {"median_open_s": statistics.median(opens),
            "median_task_s_after_open": statistics.median(t.seconds - t.open_s for _, t in episodes)}


def interleaved(items: list[dict[str, Any]], attempts: int, names: list[str],
                run_one: Callable[[str, dict[str, Any], int], Any],
                on_result: Callable[[str, int, Any], None] | None = None,
                progress: Callable[[int, int], None] | None = None) -> dict[str, list[tuple[str, Any]]]:
    """name -> [(item id, run_one(name, item, attempt))]: every item `attempts` times on every
    name, the names' order reversed on odd attempts (neither model always runs on a cache the
    other warmed); on_result(name, attempt, result) after each run, progress(done, total)."""
    out: dict[str, list[tuple[str, Any]]] = {name: [] for name in names}
    total, done = len(items) * attempts * len(names), 0
    for item in items:
        for attempt in range(attempts):
            for name in (names if attempt % 2 == 0 else names[::-1]):
                result = run_one(name, item, attempt)
                out[name].append((item["id"], result))
                if on_result is not None:
                    on_result(name, attempt, result)
                done += 1
                if progress is not None:
                    progress(done, total)
    return out


def milliseconds(values: list[float]) -> dict[str, float | int | None]:
    """Median and p95 of per-call milliseconds, and how many calls."""
    if not values:
        return {"median": None, "p95": None, "calls": 0}
    return {"median": statistics.median(values), "p95": percentile(values, 95), "calls": len(values)}


def forget_prompts(backend: Any) -> None:
    """Every episode starts with no prompt kept (Sprout's PromptCache). With --scaffold one backend
    runs each task twice in a row, and the second run would find the first's prompts cached: its
    prefills free, a head start the first run did not have."""
    kept = backend.prompt_cache
    if kept is not None:
        kept.clear()


def episode_record(name: str, attempt: int, t: Transcript) -> dict[str, Any]:
    """One episode as a JSON line of `--episodes`: what was asked, what the model did, the verdict."""
    return {"model": name, "task_id": t.task_id, "attempt": attempt, "instruction": t.instruction,
            "success": t.success, "error_type": t.error_type, "reason": t.reason,
            "calls": [s.call if s.call is not None else {"error": s.error, "raw_text": s.raw_text} for s in t.steps],
            "final_answer": t.final_answer, "seconds": t.seconds, "nfe": t.nfe, "new_tokens": t.new_tokens}


def write_lines(path: Path, lines: list[str]) -> None:
    """Write the file whole or not at all (a temporary file renamed over it)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    partial.replace(path)


def median_ratio(models: dict[str, dict[str, Any]], names: list[str]) -> float | None:
    """median task seconds of the first name / that of the second."""
    if len(names) < 2 or models[names[1]]["median_task_s"] <= 0:
        return None
    return models[names[0]]["median_task_s"] / models[names[1]]["median_task_s"]


def median_ratio_after_open(models: dict[str, dict[str, Any]], names: list[str]) -> float | None:
    """median_ratio of the task times without opening the pages (None unless both opened pages)."""
    if len(names) < 2 or any("median_task_s_after_open" not in models[n] for n in names[:2]) \
            or models[names[1]]["median_task_s_after_open"] <= 0:
        return None
    return models[names[0]]["median_task_s_after_open"] / models[names[1]]["median_task_s_after_open"]
