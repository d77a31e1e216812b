"""The HTML token grid: escaping, cell states per frame, and decision_matrix on a hand trace."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trace import Frame
from tests.visualizer.test_visualizer_traces import (
    BLOCK_SIZE,
    EXPECTED_CONFIDENCE,
    EXPECTED_NFE,
    EXPECTED_ROUNDS,
    GEN_LENGTH,
    MASK,
    PIECES,
    make_ar_frames,
    make_frames,
    make_result,
)
from visualizer.cells import decision_matrix
from visualizer.grid import GRID_CSS, render_grid
from visualizer.pieces import visible_piece


class _Cells(HTMLParser):
    """Collects (classes, text) of every dp-cell and the tag names used, as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self.tags: set[str] = set()
        self.active_blocks: list[str] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        classes = dict(attrs).get("class", "") or ""
        if "dp-active" in classes:
            self.active_blocks.append(dict(attrs)["data-block"])
        if "dp-cell" in classes.split():
            self._open = [classes, ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[1] += data

    def handle_endtag(self, tag):
        if self._open is not None and tag == "span":
            self.cells.append((self._open[0], self._open[1]))
            self._open = None


def parse(html: str) -> _Cells:
    parser = _Cells()
    parser.feed(html)
    return parser


def grid(upto=None, frames=None, **kwargs):
    frames = make_frames() if frames is None else frames
    return render_grid(frames, PIECES, MASK, GEN_LENGTH, BLOCK_SIZE, upto=upto, **kwargs)


def test_decision_matrix_matches_hand_trace():
    rounds, nfes, confidences = decision_matrix(make_frames(), GEN_LENGTH)
    assert rounds == EXPECTED_ROUNDS
    assert nfes == EXPECTED_NFE
    assert confidences == pytest.approx(EXPECTED_CONFIDENCE)


def test_decision_matrix_partial_and_out_of_range():
    frames = make_frames()[:2]
    frames.append(Frame(nfe=3, block=1, round=0, committed=[(42, 1, 0.5), (-1, 1, 0.5)], canvas=[], elapsed_s=0.0))
    rounds, nfes, _ = decision_matrix(frames, GEN_LENGTH)
    assert rounds[:4] == EXPECTED_ROUNDS[:4] and rounds[4:] == [None] * 4
    assert nfes[4:] == [None] * 4


def test_model_html_is_escaped():
    html = grid()
    assert "<img" not in html
    assert "<script" not in html and "</script" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    parsed = parse(html)
    assert "img" not in parsed.tags and "script" not in parsed.tags
    texts = [text for _, text in parsed.cells]
    assert "<img\u2423src=x\u2423onerror=alert(1)>" in texts  # the browser shows the token as text
    assert "&amp;amp;" in html  # an entity in a token is shown literally, not decoded


def test_masked_cells_before_and_text_after():
    first = parse(grid(upto=0))
    classes = [c for c, _ in first.cells]
    assert sum("dp-mask" in c for c in classes) == GEN_LENGTH - 2
    assert [("dp-new" in c) for c in classes[:4]] == [False, True, True, False]
    assert first.active_blocks == ["0"]

    last = parse(grid())
    classes = [c for c, _ in last.cells]
    assert not any("dp-mask" in c for c in classes)
    assert "dp-new" in classes[7] and "dp-done" in classes[0]
    assert last.active_blocks == ["1"]
    assert last.cells[0][1] == "Hello"


def test_whitespace_pieces_are_visible():
    cells = parse(grid()).cells
    assert cells[1][1] == "\u2423"  # " "
    assert cells[3][1] == "\u23ce"  # "\n"
    assert 'class="dp-break"' in grid()  # a newline also breaks the grid's line
    assert visible_piece("a b\tc\n") == "a\u2423b\u21e5c\u23ce"
    assert visible_piece("") == "\u2205"


def test_confidence_sets_background_and_readout():
    html = grid(upto=4)
    assert 'style="--dp-c:0.5"' in html  # confidence 0.5 at position 7: a paler background
    assert "opacity" not in html          # text keeps its full contrast
    assert "round: <b>3</b>" in html and "block: <b>2/2</b>" in html and "forwards (NFE): <b>5</b>" in html
    assert "tokens per forward: <b>1.60</b>" in html and "answer tokens: <b>8</b>" in html
    assert "tokens/s: <b>153.8</b>" in grid(stats=make_result().stats)


def test_new_this_round_is_marked_by_more_than_colour():
    assert "text-decoration: underline" in GRID_CSS and "border: 1px dashed" in GRID_CSS
    html = grid(upto=0)
    assert "new this round" in html and 'class="dp-legend"' in html and "decided by this forward" in html


def test_eos_fill_is_drawn_as_the_end_and_not_counted():
    from engine.metrics import Ends
    from tests.visualizer.test_visualizer_traces import EOS, EOS_GEN_LENGTH, make_eos_frames

    ends = Ends(frozenset({EOS}), 0, MASK)
    html = render_grid(make_eos_frames(), {**PIECES, EOS: "<eos>"}, MASK, EOS_GEN_LENGTH, 4, ends=ends)
    classes = [c for c, _ in parse(html).cells]
    assert classes[6:] == ["dp-cell dp-end"] * 6 and "dp-new" in classes[5]
    assert "answer tokens: <b>6</b>" in html and "tokens per forward: <b>1.50</b>" in html
    assert "&lt;eos&gt;" not in re.sub(r'title="[^"]*"', "", html)   # no EOS piece drawn as text


def test_single_frame_and_nan_confidence():
    frame = make_frames()[2]
    frame.committed = [(4, 14, float("nan"))]
    cells = parse(render_grid(frame, PIECES, MASK, GEN_LENGTH, BLOCK_SIZE)).cells
    assert ["dp-filled" in c for c, _ in cells[:4]] == [True] * 4  # no commit record for them
    assert "dp-new" in cells[4][0] and sum("dp-mask" in c for c, _ in cells) == 3
    assert "opacity:nan" not in render_grid(frame, PIECES, MASK, GEN_LENGTH, BLOCK_SIZE)


def test_empty_trace_and_negative_index():
    html = grid(frames=[])
    assert len(parse(html).cells) == GEN_LENGTH and "Waiting" in html
    assert all("dp-mask" in c for c, _ in parse(html).cells)
    assert grid(upto=-1) == grid()


def test_ar_trace_without_mask_id():
    frames = make_ar_frames(3)
    html = render_grid(frames, PIECES, None, 6, 1)
    cells = parse(html).cells
    assert len(cells) == 6
    assert sum("dp-mask" in c for c, _ in cells) == 3


def test_css_is_prefixed():
    selectors = re.findall(r"\.([a-zA-Z][\w-]*)", GRID_CSS)
    assert selectors and all(s.startswith("dp-") or s == "dark" for s in selectors)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=30))
