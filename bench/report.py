"""What every benchmark command shares: its ending (a JSON report or a table, a sentence on error), the
percentile it quotes, the progress bar on stderr, and how a model is named on the command line."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

from engine.trace import ConfigError


def print_report(make: Callable[[], dict[str, Any]], as_json: bool, table: Callable[[dict[str, Any]], str]) -> int:
    """A benchmark command's ending: make the report and print it (JSON or a table). What goes
    wrong is one sentence on stderr, never a traceback: exit 2 for a bad argument or file, 1 for a
    model that cannot run (BackendError and friends are RuntimeErrors worded for people)."""
    try:
        report = make()
    except (ConfigError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if as_json else table(report))
    return 0


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def progress_bar(width: int = 30) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        stream = sys.stderr
        filled = width * done // total
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} episodes")
        if done == total:
            stream.write("\n")
        stream.flush()
    return show


def load_model(spec: str, device: str) -> Any:
    """A catalog name or model folder, or `py:module:function` (a factory; tests, custom backends)."""
    if spec.startswith("py:"):
        module, _, function = spec[3:].partition(":")
        if not function:
            raise ValueError(f"'{spec}' should look like py:package.module:function.")
        return getattr(importlib.import_module(module), function)()
    from engine.catalog import load_backend

    return load_backend(spec, device)


def seconds_line(name: str, values: list[float], width: int, figures: str, met: bool) -> str:
    """One row of a timing table: the name, every value, then the summary figures and the verdict."""
    return f"{name:<{width}} {' '.join(f'{v:.3f}' for v in values)}   {figures}  {'met' if met else 'NOT met'}"
