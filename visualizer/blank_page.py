"""Why a generated HTML page would preview as a blank frame, in a sentence, or None when it shows
something. A page cut off inside its `<title>` (the answer ran out of length), an unclosed
comment, or a body without text leaves the sandboxed preview white; the person reads why.

The page is read with the standard library's HTMLParser, corrected where a browser reads the end
of a broken page differently (the HTML standard's tokenizer, which Chromium follows):
- `<title>` is RCDATA: up to `</title>` everything is the title's text, tags included;
- a `<!--` without `-->` runs to the end of the file, and a tag cut off at the end is dropped;
- script, style and template content never shows (`<noscript>` does: the preview runs no scripts).
What CSS may hide (display: none, white on white) is not guessed at.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

HIDDEN = {"script", "style", "template", "noembed", "noframes"}
VOID_HEAD = {"meta", "link", "base"}
SHOWS_ITSELF = {"img", "input", "button", "select", "textarea", "hr", "svg", "video", "audio", "iframe", "object",
                "embed", "canvas", "meter", "progress"}
_CUT_TAG = re.compile(r"<[A-Za-z/!?][^>]*\Z")        # a tag the answer stopped in the middle of
_CLOSED = re.compile(r"</html\s*>", re.IGNORECASE)


class _Visible(HTMLParser):
    """Counts what a browser would draw; remembers the element the page ends inside."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shown = 0
        self.open: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if self.in_title:
            return
        if tag == "title":
            self.in_title = True
        elif tag in SHOWS_ITSELF and not self._hidden():
            self.shown += 1
        elif tag not in VOID_HEAD:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif not self.in_title and tag in self.open:
            while self.open and self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self.in_title and not self._hidden() and data.strip():
            self.shown += 1

    def _hidden(self) -> bool:
        # text in <head> is not hidden: a browser moves it into the body
        return any(tag in HIDDEN for tag in self.open)


def blank_reason(html_code: str) -> str | None:
    """A sentence saying why the page would preview blank, or None when it shows something."""
    if not html_code.strip():
        return "The preview is blank: the answer holds no HTML."
    cut = not _CLOSED.search(html_code)
    text, ends_in_comment = html_code, False
    comment = text.find("<!--")
    while comment != -1:
        close = text.find("-->", comment + 4)
        if close == -1:
            text, ends_in_comment = text[:comment], True
            break
        comment = text.find("<!--", close + 3)
    text = _CUT_TAG.sub("", text)
    parser = _Visible()
    parser.feed(text)
    parser.close()
    if parser.shown:
        return None
    if ends_in_comment:
        why = "a <!-- comment is never closed, so everything after it is hidden"
    elif parser.in_title:
        why = "the page ends inside its <title>, so all that follows is the tab's title, not the page"
    elif hidden := next((t for t in reversed(parser.open) if t in HIDDEN), None):
        why = f"the page ends inside an unclosed <{hidden}>, whose content never shows"
    else:
        why = "the page has no text or images in its body"
    tail = (" The answer looks cut off (it has no </html>): a longer answer length may let the model finish it."
            if cut else "")
    return f"The preview is blank: {why}.{tail}"
