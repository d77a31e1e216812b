"""Edits everywhere a trace is drawn: a hand trace in which one token is rewritten by an edit
rule and one is remasked and decoded to another token (Frame.edits, Frame.remasked)."""

from __future__ import annotations

import re
import shutil

import pytest

from engine.metrics import Ends, edit_counts, numbers, summary_line
from engine.trace import Frame, Result
from sessions.codec import EDITS_VERSION, decode_frames, encode_frames
from visualizer.grid import render_grid
from visualizer.latex import latex_document
from visualizer.plots import commits_per_forward
from visualizer.replay import standalone_replay_html
from world.pdflatex import compile_untrusted

MASK = 9
HOSTILE = "<img src=x onerror=alert(1)>"
PIECES = {1: "a", 2: "b", 3: "c", 4: HOSTILE, 5: "d", 6: "e", MASK: "<mask>"}


def edit_trace() -> list[Frame]:
    return [
        Frame(1, 0, 0, [(0, 1, 0.4), (1, 2, 0.3)], [1, 2, MASK, MASK], 0.1),
        Frame(2, 0, 1, [(2, 3, 0.8), (0, 4, 0.95)], [4, 2, 3, MASK], 0.2, edits=[(0, 1, 4)]),
        Frame(3, 0, 2, [(3, 5, 0.9)], [4, MASK, 3, 5], 0.3, remasked=[1]),
        Frame(4, 0, 3, [(1, 6, 0.7)], [4, 6, 3, 5], 0.4, edits=[(1, 2, 6)]),
    ]


def edit_result() -> Result:
    frames = edit_trace()
    ends = Ends(frozenset(), None, MASK)
    return Result(token_ids=[4, 6, 3, 5], text=HOSTILE + "ecd", frames=frames, stats=numbers(frames, ends, "length"),
                  mask_id=MASK, pieces=PIECES)


def cell(html: str, position: int) -> str:
    return re.findall(r'<span class="dp-cell[^>]*>.*?</span>(?=<span class="dp-cell|</div>)', html)[position]


def test_an_edit_counts_apart_from_the_decided_tokens():
    frames = edit_trace()
    stats = numbers(frames, Ends(frozenset(), None, MASK), "length")
    assert (stats.new_tokens, stats.nfe, stats.edits) == (4, 4, 2)
    assert stats.tokens_per_forward == 1.0                   # each position counted once as decided
    assert edit_counts(frames, Ends(frozenset(), None, MASK)) == [0, 1, 0, 1]
    assert "edits 2" in summary_line(stats)
    assert "edits" not in summary_line(numbers(frames[:1], Ends(frozenset(), None, MASK), "length"))


def test_the_grid_draws_an_edit_with_the_old_token_struck_and_announced():
    html = render_grid(edit_trace(), PIECES, MASK, 4, 4, upto=1)
    edited = cell(html, 0)
    assert "dp-edited" in edited and 'tabindex="0"' in edited
    assert '<s class="dp-old" aria-hidden="true">a</s>' in edited
    assert "aria-label=\"#0: &#39;&lt;img src=x onerror=alert(1)&gt;&#39;, edited: &#39;a&#39; -&gt; " in edited
    assert "<img" not in html                                # the rewritten token is text, never markup
    assert "edited: &#39;a&#39;" in re.search(r'title="([^"]*)"', edited).group(1)
    assert "dp-edited" not in cell(html, 1) and "dp-key-edited" in html   # the legend explains it


def test_the_grid_draws_a_remasked_cell_then_its_edit():
    html = render_grid(edit_trace(), PIECES, MASK, 4, 4, upto=2)
    remasked = cell(html, 1)
    assert "dp-remasked" in remasked and "\u21ba" in remasked and "was &#39;b&#39;" in remasked
    last = cell(render_grid(edit_trace(), PIECES, MASK, 4, 4), 1)
    assert "dp-edited" in last and "edited: &#39;b&#39; -&gt; &#39;e&#39;" in last


def test_a_trace_without_edits_has_no_edit_cells_or_key():
    frames = [Frame(1, 0, 0, [(0, 1, 0.4)], [1, MASK], 0.1)]
    html = render_grid(frames, PIECES, MASK, 2, 2)
    assert "dp-edited" not in html and "dp-key-edited" not in html and "dp-remasked" not in html


def test_the_plot_has_edits_per_forward_beside_the_decisions():
    fig = commits_per_forward(edit_trace(), Ends(frozenset(), None, MASK))
    edits = [t for t in fig.data if t.name.startswith("edits")]
    assert len(edits) == 1 and list(edits[0].y) == [0, 1, 0, 1]
    assert list(fig.data[1].y)[-1] == 1.0                    # tokens per forward, edits left out
    assert "edits" in edits[0].name                          # the legend names them, not the title


def test_latex_marks_edited_tokens_and_lists_them():
    doc = latex_document(edit_result(), "t", "p", "m")
    assert doc.count(r"\textsuperscript{[") == 2 and r"\textbf{Edits}" in doc
    assert r"'a' $\rightarrow$ '\textless{}img src=x onerror=alert(1)\textgreater{}' (forward 2)" in doc
    assert "2 edits." in doc


def test_the_replay_carries_the_edits_and_explains_them():
    page = standalone_replay_html(edit_result(), "t", "p", "m")
    assert '"edits":[[0,1,4]]' in page and '"remasked":[1]' in page and "dp-key-edited" in page
    assert "<img src" not in page


def test_edits_survive_the_store():
    frames = edit_trace()
    data = encode_frames(frames)
    assert f'"v":{EDITS_VERSION}' in data
    assert decode_frames(data) == frames
    assert Frame.from_dict(frames[1].to_dict()) == frames[1]


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed; compile check skipped")
def test_the_edit_list_compiles_with_pdflatex():
    compiled = compile_untrusted(latex_document(edit_result(), "t", "p", "m"), timeout_s=120)
    assert compiled.ok, compiled.log[-3000:]
