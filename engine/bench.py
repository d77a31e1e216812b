"""The benchmarks moved to the top-level package `bench` (`python -m bench agent|decode|fuzz|fused|api`).
This module only keeps the old command line working: it says where the command went and runs it there."""

import runpy
import sys

if __name__ == "__main__":
    print("note: `python -m engine.bench` is now `python -m bench`; running it there.", file=sys.stderr)
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
