"""visualizer.escape: one table of hostile strings, each put through every context and checked by
a parser of that context (HTML: html.parser; Markdown: markdown-it in CommonMark mode with raw
HTML on, as permissive as a Markdown view gets; LaTeX: the escape leaves no active character)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from visualizer.escape import html_attribute, html_text, latex_text, markdown_text

HOSTILE = {
    "img-onerror": "<img src=x onerror=alert(1)>",
    "script": "<script>window.__xss=1</script>",
    "svg": "<svg/onload=alert(1)>",
    "iframe": '<iframe src="http://127.0.0.2/"></iframe>',
    "form": '<form action="http://127.0.0.2/"><input name=q></form>',
    "attr-break": '" onmouseover="alert(1)" x="',
    "single-quote-break": "' autofocus onfocus='alert(1)",
    "md-image": "![p](http://127.0.0.2/pixel.png?q=secret)",
    "md-image-partial": "![p](http://127.0.0.2/pix",
    "md-image-ref": "![p][r]\n\n[r]: http://127.0.0.2/ref.png",
    "md-image-shortcut": "![r]\n\n[r]: http://127.0.0.2/short.png",
    "md-image-in-link": "[![p](http://127.0.0.2/in.png)](http://example.com)",
    "md-image-angle": "![p](<http://127.0.0.2/angle.png>)",
    "autolink-html": "<http://127.0.0.2/auto>",
    "entity-bang": "&#33;[p](http://127.0.0.2/entity.png)",
    "escaped-backtick": "\\`<img src=http://127.0.0.2/bt.png>`",
    "double-backtick": "`` a ` <img src=http://127.0.0.2/dbl.png> ``",
    "code-span-html": "`<img src=http://127.0.0.2/code.png>`",
    "fence": "```html\n<img src=http://127.0.0.2/fence.png>\n```",
    "fence-unclosed": "```\n<img src=http://127.0.0.2/open.png>",
    "fence-in-list": "- a\n  ```\n<img src=http://127.0.0.2/list.png>\n```",
    "fence-in-quote": "> ```\n<img src=http://127.0.0.2/quote.png>",
    "fence-break-out": "````\n```\n<img src=http://127.0.0.2/break.png>\n````",
    "html-comment": "<!-- x --><img src=http://127.0.0.2/c.png>",
    "html-block": "<div>\n\n<img src=http://127.0.0.2/blk.png>\n\n</div>",
    "javascript-link": "[click](javascript:alert(1))",
    "latex-input": "\\input{/etc/hostname}",
    "latex-write": "\\immediate\\write18{touch /tmp/pwned}",
    "latex-specials": "100% of $x_1^2$ & #1 ~ {a} \\ b",
    "controls": "a\x00b\x1b[31mc\u202ed\x85e",
    "long": "<b>" * 500,
}
CASES = pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data):
        self.tags.append(("!--", {}))

    def handle_data(self, data):
        self.text += data


def parse(markup: str) -> _Tags:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    return parser


@CASES
def test_html_text_makes_no_element_and_reads_back(text):
    parsed = parse(f"<p>{html_text(text)}</p>")
    assert parsed.tags == [("p", {})]
    assert parsed.text == text


@CASES
def test_html_attribute_stays_one_attribute(text):
    parsed = parse(f'<div title="{html_attribute(text)}"></div>')
    assert parsed.tags == [("div", {"title": parsed.tags[0][1]["title"]})]
    shown = "".join(" " if ch in "\n\r\t" else ch for ch in text if ch in "\n\r\t" or ord(ch) >= 0x20)
    assert parsed.tags[0][1]["title"] == shown


# What a Markdown view may draw from escaped text: prose, links, emphasis, code. No images, no
# media, no forms, nothing with a src.
ALLOWED = {"p", "a", "code", "pre", "em", "strong", "ul", "ol", "li", "blockquote", "h1", "h2", "h3", "h4", "h5",
           "h6", "hr", "br"}


@CASES
def test_markdown_text_renders_no_image_and_no_element_of_its_own(text):
    rendered = MarkdownIt("commonmark").render(markdown_text(text))   # raw HTML allowed, as a permissive view
    tags = parse(rendered).tags
    assert {tag for tag, _ in tags} <= ALLOWED, rendered
    assert all("src" not in attrs for _, attrs in tags), rendered
    assert "127.0.0.2" not in "".join(str(attrs.get("href")) for tag, attrs in tags if tag != "a")


def test_markdown_keeps_formatting_links_and_code_literal():
    text = "**bold** and [a link](https://example.com)\n\n`a < b`\n\n```python\nif a < b:\n    pass\n```"
    rendered = MarkdownIt("commonmark").render(markdown_text(text))
    assert "<strong>bold</strong>" in rendered
    assert '<a href="https://example.com">a link</a>' in rendered
    assert "<code>a &lt; b</code>" in rendered
    assert '<pre><code class="language-python">if a &lt; b:\n    pass\n</code></pre>' in rendered


def test_markdown_image_becomes_a_link_not_an_image():
    rendered = MarkdownIt("commonmark").render(markdown_text(HOSTILE["md-image"]))
    assert parse(rendered).tags == [("p", {}), ("a", {"href": "http://127.0.0.2/pixel.png?q=secret"})]


def test_markdown_shows_html_as_text():
    rendered = MarkdownIt("commonmark").render(markdown_text(HOSTILE["img-onerror"]))
    assert parse(rendered).text.strip() == HOSTILE["img-onerror"]


_LATEX_COMMANDS = re.compile(r"\\(textbackslash|textasciitilde|textasciicircum|textless|textgreater|newline)\{\}"
                             r"|\\[&%$#_{}]")


@CASES
def test_latex_text_leaves_no_active_character(text):
    escaped = latex_text(text)
    bare = _LATEX_COMMANDS.sub("", escaped)
    assert not set(bare) & set("\\{}$&#^_%~"), bare
    assert all(ch == "\n" or 0x20 <= ord(ch) < 0x7F or 0xA0 <= ord(ch) <= 0xFF for ch in escaped)
