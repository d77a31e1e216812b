"""Answers that are code: find a LaTeX or HTML document in an answer, and preview HTML safely.

A generated HTML page is model output: it previews only inside `<iframe sandbox="">` (no
scripts, no forms, no top navigation, a unique origin) with its source in an attribute-escaped
`srcdoc`, plus a CSP so the page cannot fetch anything either.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from .blank_page import blank_reason
from .marks import WARNING

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TEX_LANGS = {"latex", "tex"}
_HTML_LANGS = {"html", "htm", "xhtml"}
_TEX_START = re.compile(r"\\documentclass\b")
_TEX_END = re.compile(r"\\end\{document\}")
_HTML_START = re.compile(r"<!doctype\s+html|<html[\s>]", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)

# Blocks every fetch (images, fonts, frames, scripts) from the previewed page; inline styles
# and data: images still render.
PREVIEW_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"


def _sniff(text: str) -> tuple[str | None, str]:
    """A whole document found in plain text: from its opening to its closing (or to the end)."""
    for kind, start_re, end_re in (("tex", _TEX_START, _TEX_END), ("html", _HTML_START, _HTML_END)):
        start = start_re.search(text)
        if start:
            end = end_re.search(text, start.start())
            stop = end.end() if end else len(text)
            return kind, text[start.start():stop].strip()
    return None, ""


def extract_code(answer: str) -> tuple[str | None, str]:
    """("tex" | "html" | None, code): the first LaTeX or HTML code in an answer.

    A fenced block labelled latex/tex/html wins; an unlabelled fence counts when its content
    looks like a document; otherwise a bare `\\documentclass ... \\end{document}` or
    `<!DOCTYPE html> ... </html>` in the text. An unclosed fence (a cut-off answer) runs to the
    end. Nothing found: (None, "").
    """
    for match in _FENCE_RE.finditer(answer):
        lang, body = match.group(1).lower(), match.group(2).strip("\n")
        if lang in _TEX_LANGS:
            return "tex", body
        if lang in _HTML_LANGS:
            return "html", body
        if not lang:
            kind, _ = _sniff(body)
            if kind:
                return kind, body
    return _sniff(answer)


# Python source as a whole answer: its first line opens a definition, an import or a script.
_PYTHON_START = re.compile(r"^(def |class |import |from \S+ import |#!.*python|async def |@\w)")
_FENCE_LANG = {"tex": "latex", "html": "html"}


def fenced_code(answer: str) -> str:
    """The answer with its code as a fenced block, so a Markdown view draws it as highlighted code
    instead of paragraphs: a bare LaTeX or HTML document (extract_code's sniffing) is fenced where
    it stands; an answer that is Python source from its first line is fenced whole. An answer
    that already has a fence, or no code, comes back unchanged. Only the fence is added: the text
    still goes through the view's escaping (visualizer.escape.markdown_text keeps fences literal)."""
    if "```" in answer or "~~~" in answer:
        return answer
    kind, code = _sniff(answer)
    if kind is not None:
        start = answer.find(code)
        return f"{answer[:start]}\n```{_FENCE_LANG[kind]}\n{code}\n```\n{answer[start + len(code):]}".strip("\n")
    lines = answer.strip("\n").splitlines()
    if lines and _PYTHON_START.match(lines[0]) and len(lines) > 1:
        return f"```python\n{answer.strip(chr(10))}\n```"
    return answer


def _with_csp(html_code: str) -> str:
    meta = f'<meta http-equiv="Content-Security-Policy" content="{PREVIEW_CSP}">'
    # A CSP meta only counts inside <head>; put it right after <head> or <html> when present,
    # else in front (the parser then opens the head for it).
    for pattern in (r"<head(\s[^>]*)?>", r"<html(\s[^>]*)?>"):
        match = re.search(pattern, html_code, re.IGNORECASE)
        if match:
            return html_code[: match.end()] + meta + html_code[match.end():]
    return meta + html_code


def sandboxed_preview(html_code: str, height_px: int = 480) -> str:
    """An `<iframe sandbox="" srcdoc="...">` showing `html_code` with scripts and network off; a
    page that would show nothing comes with the sentence that says why (visualizer/blank_page.py)."""
    reason = blank_reason(html_code)
    notice = (Markup('<p class="dp-notice dp-blank-preview" role="status">{} {}</p>').format(WARNING, reason)
              if reason else Markup(""))
    return str(notice + Markup(
        '<iframe sandbox="" referrerpolicy="no-referrer" loading="lazy" class="dp-preview" '
        'title="Preview of the generated page (scripts disabled)" '
        'style="width:100%;height:{}px;border:1px solid rgba(127,127,127,.4);border-radius:6px;background:#fff" '
        'srcdoc="{}"></iframe>'
    ).format(int(height_px), escape(_with_csp(html_code))))
