"""`python launch.py` (what `make run` starts) serves the page and /v1 from one process; with
--no-api only the page."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.app_fakes import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def started(args: list[str], port: int, tmp_path: Path) -> subprocess.Popen:
    env = {**os.environ, "DP_API_KEY": ""}
    return subprocess.Popen([sys.executable, "launch.py", "--port", str(port), "--db", str(tmp_path / "s.db"), *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_up(url: str, process: subprocess.Popen, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url} did not come up")


@pytest.mark.parametrize("api", [True, False], ids=["api", "no-api"])
def test_launch_serves_the_page_and_v1_together(tmp_path, api):
    port = free_port()
    process = started([] if api else ["--no-api"], port, tmp_path)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_up(base + "/", process)
        listing = httpx.get(base + "/v1/models", timeout=10)
        if api:
            assert listing.status_code == 200 and "sprout-bd" in {m["id"] for m in listing.json()["data"]}
        else:
            assert listing.status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=30)
