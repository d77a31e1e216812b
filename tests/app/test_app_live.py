"""app/live.py: replaying a finished trace at the playback pace, from round 0, and the EOS fill
drawn as the answer's end in the app's panel."""

from __future__ import annotations

from app.live import REPLAY_MS, TraceView, replay
from tests.visualizer.test_visualizer_traces import CONFIG, make_ar_frames, make_eos_result, make_result


def test_replay_starts_before_the_first_forward_and_waits_the_pace_each_round():
    trace = TraceView.from_result(make_result(), CONFIG, "m", "p")
    slept: list[float] = []
    shown = list(replay(trace, 250, sleep=slept.append))
    assert [n for _, n in shown] == list(range(len(trace.frames) + 1))
    assert "before the first forward" in shown[0][0] and "dp-mask" in shown[0][0] and "dp-done" not in shown[0][0]
    assert 'data-mode="done"' in shown[-1][0] and all('data-mode="replay"' in h for h, _ in shown[:-1])
    assert slept == [0.25] * len(trace.frames)


def test_replay_at_pace_zero_uses_a_watchable_default_and_nothing_without_frames():
    trace = TraceView.from_result(make_result(), CONFIG)
    slept: list[float] = []
    list(replay(trace, 0, sleep=slept.append))
    assert slept == [REPLAY_MS / 1000] * len(trace.frames) and REPLAY_MS >= 100
    assert list(replay(None, 100)) == []


def test_the_panel_draws_the_eos_fill_as_the_end():
    trace = TraceView.from_result(make_eos_result(), {"gen_length": 12, "block_size": 4})
    html = trace.panel("done")
    assert html.count('class="dp-cell dp-end"') == 6 and "answer tokens: <b>6</b>" in html
    assert 'class="dp-live-head"' in html and "aria-live" not in html   # the page's persistent line announces it


def test_an_ar_trace_is_drawn_as_blocks_of_one_whichever_way_it_was_stored():
    from engine.trace import Result, Stats

    stats = Stats(nfe=6, new_tokens=6, tokens_per_forward=1.0, seconds=0.1, tokens_per_s=60.0, first_token_s=0.02,
                  stop_reason="length")
    now = Result(token_ids=[], text="", frames=make_ar_frames(6), stats=stats)        # block = token index
    # traces stored while AR frames grouped tokens for display: block = index // 4, round = index % 4
    grouped = now.to_dict()
    for i, frame in enumerate(grouped["frames"]):
        frame.update(block=i // 4, round=i % 4)
    stored = Result.from_dict(grouped)
    assert stored.frames == now.frames
    for result in (now, stored):
        view = TraceView.from_result(result, {"gen_length": 6, "block_size": 4})
        assert view.block_size == 1 and view.kind == "autoregressive"
        html = view.panel("done", upto=2)
        assert html.count('class="dp-block dp-active"') == 1 and 'class="dp-block dp-active" data-block="2"' in html


def test_a_canvas_past_gen_length_shows_only_gen_length_tokens():
    """Aligned blocks (SDAR) decode past gen_length; the live text and the panel stop at it."""
    import dataclasses

    from tests.fakes import FakeDiffusionBackend

    result = make_result()                                                     # gen_length 8 (CONFIG)
    frames = [dataclasses.replace(f, canvas=f.canvas + [f.canvas[-1]]) for f in result.frames]
    backend = FakeDiffusionBackend("abcdefghi")
    trace = TraceView.for_run(backend, CONFIG, "m", "p")
    trace.frames = frames
    assert len(frames[-1].canvas) == 9
    assert len(trace.partial_text(backend)) == len(backend.decode(frames[-1].canvas[:8]))
    assert trace.ends.answer_positions(frames[-1].canvas) == list(range(8))
    done = TraceView.from_result(dataclasses.replace(result, frames=frames), CONFIG)
    assert done.ends.answer_positions(frames[-1].canvas) == list(range(8))
