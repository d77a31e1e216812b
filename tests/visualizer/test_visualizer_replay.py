"""The standalone HTML replay: offline, CSP-locked, embedded trace round-trips, no breakout."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import textwrap
from html.parser import HTMLParser

import pytest
from markupsafe import escape

from engine.trace import Frame
from tests.visualizer.test_visualizer_traces import CONFIG, PIECES, make_ar_frames, make_result
from visualizer.pieces import (
    EMPTY_PIECE,
    END_GLYPH,
    MASK_GLYPH,
    REMASK_GLYPH,
    UNKNOWN_PIECE,
    VISIBLE_WHITESPACE,
    visible_piece,
)
from visualizer.replay import json_for_script, standalone_replay_html

TRACE_RE = re.compile(r'<script type="application/json" id="trace">(.*?)</script>', re.DOTALL)
PLAYER_RE = re.compile(r"<script>(.*?)</script>", re.DOTALL)


@pytest.fixture(scope="module")
def page() -> str:
    return standalone_replay_html(make_result(), "Replay <b>test</b>", "Say <img src=x onerror=alert(1)>",
                                  "sprout-bd", CONFIG)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_no_external_resources(page):
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert not {"src", "href", "action", "srcset", "poster"} & set(attrs), (tag, attrs)
        assert tag not in ("link", "img", "iframe", "object", "embed")
    assert not re.search(r"(?i)https?:|//cdn|@import|url\(", page)


def test_csp_meta_allows_only_the_player(page):
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert "default-src 'none'" in csp and "style-src 'unsafe-inline'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    scripts = PLAYER_RE.findall(page)
    assert len(scripts) == 1  # the data block has a type, the player does not
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_embedded_json_round_trips(page):
    blocks = TRACE_RE.findall(page)
    assert len(blocks) == 1
    raw = blocks[0]
    assert "<" not in raw and ">" not in raw and "&" not in raw
    payload = json.loads(raw)
    result = make_result()
    assert [Frame.from_dict(f) for f in payload["frames"]] == result.frames
    assert {int(k): v for k, v in payload["pieces"].items()} == PIECES
    assert payload["gen_length"] == 8 and payload["block_size"] == 4 and payload["mask_id"] == 99


def test_an_ar_trace_plays_as_blocks_of_one():
    from visualizer.replay import trace_payload

    result = dataclasses.replace(make_result(), frames=make_ar_frames(6), mask_id=None)
    payload = trace_payload(result, {"gen_length": 8, "block_size": 4})
    assert payload["block_size"] == 1 and [f["block"] for f in payload["frames"]] == list(range(6))


def test_script_token_cannot_break_out(page):
    # The token "</script><script>alert(2)</script>" and friends appear only escaped.
    assert page.count("</script>") == 2  # the data block's and the player's own
    assert "alert(2)" in page and "<script>alert(2)" not in page
    assert "<img" not in page
    assert "Replay &lt;b&gt;test&lt;/b&gt;" in page  # title autoescaped
    breakout = json_for_script({"t": "</script><!-- <script>"})
    assert str(breakout) == '{"t":"\\u003c/script\\u003e\\u003c!-- \\u003cscript\\u003e"}'


def test_non_finite_numbers_stay_valid_json():
    result = make_result()
    result.frames[0].committed[0] = (1, 11, float("nan"))
    result.stats.tokens_per_s = float("inf")
    raw = TRACE_RE.findall(standalone_replay_html(result, "t", "p", "m", None))[0]
    payload = json.loads(raw)  # strict JSON: no NaN / Infinity tokens
    assert payload["frames"][0]["committed"][0][2] is None
    assert payload["block_size"] == payload["gen_length"] == 8  # no config: one block over the canvas


# A DOM stand-in just large enough for the player; innerHTML throws so any use of it fails.
_FAKE_DOM = textwrap.dedent("""
    function Style() { this.values = {}; }
    Style.prototype.setProperty = function (name, value) { this.values[name] = value; };
    Style.prototype.removeProperty = function (name) { delete this.values[name]; };
    function Node(tag) { this.tag = tag; this.children = []; this.style = new Style(); this.className = "";
      this.textContent = ""; this.title = ""; this.hidden = false; this.listeners = {}; }
    Node.prototype.appendChild = function (c) { this.children.push(c); return c; };
    Node.prototype.addEventListener = function (name, fn) { this.listeners[name] = fn; };
    Node.prototype.setAttribute = function (name, value) { this.attributes = this.attributes || {};
      this.attributes[name] = String(value); };
    Node.prototype.removeAttribute = function (name) { if (this.attributes) delete this.attributes[name]; };
    Object.defineProperty(Node.prototype, "innerHTML", { set: function () { throw new Error("innerHTML used"); } });
    var nodes = { trace: new Node("script"), grid: new Node("div"), scrubber: new Node("input"),
                  play: new Node("button"), speed: new Node("select"), readout: new Node("div") };
    nodes.trace.textContent = TRACE_TEXT; nodes.speed.value = "1";
    var document = { getElementById: function (id) { return nodes[id]; },
                     createElement: function (tag) { return new Node(tag); },
                     createTextNode: function (text) { var n = new Node("#text"); n.textContent = text; return n; } };
    function cells() { var out = []; nodes.grid.children.forEach(function (b) {
      b.children.forEach(function (c) {
        if (c.className.indexOf("dp-cell") >= 0) out.push([c.className, c.textContent]); });
    }); return out; }
    PLAYER
    var opened = cells(), openedReadout = nodes.readout.textContent;
    nodes.scrubber.value = nodes.scrubber.max; nodes.scrubber.listeners.input();
    var last = cells(), lastReadout = nodes.readout.textContent;
    nodes.scrubber.value = "1"; nodes.scrubber.listeners.input();
    var boxes = nodes.grid.children.map(function (b) {
      return b.children.filter(function (c) { return c.className.indexOf("dp-cell") >= 0; }).length; });
    console.log(JSON.stringify({ opened: opened, openedReadout: openedReadout, last: last, lastReadout: lastReadout,
                                 first: cells(), readout: nodes.readout.textContent, boxes: boxes }));
