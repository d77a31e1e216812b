"""Sprout's clean contexts of recent prompts, so a prompt that starts with one of them runs only
its new tokens.

An agent's next call is the same conversation plus the reply and the tool's answer, and every
conversation in the world starts with the same system text (the tools, ~1,000 tokens): without
this, each call prefills all of it again, which on a CPU is a quarter or more of a Sprout call.

Why reuse is exact up to float rounding: the clean stream is causal (attention sees only earlier
positions; the G layers' memory after n tokens is a function of those n tokens), so the cache
after a prefix does not depend on what follows it, and `commit` continues a cache from where it
ends (positions, conv tail, memory). A cache is immutable (sprout/cache.py), so keeping
one costs no copy. The recurrent memory has no state for an arbitrary earlier position, which is
why only whole stored prefixes are reused: every prompt, and the point where its system text ends
(an `anchor`), so a new conversation reuses the system text of the last one.

`Backend.prefill` without this (the slow reference) is `model.prefill(all ids)`;
tests/sprout/test_prompt_cache.py holds the two to the same logits and the same replies.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from sprout.cache import SproutCache


class PromptCache:
    """The last `size` prompt prefixes (token ids) and their caches, most recently used last."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[int, ...], SproutCache] = OrderedDict()
        self.tokens_run = 0        # tokens the model ran for prompts (what reuse saves; read by tests)

    def clear(self) -> None:
        self._kept.clear()

    def _longest_prefix(self, ids: tuple[int, ...]) -> tuple[int, SproutCache | None]:
        best, cache = 0, None
        for key, kept in self._kept.items():
            if best < len(key) <= len(ids) and ids[:len(key)] == key:
                best, cache = len(key), kept
        if cache is not None:
            self._kept.move_to_end(ids[:best])
        return best, cache

    def _keep(self, key: tuple[int, ...], cache: SproutCache) -> None:
        self._kept[key] = cache
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)

    def prefill(self, model, ids: torch.Tensor, anchors: tuple[int, ...] = ()) -> SproutCache:
        """The cache after `ids` (1, P), its `next_logits` the logits after the last token. Runs
        the model on the tokens after the longest kept prefix only, cut at each anchor (a
        position) on the way so the prefix up to it is kept too."""
        cache, pieces = self.plan(ids, anchors)
        for piece in pieces:
            cache = self.run(model, ids, piece, cache)
        return cache

    def plan(self, ids: torch.Tensor, anchors: tuple[int, ...] = ()) -> tuple[SproutCache | None, list[slice]]:
        """The longest kept prefix's cache (None: none) and the pieces of `ids` (1, P) left to run
        after it, in order, cut at the anchors. `run` each, or run the last one yourself and
        `keep` its cache (the Sprout-BD backend runs it together with the first denoise)."""
        key = tuple(ids[0].tolist())
        start, cache = self._longest_prefix(key)
        cuts = [a for a in sorted(set(anchors)) if start < a < len(key)] + ([len(key)] if start < len(key) else [])
        return cache, [slice(a, b) for a, b in zip([start, *cuts], cuts)]

    def run(self, model, ids: torch.Tensor, piece: slice, cache: SproutCache | None) -> SproutCache:
        """The cache after ids[:, :piece.stop], from `cache` (the one after ids[:, :piece.start]); kept."""
        tokens = ids[:, piece]
        after = model.prefill(tokens)[0] if cache is None else model.commit(tokens, cache)[0]
        self.keep(ids, piece, after)
        return after

    def keep(self, ids: torch.Tensor, piece: slice, cache: SproutCache, then: torch.Tensor | None = None) -> None:
        """Keep `cache`, the context after ids[:, :piece.stop], whose last piece just ran; or,
        with `then` (1, n), the context after those ids and `then`, which ran in the same pass
        (answer tokens: the key grows by them, the prompt tokens run do not)."""
        self.tokens_run += piece.stop - piece.start
        key = ids[0, :piece.stop].tolist() + ([] if then is None else then[0].tolist())
        self._keep(tuple(key), cache)
