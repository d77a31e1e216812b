"""The one definition of the numbers (engine/metrics.py), checked on a hand-made trace with an
early EOS, a stray token after it and EOS fill, and against the views that show them."""

from __future__ import annotations

import re

import pytest

from engine.cli import stats_line
from engine.generate import run
from engine.metrics import LABELS, Ends, ModelClock, answer_commits, answer_progress, numbers, summary_line
from engine.trace import Frame, GenerationConfig, Result
from tests.fakes import FakeDiffusionBackend
from tests.visualizer.test_visualizer_traces import (
    EOS,
    EOS_ANSWER,
    EOS_ANSWER_PER_FRAME,
    EOS_GEN_LENGTH,
    MASK,
    make_eos_frames,
    make_eos_result,
)

ENDS = Ends(frozenset({EOS}), 0, MASK)


def test_numbers_leave_out_eos_the_fill_and_what_follows_the_end():
    stats = numbers(make_eos_frames(), ENDS, "eos", wall_s=0.5)
    assert stats.new_tokens == len(EOS_ANSWER) == 6
    assert stats.nfe == 4
    assert stats.tokens_per_forward == pytest.approx(1.5)          # not 12 decided cells / 4 = 3.0
    assert stats.seconds == pytest.approx(0.040)                     # model time: the last frame's clock
    assert stats.tokens_per_s == pytest.approx(6 / 0.040)
    assert stats.first_token_s == pytest.approx(0.010)
    assert stats.wall_s == 0.5 and stats.stop_reason == "eos"
    assert ENDS.answer_ids(make_eos_frames()[-1].canvas) == EOS_ANSWER


def test_answer_commits_per_frame_sum_to_the_answer():
    frames = make_eos_frames()
    assert answer_commits(frames, ENDS) == EOS_ANSWER_PER_FRAME
    assert answer_progress(frames, ENDS) == [2, 4, 5, 6]
    assert [len(f.committed) for f in frames] == [2, 2, 2, 6]        # what the old plots counted


def test_a_rewritten_token_counts_once_where_it_was_first_decided():
    # SDAR's rule may commit a decided position again with another token (engine/samplers.py)
    frames = [Frame(nfe=1, block=0, round=0, committed=[(0, 5, 0.9), (1, 6, 0.9)], canvas=[5, 6, MASK], elapsed_s=0.1),
              Frame(nfe=2, block=0, round=1, committed=[(1, 7, 0.9), (2, 8, 0.9)], canvas=[5, 7, 8], elapsed_s=0.2)]
    assert answer_commits(frames, ENDS) == [2, 1]
    assert answer_progress(frames, ENDS)[-1] == numbers(frames, ENDS, "length").new_tokens == 3


def test_pad_and_mask_are_never_answer_tokens():
    ends = Ends(frozenset({1}), 0, 9)
    assert ends.answer_positions([5, 0, 9, 6, 1, 7]) == [0, 3]
    frames = [Frame(nfe=1, block=0, round=0, committed=[(0, 0, 0.9), (1, 0, 0.9)], canvas=[0, 0, 9], elapsed_s=0.1),
              Frame(nfe=2, block=0, round=1, committed=[(2, 5, 0.9)], canvas=[0, 0, 5], elapsed_s=0.2)]
    stats = numbers(frames, ends, "length")
    assert stats.new_tokens == 1 and stats.first_token_s == pytest.approx(0.2)


def test_empty_trace():
    stats = numbers([], ENDS, "cancelled")
    assert stats.new_tokens == 0 and stats.nfe == 0 and stats.tokens_per_s == 0.0 and stats.first_token_s is None


def test_one_label_per_number_in_the_summary_line():
    stats = numbers(make_eos_frames(), ENDS, "eos", wall_s=0.5)
    line = summary_line(stats)
    assert line == stats_line(stats)
    assert "answer tokens 6" in line and "forwards (NFE) 4" in line and "tokens per forward 1.50" in line
    assert "model time 0.040 s" in line and "wall time 0.500 s" in line and "first answer token 0.010 s" in line
    assert "tokens/s 150.0" in line
    assert set(LABELS.values()) >= {"answer tokens", "model time", "wall time", "tokens per forward", "tokens/s"}


def test_model_clock_stops_while_the_frame_is_out():
    now = [0.0]
    clock = ModelClock(lambda: now[0])
    now[0] = 1.0
    with clock.paused():
        now[0] = 5.0                                                   # the consumer held the frame for 4 s
    now[0] = 6.0
    assert clock.elapsed() == pytest.approx(2.0) and clock.wall() == pytest.approx(6.0)