""")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed; the JS player is not executed")
def test_player_builds_cells_with_text(page):
    trace_text = TRACE_RE.findall(page)[0]
    player = PLAYER_RE.findall(page)[0]
    program = _FAKE_DOM.replace("TRACE_TEXT", json.dumps(trace_text)).replace("PLAYER", player)
    out = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    state = json.loads(out.stdout)
    result = make_result()
    assert [text for _, text in state["last"]] == [visible_piece(PIECES[t]) for t in result.token_ids]
    assert sum("dp-mask" in cls for cls, _ in state["first"]) == 6
    assert all(text == MASK_GLYPH for cls, text in state["first"] if "dp-mask" in cls)   # the one glyph table's
    assert state["readout"].startswith("Step 1/5")
    # it opens on round 0: every cell masked, before the first forward
    assert [cls for cls, _ in state["opened"]] == ["dp-cell dp-mask"] * 8
    assert state["openedReadout"].startswith("Step 0/5") and "before the first forward" in state["openedReadout"]
    assert "answer tokens 8" in state["lastReadout"] and "tokens per forward 1.60" in state["lastReadout"]


@pytest.mark.parametrize("frames", [1, 2, 5, 40], ids=lambda n: f"{n}-frames")
def test_default_speed_plays_for_at_least_two_seconds(frames):
    from visualizer.replay import MIN_REPLAY_S, round_ms

    assert frames * round_ms(frames) >= MIN_REPLAY_S * 1000 >= 2000
    assert round_ms(frames) >= 300


def test_payload_names_the_end_ids_and_the_pace():
    from tests.visualizer.test_visualizer_traces import make_eos_result

    payload = json.loads(TRACE_RE.findall(standalone_replay_html(make_eos_result(), "t", "p", "m", None))[0])
    assert payload["eos_ids"] == [1] and payload["pad_id"] == 0
    assert payload["round_ms"] * len(payload["frames"]) >= 2000
    assert "answer tokens 6" in payload["steps"][-1]["readout"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed; the JS player is not executed")
def test_player_draws_the_eos_fill_as_the_end_not_as_new():
    from tests.visualizer.test_visualizer_traces import EOS_GEN_LENGTH, make_eos_result

    page = standalone_replay_html(make_eos_result(), "t", "p", "m", {"gen_length": EOS_GEN_LENGTH, "block_size": 4})
    program = _FAKE_DOM.replace("TRACE_TEXT", json.dumps(TRACE_RE.findall(page)[0])).replace(
        "PLAYER", PLAYER_RE.findall(page)[0])
    out = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout)["last"]
    assert [cls for cls, _ in last][6:] == ["dp-cell dp-end"] * 6          # EOS, the stray token, the fill
    assert [cls for cls, _ in last][:6] == ["dp-cell dp-done"] * 5 + ["dp-cell dp-new"]
    assert "answer tokens 6" in json.loads(out.stdout)["lastReadout"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed; the JS player is not executed")
def test_player_draws_aligned_blocks_at_their_real_bounds():
    """An aligned-block run (SDAR, Fast-dLLM v2) whose canvas runs one position past gen_length
    had a first block of one position: the payload and the player's block boxes say so."""
    from visualizer.replay import trace_payload

    result = make_result()
    frames = [dataclasses.replace(f, canvas=f.canvas + [f.canvas[-1]]) for f in result.frames]
    aligned = dataclasses.replace(result, frames=frames)
    assert trace_payload(aligned, CONFIG)["blocks"] == [(0, 1), (1, 5), (5, 8)]
    assert trace_payload(result, CONFIG)["blocks"] == [(0, 4), (4, 8)]
    page = standalone_replay_html(aligned, "t", "p", "m", CONFIG)
    program = _FAKE_DOM.replace("TRACE_TEXT", json.dumps(TRACE_RE.findall(page)[0])).replace(
        "PLAYER", PLAYER_RE.findall(page)[0])
    out = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["boxes"] == [1, 4, 3]


