"""run_conversation with the Agent tab's hooks: frames, each request as it starts, and Stop."""

from __future__ import annotations

from engine.trace import GenerationConfig
from tests.world.scripted import oracle_office_six
from world.agent import STOPPED, run_conversation
from world.office_six import load_office_six

CONFIG = GenerationConfig(gen_length=256, block_size=32, steps=32)


def test_stop_ends_the_request_in_progress_and_asks_no_later_one():
    chain = load_office_six()[0]
    asked, frames = [], []
    out = run_conversation(oracle_office_six(), chain, CONFIG, on_request=lambda k, task: asked.append(k),
                           on_frame=frames.append, should_stop=lambda: len(asked) >= 2)   # Stop in the second
    assert frames and out.requests[-1].stopped == STOPPED and not out.success
    assert asked == list(range(len(out.requests))) and len(out.requests) == 2
    assert out.requests[0].success


def test_without_stop_every_request_is_asked_and_graded():
    chain = load_office_six()[0]
    asked = []
    out = run_conversation(oracle_office_six(), chain, CONFIG, on_request=lambda k, task: asked.append(k))
    assert asked == list(range(6)) and out.success and all(r.success for r in out.requests)
