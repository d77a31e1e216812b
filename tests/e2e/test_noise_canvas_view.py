"""In headless Chromium: a tiny random DiffusionGemma in the app. Picked in Chat, it brings its own
settings (sampler, canvas); a canvas is watched going from noise (faint random tokens, marked ~,
never masks) to text, the step counter names the rule that ended each canvas, and Compare races it
against an AR model. With DP_SCREENSHOT_DIR set, the live view mid-canvas is saved there
(docs/diffusiongemma-live.png came from this test)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from tests.e2e.app_fakes import Slow, fake_backends, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.noise_models import tiny_noise_backend

pytestmark = BROWSER_MARKS
RECORD_JS = """(selector) => {
  const states = window.__states = [];
  const read = () => {
    const node = document.querySelector(selector + ' .dp-panel');
    const html = node ? node.innerHTML : '';
    if (html && (!states.length || states[states.length - 1] !== html)) states.push(html);
  };
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def choose(page, dropdown: str, option: str) -> None:
    page.locator(f"{dropdown} input").click()
    page.get_by_role("option", name=option, exact=True).first.click()


class SlowCanvas(Slow):
    """Each denoising step 0.1 s longer: the page gets quiet moments between steps (a screenshot
    waits for one), and the run lasts long enough to be watched. It never draws the end of the
    answer, so both canvases come on every machine: the random model's draws follow the CPU's float
    rounding (they differ between 1 and 2 threads), and on CI's machine canvas 1 drew the end, the
    answer stopped there and canvas 2 never came."""

    def denoise_canvas(self, *args):
        time.sleep(self._delay_s)
        logits = self._inner.denoise_canvas(*args).clone()
        logits[..., sorted(self._inner.eos_ids)] = -1e4     # finite: entropies stay numbers (0 * log 0)
        return logits


def context(tmp_path):
    gemma = SlowCanvas(tiny_noise_backend("tiny-gemma"), 0.1)
    return fake_context(tmp_path, backends={**fake_backends(), "tiny-gemma": gemma})


def test_a_canvas_goes_from_noise_to_text_and_races_an_ar_model(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(url)
        choose(page, "#chat-model", "tiny-gemma (diffusion)")
        expect(page.locator("#chat-sampler input")).to_have_value("entropy_bounded", timeout=20_000)
        expect(page.locator("#chat-block-size input[type=number]")).to_have_value("16")
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#live-panel").wait_for(state="attached", timeout=30_000)      # mounted (test_watching.record)
        page.evaluate(RECORD_JS, "#live-panel")             # every state the panel shows, as the page draws it
        page.locator("#send").click()
        noise = page.locator("#live-panel .dp-cell.dp-noise")
        expect(noise.first).to_be_visible(timeout=60_000)
        # the second canvas mid-way, as recorded: waited for before anything else (a screenshot)
        # may hold the page's main thread, during which Gradio hands several streamed updates to
        # the page at once and only the last is drawn
        page.wait_for_function("() => window.__states.some(h => h.includes('canvas 2/2') && h.includes('dp-noise'))",
                               timeout=120_000)
        folder = os.environ.get("DP_SCREENSHOT_DIR")
        if folder:       # the page as it is now (a locator's screenshot would wait for the panel to stop changing)
            Path(folder).mkdir(parents=True, exist_ok=True)
            box = page.evaluate("() => { const r = document.querySelector('#live-panel').getBoundingClientRect();"
                                " return {x: r.x, y: r.y + window.scrollY, width: r.width, height: r.height}; }")
            page.screenshot(path=Path(folder) / "diffusiongemma-live.png", clip=box, full_page=True,
                            animations="disabled", timeout=120_000)
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=120_000)
        states = page.evaluate("() => window.__states")
        # mid-canvas: random tokens drawn as noise beside accepted ones, never a mask, in both canvases
        middle = [h for h in states if "dp-noise" in h]
        assert any("canvas 1/2" in h and "dp-accepted" in h for h in middle), len(states)
        assert any("canvas 2/2" in h for h in middle)
        assert not any("dp-mask" in h for h in states)
        assert any("random token" in h and "not accepted" in h for h in middle)
        assert any("renoised: <b>" in h for h in middle)
        # the end: text, no noise left, and the rule that ended the last canvas named
        assert page.locator("#live-panel .dp-cell.dp-noise").count() == 0
        assert page.locator("#live-panel .dp-cell.dp-done, #live-panel .dp-cell.dp-new, #live-panel .dp-cell.dp-end"
                            ).count() == 32                      # text, or after the answer's end
        expect(page.locator("#live-panel .dp-readout")).to_contain_text(re.compile("ended (by the step cap|early)"))
        noise_plot = page.locator(".js-plotly-plot").nth(1)
        expect(noise_plot).to_contain_text("Accepted tokens per step", timeout=30_000)
        expect(noise_plot).to_contain_text("mean entropy (nats)")            # the line, in the legend

        page.get_by_role("tab", name="Compare").click()
        choose(page, "#compare-diffusion", "tiny-gemma (diffusion)")
        page.locator("#compare-settings").get_by_text("Generation settings").first.click()
        expect(page.locator("#compare-sampler input")).to_have_value("entropy_bounded", timeout=20_000)
        page.locator("#compare-prompt textarea").fill("Say hi")
        page.locator("#race").click()
        expect(page.locator("#compare-diffusion-panel .dp-cell.dp-noise").first).to_be_visible(timeout=60_000)
        expect(page.locator("#compare-diffusion-panel [data-mode='done']")).to_be_visible(timeout=120_000)
        expect(page.locator("#compare-baseline-panel [data-mode='done']")).to_be_visible(timeout=120_000)
        expect(page.locator("#compare-table")).to_contain_text("tiny-gemma")
        page.close()
    ctx.close()
