"""In headless Chromium: what a person sees of tokens rewritten while decoding. A Chat run with
joint_threshold (LLaDA2.1's rule) on a fake that drafts a wrong token and then prefers the right
one: the grid draws the edited cell with the old token struck through, says "edited: old -> new"
in its title and aria-label (and takes focus), and the legend explains it; "Watch it edit" turns
remasking on; the exported replay draws edits and remasked cells too. Screenshots are saved under
the test's folder (and, with DP_SCREENSHOTS=dir, copied there) to be looked at."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import show_setting
from tests.fakes import MASK, FakeDiffusionBackend

pytestmark = BROWSER_MARKS
TARGET = "Hi there"


class Drafting(FakeDiffusionBackend):
    """At each `drafts` position: the wrong token while it is masked (a sure draft), then the
    target once the wrong one stands there, surer still (the edit)."""

    def __init__(self, target: str, drafts: dict[int, str], **kwargs) -> None:
        super().__init__(target, **kwargs)
        self.drafts = {p: self.tokenizer.encode(c)[0] for p, c in drafts.items()}

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        logits = super().denoise(canvas, block).clone()                        # (1, B, V)
        for position, wrong in self.drafts.items():
            if block.start <= position < block.stop:
                row = logits[0, position - block.start]
                now = int(canvas[0, position])
                if now in (MASK, wrong):
                    row[:] = -30.0
                    row[wrong if now == MASK else self.target_at(position)] = 10.0
        return logits


def keep(page, folder: Path, name: str) -> Path:
    path = folder / name
    page.screenshot(path=str(path), full_page=False)
    if os.environ.get("DP_SCREENSHOTS"):
        shutil.copy(path, Path(os.environ["DP_SCREENSHOTS"]) / name)
    return path


def choose(page, dropdown: str, option: str) -> None:
    page.locator(f"{dropdown} input").click()
    page.get_by_role("option", name=option, exact=True).first.click()


def test_an_edited_cell_is_drawn_and_announced_as_an_edit(browser, tmp_path):
    from playwright.sync_api import expect

    backend = Drafting(TARGET, {1: "o"}, name="fake-bd")                       # "Ho" drafted, "Hi" after the edit
    ctx = fake_context(tmp_path, backends={"fake-bd": backend})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 1100})
        page.goto(url)
        choose(page, "#chat-sampler", "joint_threshold")
        page.locator("#prompt textarea").fill("Say hi")
        page.locator("#send").click()
        panel = page.locator("#live-panel")
        expect(panel.locator('[data-mode="done"]')).to_be_visible(timeout=60_000)
        edited = panel.locator(".dp-cells .dp-edited")
        expect(edited).to_have_count(1)
        expect(edited).to_have_attribute("aria-label", "#1: 'i', edited: 'o' -> 'i'")
        expect(edited).to_have_attribute("title", __import__("re").compile("edited: 'o' -> 'i' at NFE"))
        expect(edited.locator("s.dp-old")).to_have_text("o")                  # the old token, struck through
        assert edited.locator("s.dp-old").evaluate("e => getComputedStyle(e).textDecorationLine") == "line-through"
        assert edited.evaluate("e => getComputedStyle(e).borderTopStyle") == "double"   # a shape, not colour alone
        edited.focus()
        assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("#1: 'i', edited")
        expect(panel.locator(".dp-legend")).to_contain_text("edited: a decided token rewritten")
        expect(page.locator("#chatbot")).to_contain_text(TARGET)
        edited.scroll_into_view_if_needed()
        edited.hover()
        keep(page, tmp_path, "edited-cell.png")
        # the preset that makes edits visible on the bundled model turns remasking on
        show_setting(page, "#chat-preset")                               # under More settings
        choose(page, "#chat-preset", "Watch it edit")
        expect(page.locator("#chat-remask input")).to_have_value("loop", timeout=10_000)
        page.close()
    ctx.close()


def test_the_exported_replay_draws_edits_and_remasked_cells(browser, tmp_path):
    from playwright.sync_api import expect

    from tests.visualizer.test_visualizer_edits import edit_result
    from visualizer import standalone_replay_html

    path = tmp_path / "replay.html"
    path.write_text(standalone_replay_html(edit_result(), "t", "p", "m", {"gen_length": 4, "block_size": 4}),
                    encoding="utf-8")
    page = browser.new_context(offline=True).new_page()
    page.goto(path.as_uri())
    grid = page.locator("#grid")
    page.locator("#scrubber").fill("2")
    edited = grid.locator(".dp-edited")
    expect(edited).to_have_count(1)
    # the live grid's own words (visualizer/cells.py): the player is sent them
    expect(edited).to_have_attribute("aria-label", "#0: '<img src=x onerror=alert(1)>', edited: 'a' -> "
                                                   "'<img src=x onerror=alert(1)>'")
    expect(edited.locator("s.dp-old")).to_have_text("a")
    assert grid.locator("img").count() == 0                                    # the hostile token stays text
    page.locator("#scrubber").fill("3")
    expect(grid.locator(".dp-remasked")).to_have_count(1)
    expect(grid.locator(".dp-remasked")).to_have_attribute("title", "#1: remasked (was 'b'), to be decoded again")
    page.locator("#scrubber").fill("4")
    expect(grid.locator(".dp-edited")).to_have_count(2)
    expect(page.locator("#readout")).to_contain_text("edits 2")
    expect(page.locator(".dp-legend")).to_contain_text("remasked")
    keep(page, tmp_path, "replay-edits.png")
    page.close()
