"""Code answers: finding LaTeX / HTML in an answer, and the sandboxed HTML preview."""

from __future__ import annotations

import html
import re

import pytest

from visualizer.code_export import PREVIEW_CSP, extract_code, fenced_code, sandboxed_preview

PAGE = "<!DOCTYPE html>\n<html><head><title>x</title></head><body><h1>Hi</h1></body></html>"
TEX = "\\documentclass{article}\n\\begin{document}\nHi\n\\end{document}"

CASES = [
    ("fenced-latex", f"Here:\n```latex\n{TEX}\n```\nDone.", ("tex", TEX)),
    ("fenced-tex", f"```tex\n{TEX}\n```", ("tex", TEX)),
    ("fenced-html", f"Sure!\n```html\n{PAGE}\n```", ("html", PAGE)),
    ("unlabelled-fence", f"```\n{PAGE}\n```", ("html", PAGE)),
    ("bare-tex", f"The resume:\n{TEX}\nHope it helps.", ("tex", TEX)),
    ("bare-html", f"Page follows. {PAGE} That is all.", ("html", PAGE)),
    ("cut-off-fence", "```html\n<html><body>half", ("html", "<html><body>half")),
    ("python-fence", "```python\nprint(1)\n```", (None, "")),
    ("no-code", "Just words.", (None, "")),
]


@pytest.mark.parametrize(("answer", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_extract_code(answer, expected):
    assert extract_code(answer) == expected


def test_preview_is_sandboxed_and_escaped():
    code = '<html><head></head><body><script>alert("x")</script><img src="http://a/b.png" onerror=x></body></html>'
    out = sandboxed_preview(code)
    assert out.startswith('<iframe sandbox="" ')
    assert re.findall(r"<(/?\w+)", out) == ["iframe", "/iframe"]  # only the iframe's own tags
    srcdoc = re.search(r'srcdoc="([^"]*)"', out).group(1)
    assert "<" not in srcdoc and '"' not in srcdoc
    decoded = html.unescape(srcdoc)
    assert decoded.startswith(f'<html><head><meta http-equiv="Content-Security-Policy" content="{PREVIEW_CSP}">')
    assert decoded.endswith(code.split("<head>", 1)[1])


def test_preview_without_head_gets_csp_in_front():
    decoded = html.unescape(re.search(r'srcdoc="([^"]*)"', sandboxed_preview("<p>hi</p>")).group(1))
    assert decoded.startswith("<meta http-equiv=") and decoded.endswith("<p>hi</p>")


TEX = "\\documentclass{article}\n\\begin{document}\n$x^2$\n\\end{document}"


@pytest.mark.parametrize("answer, expected", [
    (f"Here it is:\n{TEX}\nDone.", f"Here it is:\n\n```latex\n{TEX}\n```\n\nDone."),   # fenced where it stands
    ("<!DOCTYPE html><html><b>hi</b></html>", "```html\n<!DOCTYPE html><html><b>hi</b></html>\n```"),
    ("def f(x):\n    return x", "```python\ndef f(x):\n    return x\n```"),              # Python from line 1
    ("def is a keyword.", "def is a keyword."),                    # one line of prose is not a program
    ("```python\nx = 1\n```", "```python\nx = 1\n```"),          # an existing fence is kept as written
    ("The total is 2241.", "The total is 2241."),
])
def test_fenced_code_draws_code_answers_as_fenced_blocks(answer, expected):
    assert fenced_code(answer) == expected
