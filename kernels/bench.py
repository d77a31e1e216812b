"""The kernel timings moved to `python -m bench kernels` (bench/kernels.py). This module only keeps the
old command line working: it says where the command went and runs it there."""

import runpy
import sys

if __name__ == "__main__":
    print("note: `python -m kernels.bench` is now `python -m bench kernels`; running it there.", file=sys.stderr)
    sys.argv[1:1] = ["kernels"]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
