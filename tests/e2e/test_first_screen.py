"""In headless Chromium at 1440x960: the first screen holds the work. Chat is at most 1,900 px tall
with its default settings; while an answer streams, the message box, the last message, the live
panel and the status line are all in the window. The settings show the parameters the chosen
sampler reads, the rest sit under "More settings". Compare shows Race and both answers without a
scroll."""

from __future__ import annotations

from tests.e2e.app_fakes import fake_context
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_first_contact import choose, shot
from tests.e2e.test_first_hour import app_page

pytestmark = BROWSER_MARKS
WINDOW = {"width": 1440, "height": 960}
CHAT_MOST_PX = 1900


def in_window(page, selector: str) -> bool:
    """Whether the element's box lies within the window as it is scrolled now."""
    box = page.locator(selector).last.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= WINDOW["height"]


def page_height(page) -> int:
    return page.evaluate("document.documentElement.scrollHeight")


def test_chat_fits_and_the_streaming_answer_stays_in_sight(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, delay_s=0.15)             # slow forwards: the answer is watched streaming
    with app_page(browser, ctx) as page:
        page.wait_for_timeout(1_000)                      # the world's page lays out in its frame
        assert page_height(page) <= CHAT_MOST_PX, page_height(page)
        page.locator("#chat-examples button").first.click()
        expect(page.locator("#prompt textarea")).not_to_have_value("")     # the example is in the box
        page.locator("#prompt textarea").press("Enter")
        expect(page.locator("#live-panel [data-mode='live']")).to_be_visible(timeout=30_000)
        for part in ("#prompt textarea", "#chatbot .message-row", "#live-panel", "#chat-status", "#send"):
            assert in_window(page, part), part
        shot(page, "first-screen-streaming")
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=60_000)
        expect(page.locator("#chat-status")).to_contain_text("saved", timeout=30_000)
        for part in ("#prompt textarea", "#chatbot .message-row", "#live-panel", "#chat-status"):
            assert in_window(page, part), part
    ctx.close()


def test_settings_show_what_the_chosen_sampler_reads(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with app_page(browser, ctx) as page:
        shown = {"prefix_threshold": {"threshold"}, "entropy_bounded": {"entropy_bound"}, "factor": {"factor"},
                 "joint_threshold": {"threshold", "edit_threshold", "max_post_steps"}, "low_confidence": set()}
        every = ("threshold", "factor", "entropy_bound", "edit_threshold", "max_post_steps")
        for sampler, reads in shown.items():
            if sampler != "prefix_threshold":             # the default
                choose(page, "#chat-sampler", sampler)
            for name in every:
                control = page.locator(f"#chat-{name.replace('_', '-')}")
                if name in reads:
                    expect(control).to_be_visible()
                else:
                    expect(control).to_be_hidden()
            expect(page.locator("#chat-temperature")).to_be_visible()
        # the rest under the disclosure, closed by default
        expect(page.locator("#chat-top-k")).to_be_hidden()
        page.locator("#chat-more-settings").get_by_text("More settings").first.click()
        for name in ("top-k", "top-p", "seed", "pace-ms", "remask", "cache", "preset", "random-seed"):
            expect(page.locator(f"#chat-{name}")).to_be_visible()
    ctx.close()


def test_compare_shows_race_and_both_answers_on_the_first_screen(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with app_page(browser, ctx) as page:
        page.get_by_role("tab", name="Compare").click()
        assert in_window(page, "#race")
        page.locator("#compare-prompt textarea").fill("Say hi")
        page.locator("#race").click()
        for side in ("compare-diffusion-panel", "compare-baseline-panel"):
            expect(page.locator(f"#{side} .dp-answer-text")).to_be_visible(timeout=60_000)
            assert in_window(page, f"#{side} .dp-answer-text"), side
        assert in_window(page, "#race")
        shot(page, "compare-first-screen")
    ctx.close()
