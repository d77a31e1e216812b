"""The hand-written development set (world/handwritten.py) stays out of training: no
request of it, and no near copy of one, is in a 20,000-conversation training corpus.

A near copy is judged on the words around the values: every slot value a request carries (names,
ids, emails, addresses, colours, styles, sizes, descriptions, numbers) becomes one placeholder on
both sides, so "Bill Ana Diaz $40 for hosting" and "Bill Leo Egan $950 for repairs" are the same
request. A hand-written request is a near copy when it equals a training request, or when at
least three quarters of its word 4-grams occur in the training requests (a sentence with a word
or two changed; shorter requests share most 4-grams of everyday wording, so half is too strict:
models/README.md gives the spread)."""

from __future__ import annotations

import re

import pytest

from world import conversation_sets, conversations, entities

WORD = re.compile(r"<v>|[a-z0-9']+|[?!.,:;$/+=()-]")
N, NEAR = 4, 0.75
VOCABULARY = (*entities.COLORS, *entities.STYLES, *map(entities.plural, entities.STYLES), *entities.UNKNOWN_STYLES,
              *entities.DESCRIPTIONS)


def _values(slots: dict) -> set[str]:
    out = set()
    for key, value in slots.items():
        if isinstance(value, str) and key not in ("missing", "asked", "which", "intent", "wording", "label"):
            out.add(value)
            if key == "name":
                out.update(value.split())
    return out


def masked(text: str, values: set[str]) -> list[str]:
    """The request's words with every value (and the shop's vocabulary, and numbers) as <v>."""
    for value in sorted(values | set(VOCABULARY), key=len, reverse=True):
        if value:
            text = re.sub(r"(?<![A-Za-z0-9])" + re.escape(value) + r"(?![A-Za-z0-9])", " <v> ", text,
                          flags=re.IGNORECASE)
    text = re.sub(r"\d+", " <v> ", text)
    return WORD.findall(text.lower())


def grams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + N]) for i in range(len(words) - N + 1)}


def requests_of(conversations) -> list[list[str]]:
    return [masked(t["instruction"], _values(t["slots"])) for c in conversations for t in c["turns"]]


def near_copies(hand: list[list[str]], trained: list[list[str]]) -> list[str]:
    seen_grams = set().union(*(grams(w) for w in trained))
    seen_whole = {tuple(w) for w in trained}
    out = []
    for words in hand:
        mine = grams(words)
        if tuple(words) in seen_whole or (mine and len(mine & seen_grams) >= NEAR * len(mine)):
            out.append(" ".join(words))
    return out


def _hand():
    return requests_of(conversation_sets.load_conversations(conversation_sets.HANDWRITTEN_PATH))


@pytest.mark.slow
@pytest.mark.timeout(1800)     # drawing 20,000 conversations takes ~2 min on a quiet 2-core CPU, far more on a busy one
def test_no_hand_written_request_nor_a_near_copy_is_in_20000_training_conversations():
    trained = requests_of(conversations.generate("train", 20000, seed=0, phrasing="train"))
    assert near_copies(_hand(), trained) == []


def test_the_check_finds_copies_and_near_copies():
    """Training requests themselves are caught, and so is a hand-written request once the corpus
    holds it with other values and a word more; the hand-written set against a small corpus is not."""
    trained = requests_of(conversations.generate("train", 300, seed=1, phrasing="train"))
    assert len(near_copies(trained[:50], trained)) == 50
    hand = _hand()
    longest = max(hand, key=len)
    assert near_copies([longest], trained + [longest + ["please"]]) == [" ".join(longest)]
    assert near_copies([longest], trained + [longest[:-2]]) == [" ".join(longest)]   # most 4-grams kept
    assert near_copies(hand, trained) == []
