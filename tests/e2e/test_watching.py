"""In headless Chromium (issue 30): at the default settings every block of a Sprout answer is
seen resolving (at least 4 distinct panel states per block, a forward that decided many tokens
drawn in labelled parts); "replay" is shown wherever the display trails finished work (Chat,
Compare, Agent, Sessions); the numbers of one turn say what they cover; Compare races the whole
turn and marks each side finished when it is.

Set DP_SHOTS=<folder> to keep screenshots of what was checked.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

from tests.e2e.app_fakes import Slow, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.e2e.test_browser_watch import sprout_context
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.format import render_call
from world.task_sets import load_heldout_tasks

pytestmark = BROWSER_MARKS
VIEWPORT = {"width": 1440, "height": 960}

# Every state the panel is drawn in, recorded by the page itself (a MutationObserver sees each
# update Gradio applies, however busy the test's own polling is).
RECORD_JS = """(selector) => {
  window.__states = window.__states || {};
  const states = window.__states[selector] = [];
  const target = document.querySelector(selector);
  const read = () => {
    const panel = target.querySelector('[data-mode]');
    if (!panel) return;
    const cells = panel.querySelector('.dp-cells');
    const head = panel.querySelector('.dp-live-head');
    const state = {mode: panel.dataset.mode, generation: panel.dataset.generation, block: panel.dataset.block,
                   part: panel.dataset.part, cells: cells ? cells.innerHTML : '', head: head ? head.innerText : ''};
    const last = states[states.length - 1];
    if (!last || last.cells !== state.cells || last.mode !== state.mode || last.head !== state.head) states.push(state);
  };
  new MutationObserver(read).observe(target, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


# Compare: the two panels' modes at every update of either.
PAIR_JS = """() => {
  window.__pairs = [];
  const mode = (id) => { const p = document.querySelector(id + ' [data-mode]'); return p ? p.dataset.mode : ''; };
  const read = () => {
    const pair = mode('#compare-diffusion-panel') + '|' + mode('#compare-baseline-panel');
    if (window.__pairs[window.__pairs.length - 1] !== pair) window.__pairs.push(pair);
  };
  for (const id of ['#compare-diffusion-panel', '#compare-baseline-panel'])
    new MutationObserver(read).observe(document.querySelector(id),
                                       {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def shot(page, name: str, element: str | None = None) -> None:
    """A screenshot of the page (or of `element`) when DP_SHOTS names a folder."""
    folder = os.environ.get("DP_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        target = page.locator(element) if element else page
        target.screenshot(path=str(Path(folder) / f"{name}.png"))


def assert_head_fits(plot) -> None:
    """A plot's title is not cut at its right edge (plotly cuts a title wider than the figure),
    and its title, scope line, legend and plot area do not overlap (visualizer/plots.py headed)."""
    figure = plot.bounding_box()
    title = plot.locator(".gtitle").first.bounding_box()
    assert title["x"] + title["width"] <= figure["x"] + figure["width"], (title, figure)
    boxes = [plot.locator(sel).first.bounding_box()
             for sel in (".gtitle", ".gtitle-subtitle", "g.legend", ".nsewdrag") if plot.locator(sel).count()]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a["y"] + a["height"] <= b["y"] + 1, (a, b)           # each one below the one before


def record(page, selector: str) -> None:
    # Gradio mounts the page's columns one after another: the message box can be there before the
    # panel beside it, and observing a panel not mounted yet failed (1 run in 3 on a loaded machine)
    page.locator(selector).wait_for(state="attached", timeout=30_000)
    page.evaluate(RECORD_JS, selector)


def recorded(page, selector: str) -> list[dict]:
    return page.evaluate("(s) => window.__states[s]", selector)


def shop_task():
    return next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")


def oracle_context(tmp_path, delay_s: float = 0.0):
    """Fakes that speak the world format and act as the oracle: a search, an add, then finish (in
    a world the oracle does not know, as the Agent tab's typed instruction gets: finish at once)."""
    task = shop_task()
    oracle = oracle_target([task])

    def target(prompt: str) -> str:
        try:
            return oracle(prompt)
        except (TypeError, KeyError, StopIteration):
            return render_call("finish", {"answer": "Done."})

    bd = world_format(FakeDiffusionBackend(target, max_length=8192, name="fake-bd"))
    ar = world_format(FakeARBackend(target, max_length=8192, name="fake-ar"))
    backends = {"fake-bd": Slow(bd, delay_s) if delay_s else bd, "fake-ar": Slow(ar, delay_s) if delay_s else ar}
    return fake_context(tmp_path, backends=backends), task


def test_at_the_default_settings_every_block_of_a_sprout_answer_shows_at_least_four_states(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = sprout_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        record(page, "#live-panel")
        page.locator("#prompt textarea").fill("Please add a blue dress in size L to the cart.")
        page.locator("#send").click()
        expect(page.locator("#live-panel .dp-live-head")).to_contain_text("of one forward", timeout=30_000)
        shot(page, "watch-a-part", "#live-panel")
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=90_000)
        states = recorded(page, "#live-panel")
        status = page.locator("#chat-status").inner_text()
        page.close()
    ctx.close()
    per_block: dict[tuple[str, str], set[str]] = defaultdict(set)
    for state in states:
        if state["mode"] in ("live", "replay", "done") and state["block"] != "-1":
            per_block[(state["generation"], state["block"])].add(state["cells"])
    counts = {key: len(cells) for key, cells in per_block.items()}
    print("distinct states per (generation, block):", counts)
    generations = {g for g, _b in counts}
    assert len(generations) >= 2 and len(counts) >= 4, counts        # tool calls and the answer, several blocks
    assert min(counts.values()) >= 4, counts
    assert "this turn" in status and int(status.split("answer tokens ")[1].split()[0]) >= 64, status
    # a part is labelled as a part of one forward, never as a round of its own
    parts = [s for s in states if s["part"] not in ("1/1", None) and s["part"].split("/")[0] != s["part"].split("/")[1]]
    assert parts and all("of one forward" in s["head"] for s in parts)


def test_replay_is_shown_whenever_the_display_trails_finished_work_in_every_tab(browser, tmp_path):
    from playwright.sync_api import expect

    ctx, task = oracle_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        # Chat: the fakes compute the whole turn in a blink; the display then replays it at 120 ms a state
        page.locator("#prompt textarea").fill(task["instruction"])
        page.locator("#send").click()
        head = page.locator("#live-panel .dp-live-head")
        expect(head).to_contain_text("replay", timeout=30_000)
        expect(head).to_contain_text("computing finished")
        shot(page, "replay-chat", "#live-panel")
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=60_000)

        page.get_by_role("tab", name="Compare").click()
        page.locator("#compare-prompt textarea").fill(task["instruction"])
        page.locator("#race").click()
        expect(page.locator('#compare-baseline-panel [data-mode="replay"]')).to_be_visible(timeout=30_000)
        shot(page, "replay-compare", "#compare-baseline-panel")
        page.locator("#compare-stop").click()                   # Stop skips the rest of the replay
        expect(page.locator("#compare-status")).to_contain_text("Stopped", timeout=10_000)

        page.get_by_role("tab", name="Agent").click()
        page.locator("#agent-instruction textarea").fill(task["instruction"])
        page.locator("#run-agent").click()
        expect(page.locator('#agent-panel [data-mode="replay"]')).to_be_visible(timeout=30_000)
        expect(page.locator("#agent-status")).to_contain_text("replay")
        page.locator("#agent-status").scroll_into_view_if_needed()
        shot(page, "replay-agent")
        expect(page.locator("#agent-status")).to_contain_text("Episode over", timeout=60_000)

        page.get_by_role("tab", name="Sessions").click()
        page.get_by_role("button", name="Search / refresh").click()
        rows = page.locator("#sessions-list")
        expect(rows).to_contain_text("compare", timeout=10_000)
        rows.get_by_test_id(re.compile(r"cell-\d+-2")).first.click()
        expect(page.locator("#replay-panel [data-mode]")).to_be_visible(timeout=20_000)
        page.locator("#session-replay").click()
        expect(page.locator('#replay-panel [data-mode="replay"] .dp-live-head')).to_contain_text("replay",
                                                                                               timeout=20_000)
        shot(page, "replay-sessions", "#replay-panel")
        page.close()
    ctx.close()


def test_the_numbers_of_one_turn_say_what_they_cover(browser, tmp_path):
    from playwright.sync_api import expect

    ctx, task = oracle_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        page.locator("#prompt textarea").fill(task["instruction"])
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=60_000)
        expect(page.locator(".js-plotly-plot").nth(1)).to_be_visible(timeout=30_000)
        status = page.locator("#chat-status")
        expect(status).to_contain_text("this turn (3 generations): answer tokens")
        expect(page.locator("#live-panel .dp-readout .dp-scope")).to_have_text(
            "this generation (3 of 3 in this turn):")
        scopes = page.locator(".js-plotly-plot .gtitle-subtitle").all_text_contents()
        assert len(scopes) >= 2 and all(t == "this generation (3 of 3 in this turn)" for t in scopes), scopes
        for plot in page.locator(".js-plotly-plot").all():          # the head: whole, and nothing on anything
            assert_head_fits(plot)
        page.locator("#chat-status").scroll_into_view_if_needed()
        shot(page, "scopes-chat")
        shot(page, "scopes-panel", "#live-panel")
        page.close()
    ctx.close()


def test_compare_races_the_whole_turn_and_marks_each_side_finished_when_it_is(browser, tmp_path):
    from playwright.sync_api import expect

    ctx, task = oracle_context(tmp_path, delay_s=0.01)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        page.get_by_role("tab", name="Compare").click()
        page.locator("#compare-settings").get_by_text("Generation settings").first.click()
        set_number(page, "#compare-pace-ms", "40")
        set_number(page, "#compare-threshold", "0.5")          # the diffusion side decides several tokens a forward
        record(page, "#compare-baseline-panel")
        page.locator("#compare-diffusion-panel").wait_for(state="attached", timeout=30_000)
        page.evaluate(PAIR_JS)
        page.locator("#compare-prompt textarea").fill(task["instruction"])
        page.locator("#race").click()
        # the diffusion side needs far fewer forwards: it is finished while the AR side still runs
        expect(page.locator('#compare-diffusion-panel [data-mode="done"]')).to_be_visible(timeout=60_000)
        page.locator("#compare-diffusion-panel").scroll_into_view_if_needed()
        shot(page, "compare-one-side-finished")
        expect(page.locator('#compare-baseline-panel [data-mode="done"]')).to_be_visible(timeout=120_000)
        table = page.locator("#compare-table")
        expect(table).to_contain_text("this turn (3 generations)")
        expect(page.locator("#compare-status")).to_contain_text("this turn: fake-bd took")
        # each side's answer as text under its grid (issue 46, point 5)
        for side in ("#compare-diffusion-panel", "#compare-baseline-panel"):
            expect(page.locator(f"{side} .dp-answer-text")).to_contain_text("Answer after 2 tool call(s):")
        answers = [page.locator(f"{side} .dp-answer-text").inner_text()
                   for side in ("#compare-diffusion-panel", "#compare-baseline-panel")]
        expect(page.locator(".js-plotly-plot .gtitle-subtitle").first).to_contain_text("this turn", timeout=30_000)
        assert_head_fits(page.locator(".js-plotly-plot").first)
        generations = {s["generation"] for s in recorded(page, "#compare-baseline-panel")}
        pairs = page.evaluate("() => window.__pairs")
        rows = table.locator("tr[data-side-state]").all()
        states = [row.get_attribute("data-side-state") for row in rows]
        page.locator("#compare-table").scroll_into_view_if_needed()
        shot(page, "compare-whole-turn")
        page.close()
    ctx.close()
    # a moment when the diffusion side read finished while the AR side was still drawn
    assert "done|live" in pairs or "done|replay" in pairs, pairs
    assert pairs[-1] == "done|done" and "live|done" not in pairs and "replay|done" not in pairs, pairs
    assert generations >= {"1", "2", "3"}, generations                     # every call of the turn was raced
    assert states == ["finished", "finished"]
    assert answers[0] == answers[1] and len(answers[0]) > len("Answer after 2 tool call(s): "), answers


def test_the_answer_streams_into_its_bubble_while_its_finish_call_is_written(browser, tmp_path):
    """Issue 46, point 4: the answer's text grows in its bubble as its tokens are decided (with a
    trailing …), not only once the finish call that carries it is whole."""
    from playwright.sync_api import expect

    ctx, task = oracle_context(tmp_path, delay_s=0.02)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        set_number(page, "#chat-pace-ms", "40")
        page.evaluate("""() => {
          const texts = window.__bubbles = [];
          new MutationObserver(() => {
            const text = document.querySelector('#chatbot').innerText;
            if (texts[texts.length - 1] !== text) texts.push(text);
          }).observe(document.querySelector('#chatbot'), {subtree: true, childList: true, characterData: true});
        }""")
        page.locator("#prompt textarea").fill(task["instruction"])
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=120_000)
        texts = page.evaluate("() => window.__bubbles")
        final = ctx.store.get_conversation(ctx.store.list_conversations()[0]["id"])["turns"][-1]["content"]
        page.close()
    ctx.close()
    call = json.loads(final.removeprefix("<tool_call>").removesuffix("</tool_call>"))
    answer = call["arguments"]["answer"]                 # the stored finish call: the answer as written
    growing = [t for t in texts if " …" in t]
    partial = [t for t in growing for k in range(1, len(answer)) if answer[:k] + " …" in t]
    assert answer and partial, (answer, growing[-3:])
