"""LaTeX export: one-pass escaping of every special character, and a document that compiles."""

from __future__ import annotations

import shutil
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.visualizer.test_visualizer_traces import make_result
from visualizer.latex import latex_document, latex_escape
from world.pdflatex import compile_untrusted

SPECIALS = [
    ("\\", r"\textbackslash{}"),
    ("&", r"\&"),
    ("%", r"\%"),
    ("$", r"\$"),
    ("#", r"\#"),
    ("_", r"\_"),
    ("{", r"\{"),
    ("}", r"\}"),
    ("~", r"\textasciitilde{}"),
    ("^", r"\textasciicircum{}"),
    ("\n", "\\newline{}\n"),
]


def unescaped_problems(tex: str) -> list[str]:
    """Specials not preceded by a backslash, and unbalanced braces, skipping escaped characters."""
    problems, depth, i = [], 0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            # A control word (backslash + ASCII letters) or a control symbol (backslash + one char).
            j = i + 1
            if j < len(tex) and tex[j] in string.ascii_letters:
                while j < len(tex) and tex[j] in string.ascii_letters:
                    j += 1
            else:
                j += 1
            i = j
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                problems.append("unbalanced }")
        elif ch in "&%$#_^~":
            problems.append(ch)
        i += 1
    if depth:
        problems.append(f"{depth} unclosed {{")
    return problems


@pytest.mark.parametrize(("char", "expected"), SPECIALS, ids=[repr(c) for c, _ in SPECIALS])
def test_each_special_is_escaped(char, expected):
    assert latex_escape(char) == expected
    assert latex_escape(f"a{char}b") == f"a{expected}b"


def test_escaping_is_one_pass():
    # The braces that \textbackslash{} adds must not be escaped again, nor the backslash of \{.
    assert latex_escape("\\{") == r"\textbackslash{}\{"
    assert latex_escape("\\\\") == r"\textbackslash{}\textbackslash{}"
    assert latex_escape(r"\textbf{x}") == r"\textbackslash{}textbf\{x\}"


def test_non_latin1_becomes_question_mark():
    assert latex_escape("café 漢字 😀") == "café ?? ?"
    assert latex_escape("a\x00b\x85c") == "a?b?c"  # control characters have no glyph
    assert latex_escape("a\tb\r\n") == "a b\\newline{}\n"
    assert latex_escape("<<x>>") == r"\textless{}\textless{}x\textgreater{}\textgreater{}"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_text_escapes_to_safe_latex(text):
    tex = latex_escape(text)
    assert unescaped_problems(tex) == []
    assert all(ord(ch) <= 0xFF for ch in tex)


def test_document_structure_and_colours():
    doc = latex_document(make_result(), "A_title #1", "Prompt with 100% & $x$", "sprout-bd")
    assert doc.startswith("\\documentclass") and doc.rstrip().endswith("\\end{document}")
    assert "\\usepackage{xcolor}" in doc
    assert r"\title{A\_title \#1}" in doc
    assert r"Prompt with 100\% \& \$x\$" in doc
    for r in range(3):  # the hand trace decides tokens in rounds 1, 2 and 3
        assert f"\\definecolor{{dpround{r}}}" in doc and f"round {r + 1}" in doc
    assert r"\textcolor{dpround1}{Hello}" in doc  # "Hello" was decided in round 2
    assert r"\textcolor{dpround0}{\textless{}img src=x onerror=alert(1)\textgreater{}}" in doc
    body = doc.split("\\begin{document}")[1]
    assert unescaped_problems(body.replace("~round", " round")) == []


def test_document_without_frames_uses_plain_text():
    result = make_result()
    result.frames, result.pieces = [], {}
    doc = latex_document(result, "t", "p", "m")
    assert "no round information" in doc
    assert r"\textcolor{dpfill}{Hello" in doc


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed; compile check skipped")
def test_document_compiles_with_pdflatex(tmp_path):
    doc = latex_document(make_result(), "Title & more", "Say {hi} ~ ^ \\ \n\n twice", "sprout-bd")
    compiled = compile_untrusted(doc, timeout_s=120)      # model text inside: compiled in the sandbox
    assert compiled.ok, compiled.log[-3000:]
    assert compiled.pdf
