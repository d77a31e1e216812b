"""Run a script with Triton's interpreter on, in its own process.

triton 3.9 reads TRITON_INTERPRET when `@triton.jit` decorates a kernel (at import), so the
interpreted kernels get a fresh interpreter; the rest of the test session keeps compiled mode.
The script prints one JSON line last; that value is returned.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_interpreted(script: str):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, f"the interpreted Triton run failed:\n{run.stderr[-4000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])
