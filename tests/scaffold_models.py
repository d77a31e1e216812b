"""Backends for the scaffold tests, built in code: tiny random Sprout twins (tests/sprout/helpers.py)
and `RandomLogits`, a model-free backend whose logits are seeded noise, so thousands of fuzzed
prompts run in seconds and every choice the scaffold leaves open is made by chance; and `Speller`,
which spells one known reply a token per forward."""

from __future__ import annotations

import hashlib

import torch

from engine.backends.sprout import SproutARBackend, SproutBackend
from sprout.chat import EOS, MASK, PAD, render_chat
from tests.sprout.helpers import tiny_sprout, tiny_tokenizer


def sprout_twins(seed: int = 0) -> tuple[SproutBackend, SproutARBackend]:
    tok = tiny_tokenizer()
    return (SproutBackend(tiny_sprout(causal=False, seed=seed), tok, name="tiny-bd"),
            SproutARBackend(tiny_sprout(causal=True, seed=seed + 1), tok, name="tiny-ar"))


class RandomLogits:
    """A diffusion (or, with kind="autoregressive", AR) backend over the tiny Sprout tokenizer
    whose logits are noise seeded by the prompt and the canvas: deterministic, model-free."""

    chat_format = "world"
    logit_shift = False

    def __init__(self, kind: str = "diffusion", scale: float = 4.0, seed: int = 0) -> None:
        self.tokenizer = tiny_tokenizer()
        ids = self.tokenizer.convert_tokens_to_ids
        self.kind, self.name, self.scale, self.seed = kind, f"random-{kind}", scale, seed
        self.mask_id, self.pad_id, self.eos_ids = ids(MASK), ids(PAD), frozenset({ids(EOS)})
        self.device, self.max_length = torch.device("cpu"), 4096
        self.vocab = len(self.tokenizer)
        self.context: list[int] = []
        self.forwards = 0

    def encode_chat(self, messages):
        return list(self.tokenizer.encode(render_chat(messages, add_generation_prompt=True)))

    def decode(self, ids):
        return self.tokenizer.decode([i for i in ids if i not in (self.mask_id, self.pad_id, *self.eos_ids)],
                                     skip_special_tokens=False)

    def token_piece(self, token_id):
        return self.tokenizer.decode([token_id])

    def _noise(self, key: list[int], rows: int) -> torch.Tensor:
        digest = hashlib.blake2b(repr((self.seed, key)).encode(), digest_size=8).digest()
        generator = torch.Generator().manual_seed(int.from_bytes(digest, "little") >> 1)
        return torch.randn(1, rows, self.vocab, generator=generator) * self.scale   # (1, rows, V)

    # diffusion
    def prefill(self, prompt_ids, block_size=None):
        self.context = [int(t) for t in torch.as_tensor(prompt_ids).reshape(-1)]
        self.forwards = 0
        if self.kind == "autoregressive":
            self.forwards += 1
            return self._noise(self.context, 1)[:, 0]                          # (1, V)
        return None

    def denoise(self, canvas, block):
        self.forwards += 1
        return self._noise(self.context + canvas[0].tolist(), block.stop - block.start)

    def commit(self, canvas, block):
        pass

    # autoregressive
    def step(self, token_id):
        return self.extend([token_id])

    def extend(self, ids):
        self.forwards += 1
        self.context += [int(t) for t in ids]
        return self._noise(self.context, 1)[:, 0]                              # (1, V)


class Speller(RandomLogits):
    """A diffusion backend that spells one reply a token at a time: at the first masked position
    of the block only the pieces that continue `reply` after the decided text have a chance
    (longest first, so sampling picks among ways to split it); every later position is flat, so
    each forward decides one token."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply
        self.pieces = [self.tokenizer.decode([i]) for i in range(self.vocab)]

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
