"""The cache control in a real browser: the Chat tab shows it with its info line and "How this
works" explains the three modes; a tiny LLaDA-shaped model (a real FullAttentionBackend) answers
with the dual cache, and a model that cannot use one answers with one sentence instead.

Set DP_SCREENSHOT_DIR=some/folder to keep the screenshots (cache-dual.png, cache-refused.png).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

import tests.tiny_models as tm
from app.controls import INFO
from engine.backends.full_attention import FullAttentionBackend
from reference.noise import damp_mask_logit
from tests.e2e.app_fakes import fake_backends, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import show_setting

pytestmark = BROWSER_MARKS


def tiny_llada() -> FullAttentionBackend:
    model = damp_mask_logit(tm.tiny_masked_lm(seed=3), tm.MASK_ID)
    return FullAttentionBackend(model, tm.tiny_tokenizer(), name="tiny-llada", mask_id=tm.MASK_ID,
                                logit_shift=False, device=torch.device("cpu"))


def choose(page, dropdown: str, option: str) -> None:
    page.locator(f"{dropdown} input").click()
    page.get_by_role("option", name=option, exact=True).first.click()


def shot(page, name: str, tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DP_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(300)
    page.screenshot(path=folder / name, full_page=True)
    return folder / name


def test_the_dual_cache_runs_and_a_model_without_one_says_so(browser, tmp_path):
    from playwright.sync_api import expect

    from app.state import AppContext

    backend = tiny_llada()
    ctx = AppContext.create(tmp_path / "sessions.db", model="tiny-llada", baseline="fake-ar",
                            preloaded={"tiny-llada": backend, **fake_backends()}, watch=False)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url)
        cache = page.locator("#chat-cache")
        page.locator("#chat-more-settings").wait_for(timeout=20_000)
        show_setting(page, "#chat-cache")                                 # under More settings
        expect(cache).to_be_visible()
        expect(cache).to_contain_text(INFO["cache"][:60])
        page.locator("#chat-how-it-works").click()
        expect(page.locator("#chat-how-it-works")).to_contain_text("go stale as the block fills in")

        for control, value in (("#chat-gen-length", "32"), ("#chat-block-size", "8"), ("#chat-steps", "8")):
            page.locator(f"{control} input[type=number]").fill(value)
            page.locator(f"{control} input[type=number]").press("Enter")
        choose(page, "#chat-sampler", "low_confidence")
        choose(page, "#chat-cache", "dual")
        page.locator("#prompt textarea").fill("hello")
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=60_000)
        assert backend.cache_mode == "dual" and backend.positions_computed > 0
        turn = ctx.store.get_conversation(ctx.store.list_conversations()[0]["id"])["turns"][-1]
        assert turn["generation"].stats.nfe == 32                        # 4 blocks of 8 rounds
        shot(page, "cache-dual.png", tmp_path)

        choose(page, "#chat-model", "fake-bd (diffusion)")
        page.locator("#prompt textarea").fill("hello again")
        page.locator("#send").click()
        expect(page.get_by_text("cannot use the dual cache").first).to_be_visible(timeout=20_000)
        shot(page, "cache-refused.png", tmp_path)
        page.close()
    ctx.close()
