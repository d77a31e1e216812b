"""A LaTeX document of one answer, each token coloured by the denoising round that decided it.

Target: pdflatex (the engine every TeX install has). Its UTF-8 input with T1 fonts covers
Latin-1; anything outside Latin-1 (CJK, emoji, most symbols) would stop the compile, so
`latex_escape` replaces it with '?'. Use xelatex yourself if you need those characters, and
drop the replacement.
"""

from __future__ import annotations

import colorsys
import re

from engine.trace import Result

from .cells import decision_matrix, last_edits
from .noise_grid import STOP_WORDS, settled_steps, stop_rules

# One pass over the text: each special character maps to its replacement exactly once, so the
# braces that `\textbackslash{}` introduces are never escaped again.
_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # Not special, but T1 fonts turn "<<" and ">>" into guillemets; these keep code literal.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "\n": "\\newline{}\n",
    "\t": " ",
    "\r": "",
}
CONTROL_SPACE = "\\ "
_SPECIAL_RE = re.compile("|".join(re.escape(ch) for ch in _SPECIALS))


def _printable(ch: str) -> str:
    code = ord(ch)
    # Control characters (C0 and C1) have no glyph; beyond Latin-1 pdflatex's utf8 input fails.
    if code < 0x20 or 0x7F <= code < 0xA0 or code > 0xFF:
        return "?"
    return ch


def latex_escape(text: str) -> str:
    """Text safe to place in a LaTeX paragraph under pdflatex (see the module docstring)."""
    text = "".join(ch if ch in "\n\t\r" else _printable(ch) for ch in text)
    return _SPECIAL_RE.sub(lambda m: _SPECIALS[m.group(0)], text)


def coloured_span(colour: str, text: str) -> str:
    """`text` in `colour`, its spaces kept. xcolor's colour switch ends by skipping the spaces
    after it, so a token that starts with one (" Park" after "Mia") would lose it; a control
    space (`\\ `) is not a space token, so nothing skips it."""
    kept = latex_escape(text).replace(" ", CONTROL_SPACE)
    return f"\\textcolor{{{colour}}}{{{kept}}}"


def _round_colours(count: int) -> list[str]:
    # Hues from blue (decided in round 1, confident) through green to red (late rounds), dark
    # enough to read as text on white paper.
    colours = []
    for i in range(count):
        hue = 0.62 * (1 - i / max(1, count - 1)) if count > 1 else 0.62
        r, g, b = colorsys.hsv_to_rgb(hue, 0.85, 0.72)
        colours.append(f"{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}")
    return colours


