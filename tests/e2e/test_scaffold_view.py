"""In headless Chromium: what a person sees of schema-scaffolded decoding. The Chat's "JSON schema"
box (its example loads with a click) gives an answer that is valid JSON, shown formatted; the
cells the scaffold placed are drawn as pre-filled (dotted outline, hatched, a legend entry), with
text contrast >= 4.5:1 in both themes; the Agent tab's "Scaffolded tool calls" mode draws them
too; a schema that is not one is a sentence under the message box, never a traceback; the exported replay
draws pre-filled cells as well.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.structured import EXAMPLE_SCHEMA
from tests.e2e.app_fakes import Slow, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.fakes import FakeDiffusionBackend

CONTRAST_JS = (Path(__file__).parent / "contrast.js").read_text(encoding="utf-8")
# What the fake "knows" for the example schema; the scaffold writes every key, quote and brace.
ORDER = {"product": "rain jacket", "colour": "blue", "size": "M", "quantity": 2, "gift": False}
AGENT_CALL = '<tool_call>{"name":"view_cart","arguments":{}}</tool_call>'
STYLE_JS = ("e => { const s = getComputedStyle(e); "
            "return [s.borderTopStyle, s.backgroundImage.startsWith('repeating-linear-gradient')]; }")

pytestmark = BROWSER_MARKS


def order_backend(delay_s: float = 0.05) -> Slow:
    return Slow(FakeDiffusionBackend(json.dumps(ORDER, separators=(",", ":")), name="fake-bd"), delay_s)


def chatbot_json(page) -> dict:
    """The last reply's code block, parsed: the answer as the person reads it."""
    code = page.locator("#chatbot pre code, #chatbot pre").last.inner_text()
    return json.loads(code)


def fill_schema(page, text: str) -> None:
    """Open the schema box and type `text`, once its textbox is mounted: a fill that lands while
    the accordion mounts it can be reset to the initial empty value (1 run in 3 sent no schema)."""
    from playwright.sync_api import expect

    page.locator("#chat-schema-box").click()
    box = page.locator("#chat-schema textarea")
    expect(box).to_be_visible()
    expect(box).to_be_editable()
    for _ in range(3):
        box.fill(text)
        page.wait_for_timeout(300)                                  # past the mount's own writes
        if box.input_value() == text:
            break
    expect(box).to_have_value(text)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_json_schema_box_gives_formatted_json_and_prefilled_cells_read_well(browser, tmp_path, theme):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, backends={"fake-bd": order_backend()})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url + ("?__theme=dark" if theme == "dark" else ""))
        page.locator("#chat-schema-box").click()
        page.locator("#chat-schema-example").click()                    # the example schema and its prompt
        schema_box = page.locator("#chat-schema textarea")
        expect(schema_box).not_to_have_value("", timeout=10_000)
        assert json.loads(schema_box.input_value()) == EXAMPLE_SCHEMA
        expect(page.locator("#prompt textarea")).not_to_have_value("")
        page.locator("#send").click()
        live = page.locator("#live-panel")
        expect(live.locator('[data-mode="live"] .dp-pre').first).to_be_visible(timeout=30_000)
        expect(live.locator('[data-mode="done"]')).to_be_visible(timeout=60_000)
        expect(page.locator("#chat-status")).to_contain_text("follows the JSON schema", timeout=20_000)
        answer = chatbot_json(page)
        assert set(answer) == set(EXAMPLE_SCHEMA["properties"]) and answer["size"] in ("S", "M", "L", "XL")
        assert "\n  " in page.locator("#chatbot pre").last.inner_text()            # formatted, one key a line
        # pre-filled: a dotted outline and a hatch (not colour alone), named in the legend
        cell = live.locator(".dp-cells .dp-pre").first
        assert cell.evaluate(STYLE_JS) == ["dotted", True]
        key = live.locator(".dp-legend .dp-key-pre")
        assert key.evaluate(STYLE_JS) == ["dotted", True]
        expect(live.locator(".dp-legend")).to_contain_text("pre-filled by the schema")
        assert live.locator(".dp-cells .dp-pre").count() > live.locator(".dp-cells .dp-done, "
                                                                        ".dp-cells .dp-new").count()
        # the last update (the plots) ends the run; until then Gradio draws the outputs translucent
        expect(page.locator(".js-plotly-plot").nth(1)).to_be_visible(timeout=30_000)
        page.wait_for_timeout(500)
        rows = page.evaluate(CONTRAST_JS)
        page.close()
    ctx.close()
    pre = [r for r in rows if r["cls"].startswith("dp-cell dp-pre") or "dp-key-pre" in r["cls"]]
    low = [r for r in rows if r["ratio"] < 4.5]
    assert pre and low == [], low[:10]


