"""Accessibility checked by a real engine (issue 46, point 7): axe-core (axe-playwright-python) on
every tab of the app, before and after an answer, on the shop and office pages, and on an exported
HTML replay, at 1440x960 and at 390x844: no serious or critical violation. axe's color-contrast
rule is among those it runs, so text and placeholders are held to 4.5:1 (3:1 for large text).

Set DP_SHOTS=<folder> to keep a screenshot of each page checked."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from engine.generate import run
from engine.trace import GenerationConfig
from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import open_tab, set_number
from tests.e2e.test_first_contact import shot
from tests.fakes import FakeDiffusionBackend
from visualizer import standalone_replay_html

pytestmark = BROWSER_MARKS
VIEWPORTS = {"desktop": {"width": 1440, "height": 960}, "phone": {"width": 390, "height": 844}}
TABS = ("Chat", "Compare", "Agent", "Sessions", "Models")
SEVERE = ("serious", "critical")


def severe_violations(page) -> list[str]:
    """axe's serious and critical findings on the page as it is, one line each (rule, first nodes)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['html'][:100] for n in v['nodes'][:3]]}"
            for v in found if v["impact"] in SEVERE]


def world_page_urls(page, url: str) -> dict[str, str]:
    """The shop's and the office's page of the world the Chat tab shows (its frame's session)."""
    src = page.locator("#chat-world-page iframe").get_attribute("src")
    return {app: urljoin(url, src.replace("/apps/shop/", f"/apps/{app}/")) for app in ("shop", "office")}


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_every_tab_the_world_pages_and_the_replay_have_no_serious_violation(browser, tmp_path, size):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    found: dict[str, list[str]] = {}
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORTS[size])
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        for name in TABS:
            open_tab(page, name)
            found[f"{name}, empty"] = severe_violations(page)
        open_tab(page, "Chat")
        set_number(page, "#chat-pace-ms", "0")
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=60_000)
        found["Chat, answered"] = severe_violations(page)
        shot(page, f"axe-chat-{size}")
        for app, address in world_page_urls(page, url).items():
            page.goto(address)
            page.locator("body[data-ready]").wait_for(state="attached", timeout=30_000)
            found[f"{app} page"] = severe_violations(page)
            shot(page, f"axe-{app}-{size}")
        page.close()
    ctx.close()

    backend = FakeDiffusionBackend("Hello <b>there</b>, a replay.", name="fake-bd")
    config = GenerationConfig(gen_length=32, block_size=8, steps=8)
    result = run(backend, backend.encode_chat([{"role": "user", "content": "Say hi"}]), config)
    replay = tmp_path / "replay.html"
    replay.write_text(standalone_replay_html(result, "A replay", "Say hi", "fake-bd", config), encoding="utf-8")
    page = browser.new_page(viewport=VIEWPORTS[size])
    page.goto(replay.as_uri())
    found["exported replay"] = severe_violations(page)
    shot(page, f"axe-replay-{size}")
    page.close()

    assert len(found) == len(TABS) + 4
    assert {where: bad for where, bad in found.items() if bad} == {}
