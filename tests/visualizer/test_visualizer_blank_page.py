"""Why a generated page previews blank (visualizer/blank_page.py): each way a page ends up white,
and pages that show something. tests/e2e/test_silent_failures.py draws the same pages in
Chromium and checks that the blank ones are white there and the others are not."""

from __future__ import annotations

import pytest

from visualizer import sandboxed_preview
from visualizer.blank_page import blank_reason

HEAD = "<!DOCTYPE html><html><head><title>Blue Dresses</title></head>"
# page -> the words its reason must hold (None: the page shows something)
PAGES = {
    "cut-in-title": ("<!DOCTYPE html><html><head><title>Blue Dre", ["inside its <title>", "cut off"]),
    "title-never-closed": ("<html><head><title>a<title>b</head><body><h1>Hi</h1></body></html>",
                           ["inside its <title>"]),
    "open-comment": (HEAD + "<body><!-- draft <h1>Hi</h1></body></html>", ["comment is never closed"]),
    "cut-in-style": ("<html><head><style>h1 { color: red", ["unclosed <style>", "cut off"]),
    "empty-body": (HEAD + "<body>  \n</body></html>", ["no text or images"]),
    "cut-in-a-tag": (HEAD + "<body><h", ["no text or images", "cut off"]),
    "only-a-script": (HEAD + "<body><script>document.write('hi')</script></body></html>", ["no text or images"]),
    "whole-page": (HEAD + "<body><h1>Blue Dresses</h1><p>New in.</p></body></html>", None),
    "cut-after-text": (HEAD + "<body><h1>Blue Dresses</h1><p>New i", None),
    "text-in-head": ("<html><head><title>x</title></head>Hello</html>", None),
    "image-only": (HEAD + '<body><img alt="a dress" src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></body></html>',
                   None),
    "noscript": (HEAD + "<body><noscript>Scripts are off.</noscript></body></html>", None),
    "closed-comment": (HEAD + "<body><!-- note --><p>Hi</p></body></html>", None),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_blank_reason(name):
    page, words = PAGES[name]
    reason = blank_reason(page)
    if words is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith("The preview is blank: ")
        assert all(w in reason for w in words), reason


def test_a_closed_page_is_not_called_cut_off():
    assert "cut off" not in blank_reason(HEAD + "<body></body></html>")


def test_the_preview_says_why_above_the_frame_and_escapes_it():
    blank = sandboxed_preview(PAGES["cut-in-title"][0])
    assert blank.index('class="dp-notice dp-blank-preview"') < blank.index("<iframe")
    assert "inside its &lt;title&gt;" in blank                       # the reason is text, not markup
    assert "dp-blank-preview" not in sandboxed_preview(PAGES["whole-page"][0])
