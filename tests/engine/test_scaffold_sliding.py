"""Sliding blocks in scaffolded decoding: for a backend whose blocks may start anywhere
(`slides_blocks`), every forward denoises block_size positions from the cursor, with what was
decided since the last one committed first; the answer is the grid loop's, in fewer forwards
when the grid's lines would have cut a confident walk short."""

from __future__ import annotations

import json
from functools import partial

import pytest
import torch

from engine.generate import run as run_with
from engine.trace import GenerationConfig
from tests.engine.test_scaffold import fuzzed_prompt
from tests.engine.test_scaffold_schemas import check_frames
from tests.scaffold_models import RandomLogits, Speller, sprout_twins
from world.format import TOOL_CALLS, ParseError, parse_call

run = partial(run_with, tools=TOOL_CALLS)   # scaffolded tool calls are written from the world's registry

CONFIG = GenerationConfig(gen_length=96, block_size=16, steps=16, sampler="prefix_threshold", threshold=0.9,
                          scaffold=True)
REPLY = ('<tool_call>{"name":"finish","arguments":{"answer":"Blue dress P3K7 in size L for $70, navy jacket '
         'P2X9 in size M for $55."}}</tool_call>')


class Reader(RandomLogits):
    """Proposes the token `layout` has at each position, whatever the canvas holds: sure of it
    except at `unsure` positions (there a second token comes close, so a walk stops before them).
    Records the windows it denoises and the slices it commits."""

    def __init__(self, layout: list[int], slides: bool, unsure: tuple[int, ...] = (21, 46, 70)) -> None:
        super().__init__()
        self.layout, self.slides_blocks, self.unsure = layout, slides, unsure
        self.windows: list[tuple[int, int]] = []
        self.commits: list[tuple[int, int]] = []

    def denoise(self, canvas, block):
        self.forwards += 1
        self.windows.append((block.start, block.stop))
        logits = torch.full((1, block.stop - block.start, self.vocab), -10.0)     # (1, W, V)
        for i, position in enumerate(range(block.start, block.stop)):
            logits[0, i, self.layout[position]] = 10.0
            if position in self.unsure:
                logits[0, i, (self.layout[position] + 1) % self.vocab] = 9.5
        return logits

    def commit(self, canvas, block):
        self.commits.append((block.start, block.stop))


@pytest.fixture(scope="module")
def layout() -> list[int]:
    """The reply as the scaffold lays it out in the canvas (a grid run of a model that spells it)."""
    speller = Speller(REPLY)
    result = run(speller, speller.encode_chat([{"role": "user", "content": "hi"}]), CONFIG)
    assert result.text == REPLY
    return result.frames[-1].canvas


def test_sliding_blocks_decide_the_same_answer_in_fewer_forwards(layout):
    results, readers = {}, {}
    for slides in (False, True):
        readers[slides] = Reader(layout, slides)
        results[slides] = run(readers[slides], readers[slides].encode_chat([{"role": "user", "content": "hi"}]),
                              CONFIG)
    assert results[True].token_ids == results[False].token_ids
    assert results[True].text == REPLY and results[True].schema_error == ""
    grid, sliding = readers[False], readers[True]
    assert all(start % 16 == 0 for start, _ in grid.windows)                   # the grid's blocks
    assert results[True].stats.nfe == sliding.forwards < grid.forwards == results[False].stats.nfe
    check_frames(results[True].frames, sliding.mask_id)


def test_each_window_starts_where_the_committed_text_ends(layout):
    """The cache always holds exactly the canvas before the window: commits are contiguous from
    position 0 and every window starts at the last commit's end, which is the cursor. The first
    window starts at 0 with the scaffold's opening text prefilled in it, as on the grid."""
    reader = Reader(layout, slides=True)
    result = run(reader, reader.encode_chat([{"role": "user", "content": "hi"}]), CONFIG)
    ends = [0]
    for start, stop in reader.commits:
        assert start == ends[-1] and stop > start
        ends.append(stop)
    # the last window's decisions end the answer and are never committed
    assert [start for start, _ in reader.windows] == ends and len(reader.commits) == len(reader.windows) - 1
    first = result.frames[0]
    assert first.prefilled[:4] == [0, 1, 2, 3]                                 # `<tool_call>{"name":"`
    for frame, (start, _stop) in zip(result.frames[1:], reader.windows[1:]):
        decided = [p for p, _t, _c in frame.committed]
        assert decided and decided[0] == start                                 # the cursor: nothing skipped
    assert all(stop - start == 16 or stop == len(result.frames[-1].canvas) for start, stop in reader.windows)


def test_a_sprout_twin_slides_only_when_its_weights_were_trained_to(monkeypatch):
    """A tiny random Sprout-BD denoises grid blocks, and windows off the grid once its config
    says `sliding_blocks`; its scaffolded calls parse either way."""
    backend = sprout_twins()[0]
    starts: list[int] = []
    denoise = backend.denoise
    monkeypatch.setattr(backend, "denoise", lambda canvas, block: starts.append(block.start) or denoise(canvas, block))
    for sliding in (False, True):
        backend.model.config.sliding_blocks = sliding
        assert backend.slides_blocks is sliding
        starts.clear()
        rng = torch.Generator().manual_seed(4)
        for _ in range(3):
            result = run(backend, backend.encode_chat(fuzzed_prompt(rng)), CONFIG)
            check_frames(result.frames, backend.mask_id)
            assert result.schema_error == ""
            assert not isinstance(parse_call(result.text), ParseError), result.text
        assert any(start % CONFIG.block_size for start in starts) is sliding
    backend.model.config.sliding_blocks = False


def test_an_opening_text_longer_than_a_window_costs_no_empty_forward():
    """A schema whose fixed opening fills the first window: it is committed first, and every
    forward decides something."""
    key = "the_quantity_of_blue_jackets_in_size_medium"
    schema = {"type": "object", "properties": {key: {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": [key]}
    backend = RandomLogits("diffusion", seed=1)
    backend.slides_blocks = True
    result = run(backend, backend.encode_chat([{"role": "user", "content": "hi"}]),
                 CONFIG.replace(scaffold=False, schema=schema))
    assert result.schema_error == "" and list(json.loads(result.text)) == [key]
    assert len(result.frames[0].prefilled) > CONFIG.block_size
    assert all(frame.committed for frame in result.frames)
