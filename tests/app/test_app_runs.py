"""app/runs.py: a paced run draws a forward in parts (each an event of its own), says "live"
while the model computes and "replay" once it is done, and counts frames computed vs read."""

from __future__ import annotations

import threading

from app.live import TraceView
from app.runs import Run, RunBoard
from engine.metrics import scope_label, summary_line
from engine.trace import Frame, Stats
from tests.visualizer.test_visualizer_traces import CONFIG, make_ar_frames, make_result


def frames(n: int) -> list[Frame]:
    return [Frame(nfe=i + 1, block=0, round=i, committed=[(i, 5, 0.9)], canvas=[5] * (i + 1), elapsed_s=0.01 * i)
            for i in range(n)]


def test_a_paced_forward_comes_once_per_part_and_the_rest_of_the_run_is_a_replay():
    run = Run(RunBoard(), ("t", "parts"), pace_ms=1, parts=lambda frame, lane: 3)
    run.start(lambda r: [r.frame(f) for f in frames(4)] and "ok")
    run.over.wait(5)                       # the model is done before anything is drawn
    seen = []
    with run:
        for event in run.events():
            if event.kind == "frame":
                seen.append((event.value.nfe, event.part, event.parts, run.mode(), run.behind()))
    assert [(nfe, part) for nfe, part, *_ in seen] == [(n, p) for n in (1, 2, 3, 4) for p in (1, 2, 3)]
    assert {mode for *_, mode, _b in seen} == {"replay"}
    assert [b for nfe, part, _n, _m, b in seen if part == 1] == [3, 2, 1, 0]     # computed, not yet read
    assert run.computed == {0: 4} and run.read == {0: 4}


def test_live_while_the_model_computes_and_one_part_without_a_pace():
    gate = threading.Event()

    def work(r: Run) -> str:
        r.frame(frames(1)[0])
        r.turnstile.stop_computing()       # idle, not over, while the first frame is drawn
        gate.wait(5)
        r.turnstile.start_computing()
        r.frame(frames(2)[1])
        return "ok"

    run = Run(RunBoard(), ("t", "live"), pace_ms=0, updates_per_second=1e9, parts=lambda frame, lane: 3)
    run.start(work)
    modes = []
    with run:
        for event in run.events():
            if event.kind == "frame":
                modes.append((event.parts, run.mode()))
                gate.set()
    assert modes[0] == (1, "live") and len(modes) == 2              # pace 0: as it computes, whole frames


def test_the_panel_labels_a_part_as_a_part_of_one_forward_and_says_replay():
    trace = TraceView.from_result(make_result(), CONFIG, "m", "p")
    last = trace.frames[-1]
    n = trace.part_count(last)
    html = trace.panel("replay", part=(1, max(n, 2)), behind=2)
    assert 'data-mode="replay"' in html and "computing finished; 2 more forward(s) to show" in html
    assert "of one forward (drawn in parts, surest first)" in html
    live = trace.panel("live", behind=3)
    assert "● live" in live and "the model is 3 forward(s) ahead" in live and "part " not in live


def test_every_line_of_numbers_says_its_scope():
    stats = Stats(nfe=9, new_tokens=52, tokens_per_forward=52 / 9, seconds=0.5, tokens_per_s=104.0,
                  first_token_s=0.1, stop_reason="eos")
    assert summary_line(stats, "turn", 2).startswith("this turn (2 generations): answer tokens 52 · ")
    assert summary_line(stats).startswith("answer tokens 52")
    assert scope_label("generation", index=2, of=3) == "this generation (2 of 3 in this turn)"
    assert scope_label("generation", index=2) == "this generation (number 2 of this turn)"
    assert scope_label("generation", index=1, of=1) == "this generation"
    assert scope_label("generation", index=1, within="episode") == "this generation (number 1 of this episode)"
    trace = TraceView.from_result(make_result(), CONFIG, "m", "p")
    trace.generation, trace.generations = 2, 2
    assert "<b>this generation (2 of 2 in this turn)</b>" in trace.panel("done")
    heatmap, commits = trace.plots()
    assert all(fig.layout.title.subtitle.text == "this generation (2 of 2 in this turn)" for fig in (heatmap, commits))


def test_an_ar_panel_counts_tokens_not_blocks():
    from engine.trace import Result

    stats = Stats(nfe=6, new_tokens=6, tokens_per_forward=1.0, seconds=0.1, tokens_per_s=60.0, first_token_s=0.02,
                  stop_reason="length")
    view = TraceView.from_result(Result(token_ids=[], text="", frames=make_ar_frames(6), stats=stats),
                                 {"gen_length": 128, "block_size": 4})
    readout = view.panel("done").split('class="dp-readout"')[1].split("</div>")[0]
    assert "token: <b>6/128</b>" in readout and "block" not in readout and "round" not in readout
