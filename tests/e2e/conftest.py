"""One Chromium per test module, shared by its tests."""

from __future__ import annotations

import pytest

from tests.e2e.chromium import CHROMIUM, FLAGS


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()
