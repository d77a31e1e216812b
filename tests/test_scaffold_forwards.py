"""Forwards the scaffold does not need: a block's first position decided from logits the backend
already has (a logit-shifted model's next-token logits, kept by the commit pass) costs no denoise
when that decision settles the block, and every decision stays the one the plain loop makes."""

from __future__ import annotations

import pytest
import torch

from engine.generate import run
from engine.trace import GenerationConfig
from tests.scaffold_models import RandomLogits, sprout_twins
from tests.test_scaffold import fuzzed_prompt
from tests.test_scaffold_schemas import check_frames

CONFIG = GenerationConfig(gen_length=96, block_size=16, steps=16, sampler="prefix_threshold", threshold=0.9,
                          scaffold=True)


class Speller(RandomLogits):
    """A logit-shifted diffusion backend that spells one reply a token at a time: at the first
    masked position of the block only the pieces that continue `reply` after the decided text
    have a chance (longest first, so sampling picks among ways to split it); every later
    position is flat, so each forward decides one token. A
    block's first position depends only on the decided text before it, so `block_start_logits`
    is what the next denoise gives there."""

    def __init__(self, reply: str, known_first: bool = True) -> None:
        super().__init__()
        self.reply, self.known_first = reply, known_first
        self.pieces = [self.tokenizer.decode([i]) for i in range(self.vocab)]
        self.canvas: list[int] = []

    def _next(self, decided: list[int]) -> torch.Tensor:
        text = self.decode(decided)
        rest = self.reply[len(text):] if self.reply.startswith(text) else ""
        row = torch.full((self.vocab,), -1e4)                                  # (V,)
        if not rest:
            row[min(self.eos_ids)] = 20.0
        for token, piece in enumerate(self.pieces):
            if piece and rest.startswith(piece) and token not in (self.mask_id, self.pad_id, *self.eos_ids):
                row[token] = 10.0 + len(piece)
        return row

    def denoise(self, canvas, block):
        self.forwards += 1
        ids = canvas[0].tolist()
        logits = torch.zeros(1, block.stop - block.start, self.vocab)          # (1, B, V)
        cursor = next(p for p in range(block.start, block.stop) if ids[p] == self.mask_id)
        logits[0, cursor - block.start] = self._next(ids[:cursor])
        return logits

    def commit(self, canvas, block):
        self.canvas = canvas[0, :block.stop].tolist()

    def block_start_logits(self):
        return self._next(self.canvas)[None] if self.known_first else None     # (1, V)


def settled_by_its_first_position(frames, block_size: int, mask_id: int, eos_id: int) -> int:
    """Frames of the plain loop that decided only a block's first position and left nothing
    undecided in that block (or ended the answer): the forwards the known logits make unneeded."""
    count = 0
    for frame in frames:
        if len(frame.committed) != 1 or frame.committed[0][0] % block_size:
            continue
        start = frame.committed[0][0]
        rest = frame.canvas[start:start + block_size]
        count += all(t != mask_id for t in rest) or eos_id in frame.canvas[start:]
    return count


def answers() -> list[str]:
    """One more token each (the tiny tokenizer writes each `.` alone, then `."`), so the answer's
    last decision falls on every position from 14 to 34, two block starts among them."""
    return ["blue" + "." * n for n in range(21)]


@pytest.mark.parametrize("temperature", [0.0, 4.0])
def test_a_block_settled_by_its_first_position_costs_no_denoise(temperature):
    """Sampled too: a first position the known logits do not settle leaves the generator as it
    was, so the block's denoise draws what the plain loop draws."""
    config = CONFIG.replace(temperature=temperature, seed=7)
    saved = 0
    for answer in answers():
        reply = f'<tool_call>{{"name":"finish","arguments":{{"answer":"{answer}"}}}}</tool_call>'
        plain, known = Speller(reply, known_first=False), Speller(reply)
        ids = plain.encode_chat([{"role": "user", "content": "hi"}])
        off, on = run(plain, ids, config), run(known, ids, config)
        assert off.text == on.text == reply                                   # every piece it ranks spells the reply
        assert off.token_ids == on.token_ids
        assert on.schema_error == ""
        decided = {(p, t) for f in off.frames for p, t, _c in f.committed}
        assert decided == {(p, t) for f in on.frames for p, t, _c in f.committed}
        expected = settled_by_its_first_position(off.frames, CONFIG.block_size, plain.mask_id, min(plain.eos_ids))
        assert on.stats.nfe == known.forwards == off.stats.nfe - expected
        check_frames(on.frames, known.mask_id)
        saved += expected
    assert saved >= 2                          # the construction reaches the case it is about


@pytest.fixture(scope="module")
def shifted_twin():
    backend = sprout_twins()[0]
    backend.model.config.logit_shift = True
    return backend


def test_tiny_shifted_sprout_decides_the_same_with_fewer_or_equal_forwards(shifted_twin, monkeypatch):
    """On a real (tiny, random) Sprout-BD with logit shift: the same answers with and without
    the known first-position logits, never more forwards."""
    rng = torch.Generator().manual_seed(3)
    for _ in range(4):
        ids = shifted_twin.encode_chat(fuzzed_prompt(rng))
        results = {}
        for known in (True, False):
            if not known:
                monkeypatch.setattr(shifted_twin, "block_start_logits", lambda: None)
            results[known] = run(shifted_twin, ids, CONFIG.replace(gen_length=64))
            monkeypatch.undo()
        assert results[True].token_ids == results[False].token_ids
        assert results[True].stats.nfe <= results[False].stats.nfe


def test_the_known_first_position_logits_are_the_denoises(shifted_twin):
    """After prefill and after each commit, block_start_logits is bit for bit the row the next
    denoise gives its block's first position."""
    ids = shifted_twin.encode_chat([{"role": "user", "content": "Add a blue dress in size L."}])
    canvas = torch.full((1, 32), shifted_twin.mask_id, dtype=torch.long)     # (1, L)
    shifted_twin.prefill(torch.tensor([ids]))
    assert torch.equal(shifted_twin.denoise(canvas, slice(0, 16))[0, 0], shifted_twin.block_start_logits()[0])
    canvas[0, :16] = torch.tensor(ids[:16])
    shifted_twin.commit(canvas, slice(0, 16))
    assert torch.equal(shifted_twin.denoise(canvas, slice(16, 32))[0, 0], shifted_twin.block_start_logits()[0])


def test_an_unshifted_model_has_no_known_first_position():
    backend = sprout_twins(seed=5)[0]
    backend.prefill(torch.tensor([[3, 4, 5]]))
    assert backend.block_start_logits() is None