def test_any_piece_renders_as_its_text(piece):
    frames = [Frame(nfe=1, block=0, round=0, committed=[(0, 1, 0.9)], canvas=[1], elapsed_s=0.0)]
    cells = parse(render_grid(frames, {1: piece}, 0, 1, 1)).cells
    assert len(cells) == 1
    assert cells[0][1] == visible_piece(piece)


def test_aligned_blocks_are_drawn_at_their_real_bounds():
    """With aligned blocks (SDAR, Fast-dLLM v2) the first block is shortened by the prompt's tail
    and the canvas runs past gen_length: the grid draws the bounds the engine decoded
    (engine.generate.block_slices), clipped to the generation length, and outlines the block the
    frame worked on."""
    from engine.blocks import block_slices
    from engine.trace import GenerationConfig
    from visualizer.cells import block_bounds

    for prompt_length in range(1, 10):
        for aligned, tail_in_length in ((True, False), (True, True), (False, False)):
            config = GenerationConfig(gen_length=8, block_size=4, aligned_blocks=aligned, tail_in_length=tail_in_length)
            slices = block_slices(prompt_length, config)
            expected = [(s.start, min(s.stop, 8)) for s in slices if s.start < 8]
            assert block_bounds(8, 4, slices[-1].stop) == expected, (prompt_length, aligned, tail_in_length)
    frame = Frame(nfe=2, block=1, round=0, committed=[(1, 10, 0.9)], canvas=[11, 10] + [MASK] * 7, elapsed_s=0.1)
    html = render_grid([frame], PIECES, MASK, 8, 4, legend=False)               # a 3-token prompt: 9 positions
    sizes = [len(re.findall(r'class="dp-cell', part)) for part in html.split('class="dp-block')[1:]]
    assert sizes == [1, 4, 3]                                                 # the last one stops at gen_length
    assert re.search(r'class="dp-block dp-active" data-block="1"', html)
    assert "block: <b>2/3</b>" in html
    even = render_grid([Frame(nfe=1, block=0, round=0, committed=[(0, 10, 0.9)], canvas=[10] + [MASK] * 7,
                              elapsed_s=0.1)], PIECES, MASK, 8, 4, legend=False)
    assert [len(re.findall(r'class="dp-cell', part)) for part in even.split('class="dp-block')[1:]] == [4, 4]
