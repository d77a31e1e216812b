"""Headless Debian Chromium for the browser tests: its path, the flags this closed network
needs (NOTES.md, "Browser tests"), and the marks that skip a module when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling out and is refused here.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
BROWSER_MARKS = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"),
]