def test_a_schema_that_is_not_json_is_a_sentence_not_a_traceback(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, backends={"fake-bd": order_backend(0.0)})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        fill_schema(page, '{"type": "object", "properties": {"size": ')
        page.locator("#prompt textarea").fill("Order a jacket")
        page.locator("#send").click()
        status = page.locator("#chat-status")          # the sentence under the box, the message kept
        expect(status).to_contain_text("The JSON schema is not valid JSON", timeout=20_000)
        expect(status).to_contain_text("line 1, column")
        expect(page.locator("#prompt textarea")).to_have_value("Order a jacket")
        body = page.locator("body").inner_text()
        page.close()
    stored = ctx.store.list_conversations()
    ctx.close()
    assert "Traceback" not in body and "JSONDecodeError" not in body and "File \"" not in body
    assert stored == []                                              # nothing ran, nothing was stored


def test_the_agents_scaffolded_mode_draws_the_calls_fixed_text_as_prefilled(browser, tmp_path):
    from playwright.sync_api import expect

    backend = Slow(FakeDiffusionBackend(AGENT_CALL, name="fake-bd", max_length=8192), 0.05)
    ctx = fake_context(tmp_path, backends={"fake-bd": backend})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        page.get_by_role("tab", name="Agent").click()
        page.locator("#agent-instruction textarea, #agent-instruction input").first.fill("Show me my cart.")
        page.locator("#agent-scaffold input[type=checkbox]").check()
        expect(page.locator("#agent-scaffold")).to_contain_text("the model decides only the values")
        page.locator("#run-agent").click()
        panel = page.locator("#agent-panel")
        expect(panel.locator(".dp-cells .dp-pre").first).to_be_visible(timeout=30_000)
        expect(panel.locator(".dp-legend")).to_contain_text("pre-filled by the schema")
        expect(page.locator("#agent-status")).to_contain_text("Episode over", timeout=60_000)
        page.close()
    ctx.close()


def test_the_exported_replay_draws_prefilled_cells(browser, tmp_path):
    from playwright.sync_api import expect

    from engine.trace import Result, Stats
    from tests.visualizer.test_visualizer_prefilled import MASK, PIECES, scaffolded_frames
    from visualizer import standalone_replay_html

    frames = scaffolded_frames()
    result = Result(token_ids=frames[-1].canvas, text='{"size": "M"}', frames=frames, mask_id=MASK,
                    stats=Stats(nfe=2, new_tokens=6, tokens_per_forward=3.0, seconds=0.02, tokens_per_s=300.0,
                                first_token_s=0.01, stop_reason="length"), pieces=dict(PIECES))
    path = tmp_path / "replay.html"
    path.write_text(standalone_replay_html(result, "t", "p", "m", {"gen_length": 6, "block_size": 6}),
                    encoding="utf-8")
    page = browser.new_context(offline=True).new_page()
    page.goto(path.as_uri())
    grid = page.locator("#grid")
    assert grid.locator(".dp-pre").count() == 0                    # round 0: all masked
    page.locator("#scrubber").fill("1")
    expect(grid.locator(".dp-pre")).to_have_count(5)
    expect(grid.locator(".dp-mask")).to_have_count(1)
    expect(page.locator("#readout")).to_contain_text("pre-filled by the schema 5")
    page.locator("#scrubber").fill("2")
    expect(grid.locator(".dp-new")).to_have_count(1)
    expect(grid.locator(".dp-pre")).to_have_count(5)
    assert grid.locator(".dp-pre").first.evaluate(STYLE_JS) == ["dotted", True]
    expect(page.locator(".dp-legend")).to_contain_text("pre-filled by the schema")
    page.close()


def test_hostile_text_in_a_schema_stays_text_in_the_canvas_and_the_answer(browser, tmp_path):
    from playwright.sync_api import expect

    from tests.e2e.app_fakes import XSS
    from tests.e2e.test_browser import watch_for_scripts

    schema = {"type": "object", "properties": {"tag": {"enum": [XSS]}}, "required": ["tag"]}
    backend = FakeDiffusionBackend(json.dumps({"tag": XSS}, separators=(",", ":")), name="fake-bd")
    ctx = fake_context(tmp_path, backends={"fake-bd": backend})
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        dialogs = watch_for_scripts(page)
        page.goto(url)
        fill_schema(page, json.dumps(schema))
        page.locator("#prompt textarea").fill("Pick the tag")
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=30_000)
        expect(page.locator("#chat-status")).to_contain_text("follows the JSON schema", timeout=20_000)
        assert chatbot_json(page) == {"tag": XSS}                        # shown as text, formatted
        # the whole enum member was placed by the scaffold, one escaped character per cell
        assert "".join(page.locator("#live-panel .dp-cells .dp-pre").all_inner_texts()).replace("\u2423", " ") \
            .startswith('{"tag":"' + XSS)
        assert page.locator("#live-panel img, #chatbot img").count() == 0 and dialogs == []
        page.close()
    ctx.close()
