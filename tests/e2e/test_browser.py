"""End to end in headless Chromium: type a prompt, watch masked cells turn into text in the live
panel, export the HTML replay, open that file in the browser and check that the hostile token
`<img src=x onerror=alert(1)>` (and a prompt that tries to set window.__xss) runs no script.

Needs /usr/bin/chromium (CI installs it with apt); skipped with that reason when it is absent.
Set DP_SCREENSHOT=docs/playground.png to also save a screenshot of the Chat tab after the run.
"""

from __future__ import annotations

import os

from tests.e2e.app_fakes import ANSWER_TAIL, XSS, Slow, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.fakes import FakeDiffusionBackend

PROMPT = "Say hi <img src=x onerror=window.__xss=1>"
DELAY_S = 0.15                              # per forward: the live panel stays visible for a while

pytestmark = BROWSER_MARKS


def watch_for_scripts(page) -> list[str]:
    """Every dialog the page opens (alert, confirm, ...), dismissed and recorded."""
    dialogs: list[str] = []

    def record(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return dialogs


def test_live_panel_export_and_offline_replay(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, delay_s=DELAY_S)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        dialogs = watch_for_scripts(page)
        page.goto(url)
        page.locator("#prompt textarea").fill(PROMPT)
        page.locator("#send").click()

        live = page.locator("#live-panel")
        # while the run streams: undecided (masked) cells in the live panel
        expect(live.locator('[data-mode="live"] .dp-mask').first).to_be_visible(timeout=20_000)
        # then every cell decided, the hostile token shown as text in one cell
        expect(live.locator('[data-mode="done"]')).to_be_visible(timeout=30_000)
        expect(live.locator(".dp-mask")).to_have_count(0)
        expect(live.locator(".dp-cell", has_text="onerror=alert(1)")).to_have_count(1)
        expect(page.locator("#chatbot")).to_contain_text(XSS + ANSWER_TAIL)
        assert page.locator("#live-panel img, #chatbot img").count() == 0
        screenshot = os.environ.get("DP_SCREENSHOT")
        if screenshot:
            page.wait_for_timeout(500)                 # let the plots draw
            page.screenshot(path=screenshot, full_page=True)

        page.locator("#export").click()
        link = page.locator("#exports a[download$='-replay.html']")
        expect(link).to_be_visible(timeout=20_000)
        with page.expect_download() as download:
            link.click()
        replay = tmp_path / "replay.html"
        download.value.save_as(replay)
        assert page.evaluate("window.__xss") is None and dialogs == []
        page.close()
    ctx.close()

    offline = browser.new_context(offline=True)   # the replay needs nothing from the network
    page = offline.new_page()
    dialogs = watch_for_scripts(page)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text
            else None)
    page.goto(replay.resolve().as_uri())
    grid = page.locator("#grid")
    expect(grid.locator(".dp-cell").first).to_be_visible(timeout=10_000)
    scrubber = page.locator("#scrubber")
    last = scrubber.get_attribute("max")
    assert int(last) > 1
    scrubber.fill("0")                            # back to the first forward: mostly masks
    expect(grid.locator(".dp-mask").first).to_be_visible()
    page.locator("#play").click()                 # the player animates the denoising to the end
    expect(scrubber).to_have_value(last, timeout=20_000)
    expect(grid.locator(".dp-cell", has_text="onerror=alert(1)")).to_have_count(1)
    expect(page.locator("body")).to_contain_text(PROMPT)
    assert page.locator("img, iframe, object, embed").count() == 0
    assert page.evaluate("window.__xss") is None
    assert dialogs == [] and violations == []
    offline.close()



def test_stop_ends_the_run_and_leaves_what_was_decided(browser, tmp_path):
    from playwright.sync_api import expect

    long_run = Slow(FakeDiffusionBackend("abc " * 120, name="fake-bd"), 0.03)   # ~500 forwards if not stopped
    ctx = fake_context(tmp_path, backends={"fake-bd": long_run})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        for control, value in (("#chat-gen-length", "512"), ("#chat-block-size", "8"), ("#chat-steps", "8")):
            page.locator(f"{control} input[type=number]").fill(value)
            page.locator(f"{control} input[type=number]").press("Enter")
        page.locator("#chat-sampler input").click()
        page.get_by_role("option", name="low_confidence").click()   # one token per forward
        page.locator("#prompt textarea").fill("go on")
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="live"]')).to_be_visible(timeout=20_000)
        page.locator("#stop").click()
        expect(page.locator('#live-panel [data-mode="stopped"]')).to_be_visible(timeout=20_000)
        expect(page.locator("#chat-status")).to_contain_text("Stopped.")
        calls = long_run.denoise_calls
        page.wait_for_timeout(500)
        assert long_run.denoise_calls == calls < 400
        turn = ctx.store.get_conversation(ctx.store.list_conversations()[0]["id"])["turns"][-1]
        assert turn["generation"].stats.stop_reason == "cancelled"
        page.close()
    ctx.close()