def latex_document(result: Result, title: str, prompt: str, model_name: str) -> str:
    """A complete pdflatex document: header, prompt, the coloured answer and a round legend.

    Positions index the generated span, so answer token i sits at position i and its round comes
    from the frame that committed it; a token with no commit record is printed in grey. Without
    pieces for every answer token, the plain text is used (uncoloured). A token that was rewritten
    (Frame.edits) carries a superscript number, and an "Edits" list under the answer gives each
    one's old and new token and the forward that rewrote it.
    """
    rounds, _nfes, _conf = decision_matrix(result.frames, len(result.token_ids))
    noise = result.uniform_noise or any(f.noise is not None for f in result.frames)
    if noise:   # no round decides a token here: colour by the step from which its draft stayed put
        rounds = settled_steps(result.frames, len(result.token_ids))
    spans: list[tuple[int | None, str]] = [(None, result.text)]
    marks: list[str] = [""]
    edit_lines: list[str] = []
    if result.token_ids and all(t in result.pieces for t in result.token_ids):
        spans = [(rounds[i], result.pieces[t]) for i, t in enumerate(result.token_ids)]
        edited = last_edits(result.frames)
        marks = [""] * len(spans)
        for i, t in enumerate(result.token_ids):
            old, new, at = edited.get(i, (None, None, None))
            if old is not None and new == t:
                edit_lines.append(f"[{len(edit_lines) + 1}] {latex_escape(repr(result.pieces.get(old, str(old))))} "
                                  f"$\\rightarrow$ {latex_escape(repr(result.pieces[t]))} (forward {at})")
                marks[i] = f"\\textsuperscript{{[{len(edit_lines)}]}}"

    used = sorted({r for r, _ in spans if r is not None})
    colours = _round_colours(len(used))
    colour_of = {r: f"dpround{i}" for i, r in enumerate(used)}
    definitions = "\n".join(f"\\definecolor{{dpround{i}}}{{HTML}}{{{c}}}" for i, c in enumerate(colours))
    body = "".join(coloured_span(colour_of[r] if r is not None else "dpfill", text) + mark
                   for (r, text), mark in zip(spans, marks))
    if edit_lines:
        body += ("\n\n\\textbf{Edits} (a decided token rewritten; each position is counted once as decided): "
                 + "; ".join(edit_lines) + ".")
    unit = "step" if noise else "round"
    keys = [f"\\textcolor{{{colour_of[r]}}}{{\\rule{{0.8em}}{{0.8em}}~{unit} {r + 1}}}" for r in used]
    if any(frame.prefilled for frame in result.frames):     # placed by a schema scaffold: no round, grey
        keys.append("\\textcolor{dpfill}{\\rule{0.8em}{0.8em}~pre-filled by the schema}")
    legend = ", ".join(keys)
    stats = result.stats
    stat_line = (f"{stats.new_tokens} tokens, {stats.nfe} forwards ({stats.tokens_per_forward:.2f} tokens per "
                 f"forward), {stats.seconds:.3f} s ({stats.tokens_per_s:.1f} tokens/s), stopped by "
                 f"{latex_escape(stats.stop_reason)}" + (f", {stats.edits} edits" if stats.edits else "") + ".")
    if noise:
        rules = ", ".join(STOP_WORDS.get(rule, rule) for rule in stop_rules(result.frames))
        stat_line += (f" Canvases: {latex_escape(rules)}." if rules else "") + (
            f" Tokens per forward as transformers counts them: {stats.upstream_tokens_per_forward:.2f}."
            if stats.upstream_tokens_per_forward is not None else "")
    return _TEMPLATE % {
        # \newline is not allowed in \maketitle's centred lines: title and model stay on one line.
        "title": latex_escape(" ".join(title.split())), "model": latex_escape(" ".join(model_name.split())),
        "prompt": latex_escape(prompt),
        "definitions": definitions, "body": body, "stats": stat_line,
        "colour_rule": (NOISE_COLOUR_RULE if noise else ROUND_COLOUR_RULE),
        "legend": legend or "no round information (no frames were recorded)",
    }


ROUND_COLOUR_RULE = "Colour shows the denoising round (inside its block) that decided each token"
# A uniform-noise canvas redraws every position each step; a token's colour is when it settled.
NOISE_COLOUR_RULE = ("Colour shows the denoising step (inside its canvas of random tokens) from which each token's "
                     "draft stayed the one the canvas ended with")

# %-formatting keeps LaTeX's own braces literal; '%%' is a literal percent sign.
_TEMPLATE = r"""\documentclass[11pt]{article}
%% Generated by Diffusion Playground; compile with pdflatex.
\usepackage[T1]{fontenc}
\usepackage[utf8]{inputenc}
\IfFileExists{lmodern.sty}{\usepackage{lmodern}}{}
\usepackage[margin=2.2cm]{geometry}
\usepackage{xcolor}
\definecolor{dpfill}{HTML}{8A8A8A}
%(definitions)s
\setlength{\parindent}{0pt}
\setlength{\parskip}{0.6em}
\title{%(title)s}
\author{Model: %(model)s}
\date{}
\begin{document}
\maketitle

\section*{Prompt}
\mbox{}%(prompt)s

\section*{Answer}
\mbox{}%(body)s

\medskip
{\small %(colour_rule)s:
%(legend)s. %(stats)s\par}
\end{document}
"""
