"""In headless Chromium (issue 46, point 4): an answer that is code is drawn as a highlighted code
block in its bubble, not as paragraphs, and its markup stays text. Set DP_SHOTS=<folder> to keep a
screenshot."""

from __future__ import annotations

import pytest

from tests.e2e.app_fakes import fake_backends, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.e2e.test_first_contact import open_page, shot
from tests.fakes import FakeDiffusionBackend

pytestmark = BROWSER_MARKS
PYTHON = 'def reverse(text):\n    """<b>not bold</b>"""\n    return text[::-1]'
LATEX = "\\documentclass{article}\n\\begin{document}\n<b>not bold</b> $x^2$\n\\end{document}"


@pytest.mark.parametrize("code, last_line", [(PYTHON, "return text[::-1]"), (LATEX, "\\end{document}")],
                         ids=["python", "latex"])
def test_a_code_answer_is_a_highlighted_code_block(browser, tmp_path, code, last_line):
    from playwright.sync_api import expect

    ctx = fake_context(tmp_path, backends={**fake_backends(), "fake-bd": FakeDiffusionBackend(code, name="fake-bd")})
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        set_number(page, "#chat-pace-ms", "0")
        page.locator("#prompt textarea").fill("Write it as code.")
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=60_000)
        block = page.locator("#chatbot pre code").last
        expect(block).to_contain_text(last_line)
        expect(block).to_contain_text("<b>not bold</b>")                      # markup shown as text
        assert page.locator("#chatbot pre code b").count() == 0
        highlighted = block.evaluate("code => code.querySelectorAll('span[class]').length")
        block.scroll_into_view_if_needed()
        shot(page, f"chat-code-block-{last_line[:3]}")
        page.close()
    ctx.close()
    assert highlighted > 0                                 # the highlighter marked up the tokens


PAGE = "<!DOCTYPE html><html><body><h1 id='hello'>Hello from the page</h1></body></html>"


def test_an_html_answer_is_code_in_the_chat_and_a_sandboxed_page_beside_the_panel(browser, tmp_path):
    from playwright.sync_api import expect

    model = FakeDiffusionBackend(PAGE, name="fake-bd", max_length=2048)
    ctx = fake_context(tmp_path, backends={**fake_backends(), "fake-bd": model})
    with running_app(ctx) as (_demo, url):
        page = open_page(browser, url)
        set_number(page, "#chat-pace-ms", "0")
        set_number(page, "#chat-gen-length", "128")
        page.locator("#prompt textarea").fill("Make me a page.")
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=60_000)
        expect(page.locator("#chatbot pre code").last).to_contain_text("<h1 id='hello'>")     # the code, as text
        frame = page.locator("#export-preview iframe[sandbox='']")                          # no scripts, no origin
        expect(frame).to_be_visible(timeout=20_000)
        expect(page.frame_locator("#export-preview iframe").locator("#hello")).to_have_text("Hello from the page")
        shot(page, "chat-html-preview")
        page.close()
    ctx.close()
