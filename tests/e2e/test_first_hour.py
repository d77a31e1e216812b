"""A person's first hour in headless Chromium (issue 30, layout and smaller faults): the message
box and the conversation on the first screen at 1440x960 and 400x800, pickers not cut; an example
says it fills the box and does; Enter while an answer is generated queues the message; the
Models tab lists what works here first; plots are dark in dark mode with their legend clear of
the axis title; the panel's legend stays in view; status lines and panels are live regions and
the tool cards' icon buttons have names; Copy answer copies the answer as read; a stored chat
is renamed and continued; a call cut by Stop is marked.

Needs /usr/bin/chromium; skipped with that reason when it is absent. Set DP_SHOTS=<folder> to
keep the screenshots (each test takes its own).
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest

from tests.e2e.app_fakes import Slow, fake_backends, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import open_tab, set_number
from tests.e2e.test_first_contact import choose, last_conversation, shot
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.world.scripted import oracle_target, world_format
from world.task_sets import load_heldout_tasks

pytestmark = BROWSER_MARKS

SIZES = {"desktop": {"width": 1440, "height": 960}, "phone": {"width": 400, "height": 800}}
# the background luminance a dark theme has at most (Gradio's dark blocks: 0.02; white: 1.0)
DARK_LUMINANCE = 0.2


def open_page(browser, url: str, size: str = "desktop", theme: str | None = None, **context):
    page = browser.new_context(viewport=SIZES[size], **context).new_page()
    page.goto(url + (f"?__theme={theme}" if theme else ""))
    page.locator("#prompt textarea").wait_for(timeout=30_000)
    return page


@contextmanager
def app_page(browser, ctx, size: str = "desktop", **context):
    """The app over `ctx`, served, and a page open on it (open_page); both closed at the end."""
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url, size, **context)
        try:
            yield page
        finally:
            page.context.close()


def tool_context(tmp_path, delay_s: float = 0.0):
    """A world-format fake that answers the held-out shop_add task as the oracle does (two tool
    calls, then finish with an answer naming a product id)."""
    task = next(t for t in load_heldout_tasks() if t["intent"] == "shop_add")
    tools = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    backends = {**fake_backends(), "fake-bd": Slow(tools, delay_s) if delay_s else tools}
    return task, fake_context(tmp_path, backends=backends)


def box(page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not on the page"
    return found


def luminance(css_colour: str) -> float:
    """Relative luminance (WCAG) of an rgb()/rgba() colour."""
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


EFFECTIVE_BACKGROUND = """(el) => {
  for (let node = el; node; node = node.parentElement) {
    const colour = getComputedStyle(node).backgroundColor;
    if (colour && colour !== 'transparent' && !colour.startsWith('rgba(0, 0, 0, 0)')) return colour;
  }
  return getComputedStyle(document.body).backgroundColor;
}"""


# -- the layout -------------------------------------------------------------------------------
@pytest.mark.parametrize("size", list(SIZES))
def test_the_message_box_and_the_conversation_are_on_the_first_screen(browser, tmp_path, size):
    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url, size)
        height = SIZES[size]["height"]
        chat, prompt, send = box(page, "#chatbot"), box(page, "#prompt"), box(page, "#send")
        assert chat["y"] + 150 < height, chat                      # the conversation starts well above the fold
        assert prompt["y"] + prompt["height"] <= height, prompt    # the whole message box is visible
        assert send["y"] + send["height"] <= height, send          # and so is Send
        assert box(page, "#chat-examples")["y"] > prompt["y"]      # the examples follow the box
        shot(page, f"first-screen-{size}")
        page.context.close()
    ctx.close()


def test_pickers_are_not_cut_at_a_phones_width(browser, tmp_path):
    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url, "phone")
        cut = "(el) => el.scrollWidth > el.clientWidth + 1"
        for tab, pickers in (("Chat", ["#chat-model"]), ("Compare", ["#compare-diffusion", "#compare-baseline"]),
                             ("Agent", ["#agent-task", "#agent-model"])):
            open_tab(page, tab)
            for picker in pickers:
                field = page.locator(f"{picker} input").first
                field.wait_for()
                assert not field.evaluate(cut), (picker, field.input_value())
        shot(page, "phone-agent-pickers")
        page.context.close()
    ctx.close()


def test_an_example_says_it_fills_the_box_and_does(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        examples = page.locator("#chat-examples")
        expect(examples).to_contain_text("a click puts one in the message box (Enter or Send runs it)")
        # the first sample that shows text: the Dataset may render its buttons before their labels
        # (seen on a slower CPU), and an empty read would make the checks below vacuous
        first = examples.locator("button, td, .gallery-item").filter(has_text=re.compile(r"\S")).first
        expect(first).to_have_text(re.compile(r"\w{3}"), timeout=10_000)
        text = first.inner_text().strip()
        assert text, "the first example shows no text"
        first.click()
        prompt = page.locator("#prompt textarea")
        expect(prompt).to_have_value(text, timeout=10_000)
        expect(prompt).to_be_focused(timeout=5_000)               # Enter now sends it
        page.wait_for_timeout(500)
        assert ctx.store.list_conversations() == []                # nothing was sent
        prompt.press("Enter")
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=30_000)
        assert last_conversation(ctx, "chat")["turns"][0]["content"] == text
        page.context.close()
    ctx.close()


def test_enter_while_an_answer_is_generated_queues_the_message(browser, tmp_path):
    from playwright.sync_api import expect

    slow = Slow(FakeDiffusionBackend("abc " * 12, name="fake-bd"), 0.08)
    ctx = fake_context(tmp_path, backends={"fake-bd": slow, "fake-ar": FakeARBackend("ok", name="fake-ar")})
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        choose(page, "#chat-sampler", "low_confidence")           # one token per forward: a few seconds
        set_number(page, "#chat-steps", "16")
        prompt = page.locator("#prompt textarea")
        prompt.fill("first question")
        prompt.press("Enter")
        expect(page.locator("#live-panel [data-mode='live']")).to_be_visible(timeout=20_000)
        prompt.fill("second question")
        prompt.press("Enter")
        status = page.locator("#chat-status")
        expect(status).to_contain_text("Queued: “second question”", timeout=2_000)
        expect(prompt).to_have_value("", timeout=2_000)           # the box is free for the next one
        prompt.fill("a draft")                                    # typed while waiting: kept
        shot(page, "queued")
        chat = page.locator("#chatbot")
        expect(chat).to_contain_text("second question", timeout=60_000)
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(500)
        turns = last_conversation(ctx, "chat")["turns"]
        assert [t["content"] for t in turns if t["role"] == "user"] == ["first question", "second question"]
        assert len(ctx.store.list_conversations()) == 1           # one conversation, in order
        expect(prompt).to_have_value("a draft")
        page.context.close()
    ctx.close()


def test_the_models_tab_lists_the_models_on_this_machine_first(browser, tmp_path):
    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        open_tab(page, "Models")
        rows = page.locator("#models-table tr")
        rows.nth(1).wait_for()
        here = [row.locator("td").nth(4).inner_text().strip() for row in rows.all()[1:]]
        assert "yes" in here and "no" in here, here
        assert here == sorted(here, key=lambda v: v != "yes"), here    # every "yes" before any "no"
        page.context.close()
    ctx.close()


# -- smaller faults ---------------------------------------------------------------------------
def test_dark_mode_plots_have_a_dark_background_and_their_legend_clears_the_axis_title(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url, theme="dark")
        page.locator("#prompt textarea").fill("hello")
        page.locator("#send").click()
        plots = page.locator(".js-plotly-plot")
        expect(plots).to_have_count(2, timeout=30_000)
        page.wait_for_timeout(800)
        for i in range(2):
            plot = plots.nth(i)
            paper = plot.locator(".main-svg").first
            background = paper.evaluate(EFFECTIVE_BACKGROUND)
            assert luminance(background) < DARK_LUMINANCE, (i, background)
            area = plot.locator("rect.bg").first                  # the plot area: transparent or dark
            fill, opacity = area.evaluate("e => [getComputedStyle(e).fill, getComputedStyle(e).fillOpacity]")
            assert float(opacity) == 0 or luminance(fill) < DARK_LUMINANCE, (i, fill, opacity)
            title = plot.locator(".gtitle").first.evaluate("e => getComputedStyle(e).fill")
            assert luminance(title) > 0.5, (i, title)               # light text on it
        legend, x_title = plots.nth(1).locator("g.legend").first, plots.nth(1).locator(".g-xtitle").first
        a, b = legend.bounding_box(), x_title.bounding_box()
        apart = a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
        assert apart, (a, b)
        plots.nth(1).scroll_into_view_if_needed()
        shot(page, "dark-plots")
        page.context.close()
    ctx.close()


def test_the_panels_legend_stays_in_view_below_a_long_grid(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, backends={"fake-bd": FakeDiffusionBackend("abc " * 120, name="fake-bd"),
                                           "fake-ar": FakeARBackend("ok", name="fake-ar")})
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        set_number(page, "#chat-gen-length", "512")                # a grid taller than the panel
        page.locator("#prompt textarea").fill("go on")
        page.locator("#send").click()
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=120_000)
        panel = page.locator("#live-panel .dp-panel")
        assert panel.evaluate("e => e.scrollHeight > e.clientHeight + 50")      # the grid does scroll
        frame, legend = panel.bounding_box(), page.locator("#live-panel .dp-legend").bounding_box()
        assert frame["y"] <= legend["y"] and legend["y"] + legend["height"] <= frame["y"] + frame["height"] + 1, \
            (frame, legend)
        page.context.close()
    ctx.close()


def test_status_lines_and_panels_are_live_regions_and_tool_cards_buttons_have_names(browser, tmp_path):
    from playwright.sync_api import expect

    task, ctx = tool_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        expect(page.locator("#chat-status")).to_have_attribute("aria-live", "polite")
        expect(page.locator("#chat-status")).to_have_attribute("role", "status")
        # the panel: a named region whose one persistent live line repeats the panel's head
        expect(page.locator("#live-panel")).to_have_attribute("role", "region")
        live_line = page.locator("#live-panel > .dp-sr-status[role='status'][aria-live='polite']")
        expect(live_line).to_have_count(1)
        set_number(page, "#chat-gen-length", "128")
        page.locator("#prompt textarea").fill(task["instruction"])
        page.locator("#prompt textarea").press("Enter")
        expect(page.locator("#chat-status")).to_contain_text("tool call", timeout=60_000)
        expect(live_line).to_contain_text("finished")
        assert live_line.text_content() == page.locator("#live-panel .dp-live-head").text_content().strip()
        expanders = page.locator("#chatbot .thought-group button")
        expect(expanders.first).to_be_visible()
        assert expanders.count() >= 2
        nameless = page.evaluate("""() => [...document.querySelectorAll('button')]
            .filter(b => b.offsetParent !== null)
            .filter(b => !(b.getAttribute('aria-label') || '').trim() && !b.innerText.trim()
                         && !(b.getAttribute('title') || '').trim())
            .map(b => b.outerHTML.slice(0, 160))""")
        assert nameless == [], nameless
        open_tab(page, "Agent")
        expect(page.locator("#agent-status")).to_have_attribute("aria-live", "polite")
        expect(page.locator("#agent-panel > .dp-sr-status[aria-live='polite']")).to_have_count(1)
        page.context.close()
    ctx.close()


def test_copy_answer_copies_the_answer_as_read_with_the_products_name(browser, tmp_path):
    from playwright.sync_api import expect

    task, ctx = tool_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url, permissions=["clipboard-read", "clipboard-write"])
        set_number(page, "#chat-gen-length", "128")
        page.locator("#prompt textarea").fill(task["instruction"])
        page.locator("#prompt textarea").press("Enter")
        expect(page.locator("#chat-status")).to_contain_text("tool call", timeout=60_000)
        answer = last_conversation(ctx, "chat")["turns"][-1]["tool_calls"][0]["arguments"]["answer"]
        product = re.search(r"\bP[0-9A-Z]{3}\b", answer).group(0)                # the model names an id
        page.locator("#chatbot button", has_text="Copy answer").click()
        # the write ends after the server's answer_text round trip; the page marks the Chatbot when it
        # resolved (COPY_JS). Not wait_for_function on readText(): Playwright does not await a promise
        # its predicate returns, and a promise is truthy, so that wait passed at once, before the write
        expect(page.locator("#chatbot")).to_have_attribute("data-copied", re.compile(r"^\d+$"), timeout=15_000)
        copied = page.evaluate("navigator.clipboard.readText()")       # evaluate awaits the promise
        assert page.locator("#chatbot").get_attribute("data-copied") == str(len(copied)), copied
        assert copied.startswith(answer.split(product)[0] + product + " ("), copied
        for markup in ("Tool call", "call:", "response:", "```", "&quot;", "\\"):
            assert markup not in copied, copied
        expect(page.locator("#chatbot")).to_contain_text(f"{product} (")          # named where it is shown
        shot(page, "copied-answer")
        page.context.close()
    ctx.close()


def test_a_stored_chat_is_renamed_and_continued_in_chat(browser, tmp_path):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        page.locator("#prompt textarea").fill("first question")
        page.locator("#prompt textarea").press("Enter")
        expect(page.locator("#live-panel [data-mode='done']")).to_be_visible(timeout=30_000)
        page.reload()                                            # a new page: nothing of the chat in memory
        page.locator("#prompt textarea").wait_for()
        open_tab(page, "Sessions")
        rows = page.locator("#sessions-list")
        expect(rows).to_contain_text("first question", timeout=10_000)
        rows.get_by_test_id(re.compile(r"cell-\d+-2")).filter(has_text="first question").first.click()
        title = page.locator("#session-title textarea, #session-title input").first
        expect(title).to_have_value("first question", timeout=10_000)
        title.fill("My renamed chat")
        page.locator("#session-rename").click()
        expect(page.locator("#sessions-status")).to_contain_text("Renamed", timeout=10_000)
        expect(page.locator("#sessions-list")).to_contain_text("My renamed chat")
        stored = ctx.store.list_conversations()
        assert [c["title"] for c in stored] == ["My renamed chat"]
        page.locator("#session-continue").click()
        expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true", timeout=10_000)
        expect(page.locator("#chatbot")).to_contain_text("first question")
        expect(page.locator("#chat-status")).to_contain_text(f"Continuing conversation #{stored[0]['id']}")
        page.locator("#prompt textarea").fill("second question")
        page.locator("#prompt textarea").press("Enter")
        expect(page.locator("#chatbot")).to_contain_text("second question", timeout=30_000)
        expect(page.locator("#chat-status")).to_contain_text(f"saved as conversation #{stored[0]['id']}",
                                                             timeout=30_000)
        assert len(ctx.store.list_conversations()) == 1
        turns = ctx.store.get_conversation(stored[0]["id"])["turns"]
        assert [t["content"] for t in turns if t["role"] == "user"] == ["first question", "second question"]
        shot(page, "continued")
        page.context.close()
    ctx.close()
