"""Escaping of untrusted text (model output, prompts, file names, search words), one function
per place it lands: HTML text, an HTML attribute value, Markdown, LaTeX.

Markdown is the subtle one. A Markdown view (Gradio's Chatbot and Markdown components) turns
`![a](http://host/p.png)` into an <img> the browser fetches, and raw HTML into elements, so
`markdown_text` rebuilds the text from pieces it knows the meaning of:
- outside code: HTML special characters become entities (shown as themselves), a `!` before
  `[` becomes `&#33;` (so an image is shown as "!" and a link, never fetched), and backticks
  become `&#96;` (so only the code found here is code);
- inline code is written as `<code>` with its text escaped for HTML and its Markdown
  punctuation written as entities (an entity is never syntax);
- a fenced block is written again as a top-level fence after a blank line, with a fence longer
  than any run of backticks inside, so nothing inside can close it and no list or quote
  around it changes where it ends; Markdown shows its contents literally.
Where this reading differs from a Markdown parser's, the result is only cosmetic: every piece
is inert on its own.
"""

from __future__ import annotations

import html
import re

from .latex import latex_escape

# Markdown punctuation written as numeric entities inside <code>, where Markdown would still
# read emphasis, links, images and maths.
_INLINE_CODE = str.maketrans({ch: f"&#{ord(ch)};" for ch in "\\`*_[]()!~$<>&\"'#|{}"})
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$")
_BACKTICKS = re.compile(r"`+")
_INFO = re.compile(r"[^A-Za-z0-9_+#.-]")


def html_text(text: object) -> str:
    """Text to place between HTML tags: & < > " ' as entities."""
    return html.escape(str(text), quote=True)


def html_attribute(text: object) -> str:
    """Text to place inside a quoted HTML attribute value (not a URL: check its scheme first).
    Control characters are dropped; newlines become spaces, which attribute values show anyway."""
    cleaned = "".join(" " if ch in "\n\r\t" else ch for ch in str(text) if ch in "\n\r\t" or ord(ch) >= 0x20)
    return html.escape(cleaned, quote=True)


def latex_text(text: object) -> str:
    """Text to place in a LaTeX paragraph compiled by pdflatex (visualizer.latex.latex_escape)."""
    return latex_escape(str(text))


def markdown_text(text: object) -> str:
    """Untrusted text for a Markdown view: formatting kept, HTML and images inert (module docstring)."""
    out: list[str] = []
    fenced = False
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    prose: list[str] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            prose.append(lines[i])
            i += 1
            continue
        fence = opening.group(1)
        closer = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}")
        end = next((j for j in range(i + 1, len(lines)) if closer.match(lines[j])), len(lines))
        if prose:
            out.append(_prose("\n".join(prose)))
            prose = []
        out.append(_fenced(lines[i + 1:end], opening.group(2)))
        fenced = True
        i = end + 1
    if prose:
        out.append(_prose("\n".join(prose)))
    return "".join(out).strip("\n") if fenced else "".join(out)


def _fenced(body: list[str], info: str) -> str:
    content = "\n".join(body)
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    language = _INFO.sub("", info.strip().split(" ")[0])[:30] if info.strip() else ""
    return f"\n\n{fence}{language}\n{content}\n{fence}\n\n"


def _prose(text: str) -> str:
    """Text outside fences: inline code spans (CommonMark: a run of n backticks up to the next
    run of exactly n) become <code>, the rest is escaped."""
    out: list[str] = []
    start = 0
    pos = 0
    while True:
        opening = _BACKTICKS.search(text, pos)
        if opening is None:
            break
        run = opening.group(0)
        closing = next((m for m in _BACKTICKS.finditer(text, opening.end()) if len(m.group(0)) == len(run)), None)
        if closing is None or "\n\n" in text[opening.end():closing.start()]:
            pos = opening.end()
            continue
        before = _plain(text[start:opening.start()])
        trailing = len(before) - len(before.rstrip("\\"))
        out.append(before + "\\" * (trailing % 2))    # a lone trailing backslash would escape the tag
        code = text[opening.end():closing.start()].replace("\n", " ")
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]
        out.append(f"<code>{code.translate(_INLINE_CODE)}</code>")
        start = pos = closing.end()
    out.append(_plain(text[start:]))
    return "".join(out)


def _plain(text: str) -> str:
    escaped = html.escape(text, quote=True).replace("`", "&#96;")
    return escaped.replace("![", "&#33;[")
