"""The character automaton (engine/scaffold/machine.py) over a tokenizer: the forced text as
token ids, and the model's best token among those the automaton accepts.

Candidates are tried in the model's order (most probable first), so a token the automaton
accepts is usually found within the first few; the allowed set is never built over the whole
vocabulary (150 k pieces for a Qwen tokenizer). The confidence of the chosen token is its
probability renormalised over what is left once the disallowed tokens among the first
RENORMALISE_OVER candidates are taken out: p(t) / (1 - sum of p(rejected)), a lower bound of
p(t) over the allowed tokens' total, so an enum member the model ranks behind a disallowed
token still reads as certain when nothing else is allowed.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.errors import BackendError
from engine.scaffold import machine

FIRST_CANDIDATES = 64      # the first look; the whole vocabulary is ordered only when none of these fits
RENORMALISE_OVER = 8       # candidates checked for the confidence's renormalisation


class Pieces:
    """What each token id writes, and how forced text becomes ids, for one backend."""

    def __init__(self, backend: Any) -> None:
        tokenizer = backend.tokenizer
        self.tokenizer = tokenizer
        self.eos_id = min(backend.eos_ids)
        special = set(getattr(tokenizer, "all_special_ids", None) or []) | set(backend.eos_ids)
        special |= {t for t in (backend.mask_id, backend.pad_id) if t is not None}
        self.special = special
        texts = [self._decode([i]) for i in range(len(tokenizer))]
        # a piece that is part of a multi-byte character, or empty, cannot be checked character by character
        self.text = [None if (i in special or not t or "\ufffd" in t) else t for i, t in enumerate(texts)]
        self._encoded: dict[str, list[int]] = {}                               # forced texts recur call after call

    def _decode(self, ids: list[int]) -> str:
        try:
            return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        except TypeError:                                                      # a plain tokenizer (tests' fakes)
            return self.tokenizer.decode(ids, skip_special_tokens=False)

    def _encode(self, text: str) -> list[int]:
        try:
            return list(self.tokenizer.encode(text, add_special_tokens=False))
        except TypeError:
            return list(self.tokenizer.encode(text))

    def encode(self, text: str) -> list[int]:
        """Ids that write exactly `text` (the tokenizer's own split when it round-trips)."""
        if text not in self._encoded:
            self._encoded[text] = self._split(text)
        return list(self._encoded[text])

    def _split(self, text: str) -> list[int]:
        if not text:
            return []
        try:
            ids = self._encode(text)
        except ValueError:
            ids = None
        if ids is not None and self._decode(ids) == text:
            return ids
        out, i = [], 0                                                            # longest piece first
        while i < len(text):
            best = max(((len(p), t) for t, p in enumerate(self.text) if p and text.startswith(p, i)), default=None)
            if best is None:
                raise BackendError(f"The tokenizer cannot write the scaffold text {text[i:i + 20]!r}.")
            out.append(best[1])
            i += best[0]
        return out


def pieces_for(backend: Any) -> Pieces:
    """The backend's Pieces, built once (decoding every id takes a while on a large vocabulary)."""
    found = getattr(backend, "_scaffold_pieces", None)
    if found is None:
        found = Pieces(backend)
        backend._scaffold_pieces = found
    return found


def _candidates(scores: torch.Tensor):
    """Token ids in the model's order: the first FIRST_CANDIDATES, then, only if none of them
    fits, the whole vocabulary (sorting 150 k scores on every position would cost more than the
    automaton's checks)."""
    yield torch.topk(scores, min(FIRST_CANDIDATES, scores.numel())).indices
    yield torch.argsort(scores, descending=True)


def choose(state: machine.State, logits: torch.Tensor, pieces: Pieces, temperature: float,
           generator: torch.Generator | None, room: int) -> tuple[int, float, machine.State] | None:
    """The model's token at one position among those the automaton accepts: (id, confidence,
    the state after it), or None when no token of the vocabulary fits. EOS is a candidate once
    the value is complete. Greedy at temperature 0; otherwise the candidates are ordered by
    Gumbel-perturbed logits (sampling without replacement, so the first accepted one is a
    sample from the allowed tokens). `room`: canvas positions left after this one; a token
    after which the value could no longer be finished in them is not allowed."""
    scores = logits.float().reshape(-1)                                        # (V,)
    probs = torch.softmax(scores / temperature if temperature > 0 else scores, -1)
    if temperature > 0:
        noise = -torch.log(-torch.log(torch.rand(scores.shape, generator=generator).clamp_min(1e-20)))
        scores = scores / temperature + noise.to(scores.device)
    can_end = machine.complete(state)
    for order in _candidates(scores):
        rejected, chosen = 0.0, None
        for rank, (token, p) in enumerate(zip(order.tolist(), probs[order].tolist())):
            if chosen is not None and rank >= RENORMALISE_OVER:
                break
            if token == pieces.eos_id and can_end:
                after: machine.State = ((),)                                   # the one finished stack
            else:
                text = pieces.text[token] if token < len(pieces.text) else None
                after = machine.advance(state, text) if text else ()
                if after and machine.shortest(after) > room:
                    after = ()
            if not after:
                rejected += p
            elif chosen is None:
                chosen = (token, p, after)
        if chosen is not None:
            token, p, after = chosen
            return token, min(1.0, p / max(1.0 - rejected, p, 1e-12)), after
    return None                                                                # a dead end: the caller reports it
