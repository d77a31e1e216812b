"""A uniform-noise run (DiffusionGemma) is drawn as what it is on every surface: random tokens as
noise (never masks), what each step accepted, renoised and changed, the rule that ended each
canvas, a plot of accepted tokens and mean entropy per step; the replay and the LaTeX say the same."""

from __future__ import annotations

import dataclasses
import json
import re

from engine.metrics import Ends
from tests.noise_models import NOISE_CONFIG, noise_result
from visualizer import latex_document, render_grid, standalone_replay_html
from visualizer.noise_grid import STOP_WORDS, settled_steps
from visualizer.pieces import MASK_GLYPH
from visualizer.plots import commits_per_forward
from visualizer.replay import trace_payload

HOSTILE = "<img src=x onerror=alert(1)>"


def grid(result, upto, pieces=None):
    return render_grid(result.frames, pieces or result.pieces, result.mask_id, 32, 16, upto=upto,
                       ends=Ends.of_result(result, 32))


def cells(html: str, cls: str) -> int:
    return len(re.findall(rf'class="dp-cell [^"]*\b{cls}\b', html))


def test_each_step_draws_noise_accepted_and_changed_never_masks():
    result = noise_result()
    for index, frame in enumerate(result.frames):
        html = grid(result, index)
        assert "dp-mask" not in html and f">{MASK_GLYPH}</span>" not in html   # no cell drawn as a mask
        step = frame.noise
        if step.stop_rule:                                      # the canvas ended: its text, decided now
            assert cells(html, "dp-new") == 16 and STOP_WORDS[step.stop_rule] in html
            assert cells(html, "dp-noise") == 0
        else:
            assert cells(html, "dp-noise") == len(step.renoised) == 16 - len(step.accepted)
            assert cells(html, "dp-accepted") == len(step.accepted)
            assert cells(html, "dp-changed") == len(step.changed)
            assert f"accepted: <b>{len(step.accepted)}/16</b>" in html
            assert f"renoised: <b>{len(step.renoised)}</b>" in html
            assert "stop:" not in html
        assert f"canvas: <b>{frame.block + 1}/2</b>" in html and f"step: <b>{frame.round + 1}</b>" in html
        assert "\u27e8" not in html                              # every random token has its piece
    assert any(f.noise.changed for f in result.frames)          # the run above did show changed tokens


def test_noise_cells_escape_model_text():
    result = noise_result()
    pieces = {t: HOSTILE for t in result.pieces}
    html = grid(result, 1, pieces)
    assert "<img" not in html and "&lt;img" in html


def test_answer_tokens_count_only_finished_canvases_while_a_canvas_runs():
    result = noise_result()
    first_step = grid(result, 0)
    assert "answer tokens: <b>0</b>" in first_step              # nothing is decided before a canvas ends
    end_of_first = next(i for i, f in enumerate(result.frames) if f.noise.stop_rule)
    assert "answer tokens: <b>16</b>" in grid(result, end_of_first)


def test_the_plot_shows_accepted_tokens_and_mean_entropy_per_step():
    result = noise_result()
    fig = commits_per_forward(result.frames, Ends.of_result(result, 32))
    kept, changed, entropy = fig.data
    assert [a + c for a, c in zip(kept.y, changed.y)] == [len(f.noise.accepted) for f in result.frames]
    assert list(changed.y) == [len(f.noise.changed) for f in result.frames]
    assert list(entropy.y) == [f.noise.mean_entropy for f in result.frames]
    assert len(fig.layout.shapes) == 2                          # one mark per canvas end
    assert "step cap" in json.dumps(fig.to_plotly_json()["layout"]["annotations"])


def test_the_replay_carries_every_step_and_its_noise_legend():
    result = noise_result()
    payload = trace_payload(result, NOISE_CONFIG)
    assert payload["uniform_noise"] is True and payload["block_size"] == 16
    assert [f["noise"] for f in payload["frames"]] == [dataclasses.asdict(f.noise) for f in result.frames]
    page = standalone_replay_html(result, "noise", "Say hi", "tiny DiffusionGemma", NOISE_CONFIG)
    assert "random: renoised this step" in page and "still masked" not in page


def test_latex_colours_tokens_by_the_step_they_settled_and_names_the_stop_rules():
    result = noise_result()
    doc = latex_document(result, "t", "p", "tiny DiffusionGemma")
    assert "from which each token's draft stayed" in doc and "~step 1" in doc and "round 1" not in doc
    assert doc.count("ended by the step cap") == 2
    settled = settled_steps(result.frames, 32)
    last = {f.block: f for f in result.frames}
    assert all(s is not None and 0 <= s <= last[p // 16].round for p, s in enumerate(settled))
