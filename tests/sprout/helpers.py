"""Tiny Sprout pieces built in code for tests: a tokenizer trained on a few world transcripts
and a randomly initialised smoke-size model."""

from __future__ import annotations

import functools

import torch

from sprout.config import preset_config
from sprout.modeling import SproutModel
from sprout.tokenizer import EOS, MASK, PAD, train_tokenizer
from training.corpus import corpus_lines


@functools.lru_cache(maxsize=1)
def corpus_texts(n: int = 80) -> tuple[str, ...]:
    return tuple(r["text"] for r in corpus_lines("train", n, seed=3))


@functools.lru_cache(maxsize=1)
def tiny_tokenizer():
    return train_tokenizer(corpus_texts(), vocab_size=400)


def tiny_sprout(causal: bool, seed: int = 0, pattern: str = "GA") -> SproutModel:
    tok = tiny_tokenizer()
    torch.manual_seed(seed)
    cfg = preset_config("smoke", vocab_size=len(tok), layer_pattern=pattern, causal=causal,
                        mask_token_id=tok.convert_tokens_to_ids(MASK), eos_token_id=tok.convert_tokens_to_ids(EOS),
                        pad_token_id=tok.convert_tokens_to_ids(PAD))
    model = SproutModel(cfg).eval()
    with torch.no_grad():   # sharpen the random logits so greedy decoding is decisive
        model.embed.weight.mul_(20.0)
    return model


def special_ids(tok) -> dict[str, int]:
    """The ids the batch builders take: eos, pad, mask."""
    return {"eos": tok.convert_tokens_to_ids(EOS), "pad": tok.convert_tokens_to_ids(PAD),
            "mask": tok.convert_tokens_to_ids(MASK)}


def spell_marks(tok, ids: list[int], marks: list[tuple[int, int]], words: list[str]) -> list[tuple[str, set[str]]]:
    """Read (position, COLORS index) marks back in order, one group per expected word: the text
    its tokens spell and the colours they carry."""
    from world.entities import COLORS

    it, out = iter(marks), []
    for word in words:
        got, colours = "", set()
        while len(got) < len(word):
            p, c = next(it)
            got, colours = got + tok.decode([ids[p]]), colours | {COLORS[c]}
        out.append((got, colours))
    return out
