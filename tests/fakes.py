"""Deterministic fake backends for tests: no model, no download, milliseconds per run.

`CharTokenizer` is a char-level tokenizer with three special ids (pad 0, eos 1, mask 2).
`FakeDiffusionBackend` and `FakeARBackend` "know" the answer: a target sequence given as text
(encoded, then EOS appended), as ids (used as they are), or as a callable that maps the prompt
text to either (for scripted multi-turn / agent tests). Positions past the target predict EOS.

Logits favour the target so strongly that greedy decoding reproduces it exactly, whatever the
sampler: logit(target) = 1 + boost, every other logit in [0, 1). The boost is a seeded
per-position value in [2, 12), raised by `context_gain` x (fraction of the block already
decided), so confidences differ by position and grow as a block fills in, as a real model's do.
With temperature > 0 other tokens (the mask id too) get sampled sometimes.

Both fakes check the backend protocol and raise ProtocolError (an AssertionError) on misuse:
denoise / step before prefill, a block denoised after it was committed, blocks committed out
of order or twice or with masks left, a canvas whose shape changes mid-generation.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import torch

from engine.backends.base import Capabilities

PAD, EOS, MASK = 0, 1, 2
SPECIALS = {PAD: "<pad>", EOS: "<eos>", MASK: "<mask>"}
DEFAULT_ALPHABET = string.printable


class ProtocolError(AssertionError):
    """A caller broke the backend protocol (engine/backends/base.py)."""


class CharTokenizer:
    """Char-level tokenizer: ids 0-2 are pad / eos / mask, then one id per alphabet char."""

    pad_token_id, eos_token_id, mask_token_id = PAD, EOS, MASK

    def __init__(self, alphabet: str = DEFAULT_ALPHABET) -> None:
        self.chars = list(dict.fromkeys(alphabet))
        self.ids = {ch: i + len(SPECIALS) for i, ch in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.chars)

    vocab_size = property(__len__)

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self.ids))
        if unknown:
            raise ValueError(f"Characters {unknown} are not in the fake tokenizer's alphabet.")
        return [self.ids[ch] for ch in text]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        out = []
        for i in ids:
            i = int(i)
            if i in SPECIALS:
                if not skip_special_tokens:
                    out.append(SPECIALS[i])
            else:
                out.append(self.chars[i - len(SPECIALS)])
        return "".join(out)

    def piece(self, token_id: int) -> str:
        return self.decode([token_id], skip_special_tokens=False)


Target = str | Sequence[int] | Callable[[str], str | Sequence[int]]


class _FakeBase(Capabilities):
    """What both fakes share: tokenizer, chat encoding, the target, seeded logits."""

    kind = "?"

    def __init__(self, target: Target, *, tokenizer: CharTokenizer | None = None, seed: int = 0,
                 max_length: int = 4096, name: str = "fake", context_gain: float = 4.0) -> None:
        self.tokenizer = tokenizer or CharTokenizer()
        self.target = target
        self.name, self.seed, self.max_length, self.context_gain = name, seed, max_length, context_gain
        self.device = torch.device("cpu")
        self.eos_ids, self.pad_id = frozenset({EOS}), PAD
        self.vocab_size = len(self.tokenizer)
        self.prefill_calls = 0
        self.prompts: list[list[int]] = []        # every prompt prefilled, in order
        self.target_ids: list[int] = []           # the target of the current generation
        self._noise: dict[int, tuple[torch.Tensor, float]] = {}

    # -- Backend protocol
    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return self.tokenizer.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def token_piece(self, token_id: int) -> str:
        return self.tokenizer.piece(token_id)

    # -- helpers
    def _start(self, prompt_ids: torch.Tensor) -> None:
        if prompt_ids.ndim != 2 or prompt_ids.shape[0] != 1 or prompt_ids.dtype != torch.long:
            raise ProtocolError(f"prefill wants (1, P) long ids, got {tuple(prompt_ids.shape)} {prompt_ids.dtype}.")
        prompt = prompt_ids[0].tolist()
        self.prefill_calls += 1
        self.prompts.append(prompt)
        target = self.target(self.tokenizer.decode(prompt)) if callable(self.target) else self.target
        self.target_ids = self.tokenizer.encode(target) + [EOS] if isinstance(target, str) else list(target)

    def target_at(self, position: int) -> int:
        return self.target_ids[position] if position < len(self.target_ids) else EOS

    def _position_logits(self, position: int, decided_fraction: float) -> torch.Tensor:
        """(V,) logits for one generated position: noise in [0, 1), target at 1 + boost."""
        if position not in self._noise:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + position)
            noise = torch.rand(self.vocab_size, generator=g)                    # (V,) in [0, 1)
            self._noise[position] = (noise, 2.0 + 10.0 * float(torch.rand(1, generator=g)))
        noise, boost = self._noise[position]
        logits = noise.clone()
        logits[self.target_at(position)] = 1.0 + boost + self.context_gain * decided_fraction
        return logits


class FakeDiffusionBackend(_FakeBase):
    """A diffusion backend with a (fake) block cache. Counters: prefill_calls, denoise_calls,
    commit_calls; `committed_blocks` lists the committed slices as (start, stop)."""

    kind = "diffusion"
    mask_id, logit_shift = MASK, False

    def __init__(self, target: Target, **kwargs) -> None:
        super().__init__(target, name=kwargs.pop("name", "fake-diffusion"), **kwargs)
        self.denoise_calls = self.commit_calls = 0
        self.committed_blocks: list[tuple[int, int]] = []
        self._canvas_length: int | None = None
        self._prefilled = False

    def prefill(self, prompt_ids: torch.Tensor) -> None:
        self._start(prompt_ids)
        self.committed_blocks, self._canvas_length, self._prefilled = [], None, True

    def _check(self, canvas: torch.Tensor, block: slice, what: str) -> None:
        if not self._prefilled:
            raise ProtocolError(f"{what} called before prefill.")
        if canvas.ndim != 2 or canvas.shape[0] != 1 or canvas.dtype != torch.long:
            raise ProtocolError(f"{what} wants a (1, L) long canvas, got {tuple(canvas.shape)} {canvas.dtype}.")
        if self._canvas_length is None:
            self._canvas_length = canvas.shape[1]
        if canvas.shape[1] != self._canvas_length:
            raise ProtocolError(f"canvas length changed from {self._canvas_length} to {canvas.shape[1]}.")
        if not 0 <= block.start < block.stop <= canvas.shape[1] or block.step not in (None, 1):
            raise ProtocolError(f"{what}: bad block {block} for a canvas of {canvas.shape[1]}.")
        expected = self.committed_blocks[-1][1] if self.committed_blocks else 0
        if block.start != expected:
            raise ProtocolError(f"{what} on block starting at {block.start}; the next uncommitted block "
                                f"starts at {expected} (blocks go in order, denoise never after commit).")

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        self._check(canvas, block, "denoise")
        self.denoise_calls += 1
        ids = canvas[0, block]
        decided = float((ids != MASK).float().mean())
        rows = [self._position_logits(p, decided) for p in range(block.start, block.stop)]
        return torch.stack(rows)[None]                                         # (1, B, V)

    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        self._check(canvas, block, "commit")
        if bool((canvas[0, block] == MASK).any()):
            raise ProtocolError(f"commit of block {block} with masked positions left.")
        self.commit_calls += 1
        self.committed_blocks.append((block.start, block.stop))


class FakeARBackend(_FakeBase):
    """An autoregressive backend. Counters: prefill_calls, step_calls; `fed` lists the tokens
    passed to step() in the current generation."""

    kind = "autoregressive"

    def __init__(self, target: Target, **kwargs) -> None:
        super().__init__(target, name=kwargs.pop("name", "fake-ar"), **kwargs)
        self.step_calls = 0
        self.fed: list[int] = []
        self._prefilled = False

    def prefill(self, prompt_ids: torch.Tensor) -> torch.Tensor:
        self._start(prompt_ids)
        self.fed, self._prefilled = [], True
        return self._position_logits(0, 0.0)[None]                             # (1, V)

    def step(self, token_id: int) -> torch.Tensor:
        if not self._prefilled:
            raise ProtocolError("step called before prefill.")
        if not 0 <= int(token_id) < self.vocab_size:
            raise ProtocolError(f"step got token id {token_id} outside the vocabulary of {self.vocab_size}.")
        self.step_calls += 1
        self.fed.append(int(token_id))
        return self._position_logits(len(self.fed), 0.0)[None]                 # (1, V)