def replay_of_call(arguments: dict, known):
    from world.format import render_call

    result = make_result()
    result.text = render_call("checkout_guest", arguments)
    return standalone_replay_html(result, "t", "p", "m", CONFIG, known=known)


def test_a_replayed_tool_call_marks_values_found_nowhere_before_it():
    request = "Check out: Mia Park, mia@example.com, 12 Oak Street."
    miscopied = {"name": "Mia Park", "email": "<b>mia.exam@post.io</b>", "address": "12 Oak Street"}
    page = replay_of_call(miscopied, [request])
    assert "<h2>Tool call</h2>" in page and 'class="dp-flag"' in page
    assert "not seen before: email = &lt;b&gt;mia.exam@post.io&lt;/b&gt;" in page      # model text is escaped
    assert "<b>mia.exam" not in page
    copied = replay_of_call({"name": "Mia Park", "email": "mia@example.com", "address": "12 Oak Street"}, [request])
    assert "Every value of this call appears" in copied and 'class="dp-flag"' not in copied
    assert "<h2>Tool call</h2>" not in replay_of_call(miscopied, None)          # without the context, no claim


def test_the_player_derives_nothing_and_keeps_no_glyph():
    """templates/replay.js keeps no glyph and no rule of its own: what each cell shows comes in the
    payload, worked out by visualizer/cells.py as for the live grid."""
    from pathlib import Path

    import visualizer.replay

    player = (Path(visualizer.replay.__file__).parent / "templates" / "replay.js").read_text(encoding="utf-8")
    glyphs = [*VISIBLE_WHITESPACE.values(), EMPTY_PIECE, REMASK_GLYPH, END_GLYPH, *UNKNOWN_PIECE, MASK_GLYPH]
    for glyph in glyphs:
        assert glyph not in player and f"\\u{ord(glyph):04x}" not in player.lower(), glyph
    for field in ("mask_id", "eos_ids", ".frames", ".committed", ".edits", ".prefilled", ".noise", ".canvas"):
        assert field not in player, field                   # no frame is read: the views are drawn as sent


def replayed_rows(steps: list[dict]) -> list[list[list]]:
    """Every step's full row of cells, rebuilt from the payload's changes as the player does."""
    rows: list[list[list]] = []
    for step in steps:
        row = list(rows[-1]) if rows else [None] * len(step["cells"])
        for position, *cell in step["cells"]:
            row[position] = cell
        rows.append(row)
    return rows


@pytest.mark.parametrize("trace", ["masked", "edits", "prefilled", "eos", "autoregressive", "noise"])
def test_every_replay_step_is_the_live_grids_view(trace):
    """The replay's steps and the live grid come from one derivation: at every step the cells the
    player draws are visualizer/cells.py step_view's for the frames so far, and the grid's HTML
    holds the same titles."""
    from engine.metrics import Ends
    from tests.noise_models import NOISE_CONFIG, noise_result
    from tests.visualizer.test_visualizer_edits import edit_result
    from tests.visualizer.test_visualizer_prefilled import scaffolded_result
    from tests.visualizer.test_visualizer_traces import EOS_GEN_LENGTH, make_eos_result
    from visualizer.cells import step_view
    from visualizer.grid import render_grid
    from visualizer.replay import trace_payload

    result, config = {
        "masked": (make_result(), CONFIG), "edits": (edit_result(), CONFIG), "prefilled": (scaffolded_result(), CONFIG),
        "eos": (make_eos_result(), {"gen_length": EOS_GEN_LENGTH, "block_size": 4}),
        "autoregressive": (dataclasses.replace(make_result(), frames=make_ar_frames(6), mask_id=None),
                           {"gen_length": 8, "block_size": 4}),
        "noise": (noise_result(), NOISE_CONFIG)}[trace]
    payload = json.loads(json.dumps(trace_payload(result, config)))
    rows = replayed_rows(payload["steps"])
    assert len(rows) == len(result.frames) + 1
    gen_length, size = payload["gen_length"], payload["block_size"]
    bounds = [tuple(b) for b in payload["blocks"]]
    ends = Ends.of_result(result, gen_length)
    for step in range(1, len(rows)):
        stats = result.stats if step == len(result.frames) else None
        view = step_view(result.frames[:step], result.pieces, result.mask_id, gen_length, size, stats=stats,
                         ends=ends, bounds=bounds)
        assert rows[step] == json.loads(json.dumps([cell.row() for cell in view.cells])), step
        assert payload["steps"][step]["active"] == view.active
        html = render_grid(result.frames[:step], result.pieces, result.mask_id, gen_length, size, ends=ends)
        drawn = [c for c in view.cells[: bounds[view.drawn - 1][1]]]
        for cell in drawn:
            assert f'title="{escape(cell.title)}"' in html, cell
    before = {"noise": "dp-cell dp-end"}.get(trace, "dp-cell dp-mask")            # before the first forward
    assert rows[0] and {cell[0] for cell in rows[0]} == {before}
