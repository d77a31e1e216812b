"""Headless Debian Chromium for the browser tests: its path, the flags this closed network
needs (NOTES.md, "Browser tests"), the marks that skip a module when it is absent, and the WebMCP
modes a page test runs in (native only where the browser has its own)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from world.webmcp.driver import FLAGS, NATIVE_SINCE, launch_flags

CHROMIUM = "/usr/bin/chromium"
BROWSER_MARKS = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"),
]
WEBMCP_MODES = ("native", "polyfill")
__all__ = ["BROWSER_MARKS", "CHROMIUM", "FLAGS", "WEBMCP_MODES", "chromium_major", "launch_in_mode",
           "skip_without_native"]


@cache
def chromium_major() -> int:
    """The installed Chromium's major version, 0 when it does not say."""
    try:
        said = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    found = re.search(r"(\d+)\.\d+\.\d+", said)
    return int(found.group(1)) if found else 0


def skip_without_native(mode: str) -> None:
    """Native mode skips the test, saying why, on a browser older than the first with its own WebMCP."""
    if mode == "native" and chromium_major() < NATIVE_SINCE:
        pytest.skip(f"Chromium {chromium_major()} has no WebMCP of its own (it came in {NATIVE_SINCE}); "
                    "the polyfill's run of this test stands")


def launch_in_mode(playwright, mode: str):
    """A Chromium for WebMCP mode `mode` (skip_without_native first)."""
    skip_without_native(mode)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=launch_flags(mode))
