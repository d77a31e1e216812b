"""In headless Chromium: an answer can be watched (the playback pace), replayed from round 0, and
read (aria-live status, "new" marked by more than colour, text contrast >= 4.5:1); the exported
HTML replay opens on round 0 and plays for at least 2 s at its default speed.

The pace test drives the bundled Sprout-BD (models/sprout-bd, in the repository) at the
playground's default settings; it is skipped with a reason when that folder does not load.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.settings import PACE_MS
from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import show_setting
from tests.e2e.layout import TOP_JS, settled_top

SNAPSHOT_MS = 40                                    # how often the page is read (NOTES.md, "Browser tests")
CONTRAST_JS = (Path(__file__).parent / "contrast.js").read_text(encoding="utf-8")

pytestmark = BROWSER_MARKS


WATCH_JS = """(selector) => {
  const seen = window.__seen = [];
  const read = () => {
    const node = document.querySelector(selector);
    const text = node ? node.innerText : '';
    if (!seen.length || seen[seen.length - 1].text !== text) seen.push({text, at: performance.now()});
  };
  read();
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def panel_states(page, selector: str, until: str, action, timeout_s: float = 90.0) -> tuple[list[str], float]:
    """Distinct texts of `selector`, recorded by the page at every change (a MutationObserver:
    no state is missed however busy the machine), from before `action()` until its text starts
    with `until` (after at least one other state); and the seconds from the first change to that end."""
    page.evaluate(WATCH_JS, selector)
    action()
    deadline = time.monotonic() + timeout_s
    seen: list[dict] = []
    while time.monotonic() < deadline:
        seen = page.evaluate("() => window.__seen")
        if len(seen) > 1 and seen[-1]["text"].startswith(until):
            return [s["text"] for s in seen], (seen[-1]["at"] - seen[1]["at"]) / 1000
        page.wait_for_timeout(SNAPSHOT_MS)
    raise AssertionError(f"{selector} never reached {until!r}; last: {seen[-1]['text'][:200] if seen else ''!r}")


def sprout_context(tmp_path):
    from app.state import AppContext, ModelRegistry
    from engine.backends.base import BackendError

    try:
        sprout = ModelRegistry(device="cpu").get("sprout-bd")
    except BackendError as exc:
        pytest.skip(f"the bundled Sprout-BD does not load here: {exc}")
    return AppContext.create(tmp_path / "sessions.db", model="sprout-bd", baseline="sprout-bd",
                             preloaded={"sprout-bd": sprout}, watch=False)


def test_an_answer_at_default_settings_shows_at_least_eight_states_over_a_second(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = sprout_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        example = page.locator("#chat-examples button, #chat-examples [role=button], #chat-examples td").first
        expect(example).to_be_visible(timeout=20_000)
        example.click()                                   # an example prompt from the model's card
        # the example reaches the textbox by a server round trip: on a busy machine a click on
        # Send before it lands sends an empty message (a person reads the prompt first)
        expect(page.locator("#prompt textarea")).not_to_have_value("", timeout=20_000)
        # only states the app drew (a panel with a mode), not Gradio's progress text or the empty note
        states, seconds = panel_states(page, "#live-panel [data-mode]", "finished",
                                       lambda: page.locator("#send").click())
        # a screen reader hears the run's status; "new this round" is underlined as well as coloured
        assert page.locator('#live-panel [role="status"][aria-live="polite"]').count() == 1
        page.close()
    ctx.close()
    states = [s for s in states if s]
    assert len(states) >= 8, states
    assert seconds >= 1.0, (seconds, states)


def test_replay_plays_the_answer_again_from_round_zero(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=30_000)
        frames = int(page.locator("#scrubber input[type=number]").input_value())
        # the finished run also draws two plotly figures; on a busy CPU that holds the page's
        # main thread for seconds, and the replay's first rounds would land while it is blocked
        expect(page.locator(".js-plotly-plot").nth(1)).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)
        states, seconds = panel_states(page, "#live-panel [data-mode]", "finished",
                                       lambda: page.locator("#replay").click())
        page.close()
    ctx.close()
    assert any("before the first forward" in s for s in states)
    # every round drawn, each for about the default pace (the Replay button reads the pace control)
    assert len(states) >= frames + 1 and seconds >= (frames - 1) * 0.8 * PACE_MS / 1000, (frames, seconds)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_text_contrast_and_new_tokens_marked_by_more_than_colour(browser, tmp_path, theme):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, delay_s=0.05)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url + ("?__theme=dark" if theme == "dark" else ""))
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#send").click()
        expect(page.locator("#live-panel .dp-cell.dp-new").first).to_be_visible(timeout=30_000)
        expect(page.locator("#live-panel .dp-legend")).to_contain_text("decided by this forward")
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=30_000)
        # the legend's "new" key is drawn by the same CSS rule as a new cell (visualizer/grid.py)
        new = page.locator("#live-panel .dp-legend .dp-key-new")
        style = new.evaluate("e => { const s = getComputedStyle(e); return [s.textDecorationLine, s.borderStyle]; }")
        assert style == ["underline", "dashed"]
        show_setting(page, "#chat-how-it-works")
        page.locator("#chat-how-it-works").click()                 # the explanation's text is checked too
        page.wait_for_timeout(500)
        rows = page.evaluate(CONTRAST_JS)
        page.close()
    ctx.close()
    low = [r for r in rows if r["ratio"] < 4.5]
    assert len(rows) > 100 and low == [], low[:10]
    assert any("Tokens the model may write" in r["text"] for r in rows)        # the info lines were measured


