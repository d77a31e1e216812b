"""One Chromium per test module, shared by its tests."""

from __future__ import annotations

import pytest

from tests.e2e.chromium import CHROMIUM, FLAGS, WEBMCP_MODES, launch_in_mode


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module", params=WEBMCP_MODES)
def webmcp(request) -> str:
    """The WebMCP a page test runs on: the browser's own (native) and the polyfill, each in turn."""
    return request.param


@pytest.fixture(scope="module")
def webmcp_browser(webmcp):
    """One Chromium per module and mode, launched for that mode (native: with its WebMCP on)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch_in_mode(p, webmcp)
        yield chromium
        chromium.close()