def test_engine_model_time_excludes_a_slow_consumer():
    import time

    backend = FakeDiffusionBackend("the quick brown fox")
    config = GenerationConfig(gen_length=32, block_size=8, steps=8, sampler="low_confidence")
    slow = run(backend, [5, 6], config, on_frame=lambda _f: time.sleep(0.02))
    # the consumer's sleeps are in wall time and not in model time (on a machine of any speed)
    assert slow.stats.wall_s - slow.stats.seconds >= 0.02 * len(slow.frames)
    assert slow.stats.seconds == slow.frames[-1].elapsed_s
    assert slow.eos_ids == sorted(backend.eos_ids) and Result.from_dict(slow.to_dict()) == slow


def test_every_view_shows_the_same_numbers():
    from visualizer import commits_per_forward, race_plot, render_grid, standalone_replay_html

    result = make_eos_result()
    frames, stats = result.frames, result.stats
    html = render_grid(frames, result.pieces, MASK, EOS_GEN_LENGTH, 4, stats=stats, ends=ENDS)
    assert "answer tokens: <b>6</b>" in html and "tokens per forward: <b>1.50</b>" in html
    live = render_grid(frames, result.pieces, MASK, EOS_GEN_LENGTH, 4, ends=ENDS)   # no stats: from frames
    assert "answer tokens: <b>6</b>" in live and "tokens per forward: <b>1.50</b>" in live
    # EOS, the stray token after it and the fill: never drawn as new answer tokens
    cells = re.findall(r'<span class="dp-cell ([\w-]+)"', html)
    assert cells[:6] == ["dp-done"] * 5 + ["dp-new"]                 # frame 4 decided position 5 of the answer
    assert cells[6:] == ["dp-end"] * 6
    bars = commits_per_forward(frames, ENDS).data[0]
    assert list(bars.y) == EOS_ANSWER_PER_FRAME and sum(bars.y) == stats.new_tokens
    race = race_plot(frames, frames[:2], ends=(ENDS, ENDS)).data
    assert list(race[0].y)[-1] == 6 and list(race[1].y)[-1] == 4
    page = standalone_replay_html(result, "t", "p", "m", {"gen_length": EOS_GEN_LENGTH, "block_size": 4})
    assert "tokens per forward 1.50" in page and "answer tokens 6" in page
    assert '"eos_ids":[1]' in page


def test_the_store_keeps_the_end_ids(tmp_path):
    from sessions import SessionStore

    store = SessionStore(tmp_path / "s.db")
    result = make_eos_result()
    cid = store.create_conversation("chat", "t")
    store.add_turn(cid, "assistant", result.text, generation=result)
    again = store.get_conversation(cid)["turns"][0]["generation"]
    assert again.eos_ids == [EOS] and again.pad_id == 0
    assert numbers(again.frames, Ends(frozenset(again.eos_ids), again.pad_id, again.mask_id), "eos") == \
        numbers(result.frames, ENDS, "eos")


def test_an_answer_of_several_generations_adds_up():
    from engine.metrics import combined

    first = numbers(make_eos_frames()[:1], ENDS, "eos")                      # 2 answer tokens, 1 forward
    second = numbers(make_eos_frames(), ENDS, "eos")                         # 6 answer tokens, 4 forwards
    none = numbers([], ENDS, "length")
    total = combined([none, first, second], wall_s=2.0)
    assert (total.new_tokens, total.nfe) == (8, 5) and total.tokens_per_forward == pytest.approx(1.6)
    assert total.seconds == pytest.approx(0.010 + 0.040) and total.first_token_s == pytest.approx(0.010)
    assert total.tokens_per_s == pytest.approx(8 / 0.050) and total.wall_s == 2.0
    assert combined([]).new_tokens == 0


def test_a_trace_stored_before_the_end_ids_infers_its_eos():
    stored = make_eos_result().to_dict()
    del stored["eos_ids"], stored["pad_id"]
    again = Result.from_dict(stored)
    assert again.eos_ids == [EOS]                        # it stopped on EOS: the last canvas cell is the EOS id
    stored["stats"]["stop_reason"] = "length"
    assert Result.from_dict(stored).eos_ids == []        # nothing to infer from a run that filled its canvas