def test_exported_replay_opens_on_round_zero_and_plays_for_two_seconds(browser, tmp_path):
    from playwright.sync_api import expect

    from tests.visualizer.test_visualizer_traces import CONFIG, make_result
    from visualizer import standalone_replay_html

    path = tmp_path / "replay.html"
    path.write_text(standalone_replay_html(make_result(), "t", "p", "m", CONFIG), encoding="utf-8")
    page = browser.new_context(offline=True).new_page()
    page.goto(path.as_uri())
    expect(page.locator("#readout")).to_contain_text("before the first forward")
    assert page.locator("#grid .dp-mask").count() == 8 and page.locator("#scrubber").input_value() == "0"
    last = page.locator("#scrubber").get_attribute("max")
    started = time.monotonic()
    page.locator("#play").click()
    expect(page.locator("#scrubber")).to_have_value(last, timeout=20_000)
    assert time.monotonic() - started >= 2.0
    page.close()


def test_show_every_round_and_a_saved_preset(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        steps = page.locator("#chat-steps input[type=number]")
        block = page.locator("#chat-block-size input[type=number]")
        block.fill("8")
        block.press("Enter")
        show_setting(page, "#chat-every-round")                          # under More settings
        page.locator("#chat-every-round").click()
        expect(steps).to_have_value("8", timeout=10_000)                  # one round per token of the block
        expect(page.locator("#chat-sampler input")).to_have_value("low_confidence")
        page.locator("#chat-temperature input[type=number]").fill("0.75")
        page.locator("#chat-temperature input[type=number]").press("Enter")
        page.locator("#chat-preset-name textarea, #chat-preset-name input").first.fill("teaching 8")
        page.locator("#chat-save-preset").click()
        expect(page.locator("#chat-preset-status")).to_contain_text("Saved preset", timeout=10_000)
        page.locator("#chat-temperature input[type=number]").fill("0.5")
        page.locator("#chat-temperature input[type=number]").press("Enter")
        page.locator("#chat-preset input").click()                        # picking it sets the controls back
        page.get_by_role("option", name="teaching 8").click()
        expect(page.locator("#chat-temperature input[type=number]")).to_have_value("0.75", timeout=10_000)
        page.close()
    saved = ctx.store.presets()["teaching 8"]
    ctx.close()
    assert saved["sampler"] == "low_confidence" and saved["steps"] == 8 and saved["block_size"] == 8
    assert saved["temperature"] == 0.75


def test_a_long_answer_scrolls_inside_a_fixed_height_panel(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        below = page.locator("#chat-world-box")                         # under the panel, in its column
        # Gradio mounts the column's pieces one after another: measured before the panel above it
        # was there, the box stood 420 px higher (1 run in 4 beside a training run)
        expect(page.locator("#live-panel .dp-empty")).to_be_visible(timeout=30_000)
        before = settled_top(page, below)
        length = page.locator("#chat-gen-length input[type=number]")
        length.fill("256")
        length.press("Enter")
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=60_000)
        box = page.locator("#live-panel .dp-panel").evaluate("e => [e.clientHeight, e.scrollHeight]")
        after = below.evaluate(TOP_JS)
        page.close()
    ctx.close()
    assert box[1] > box[0] and 300 <= box[0] <= 420, box          # fixed height; the grid scrolls inside
    assert abs(after - before) < 120, (before, after)              # what is below stays where it was
