"""Corpus v16's training wording (issue 49): requests that leave out what their tool needs and the
detail given afterwards (world/asking.py), and everyday single requests (world/casual.py).
Both reach the grammar's `train` wording only, and neither moves a committed set."""

import random
import re
from collections import Counter

import pytest

from world import asking, casual, conversations, grammar, phrasebook
from world.tasks import AGENT_INTENTS, OUTSIDE_INTENTS, generate_tasks

SLOT = re.compile(r"\{(\w+)\}")


def _slots(pattern: str) -> set[str]:
    return set(SLOT.findall(pattern))


def test_an_ask_never_names_what_is_missing_and_a_supply_names_it():
    assert set(asking.ASK) == set(asking.SUPPLY) == set(conversations.MISSING)
    for asked, (_, _, left_out) in conversations.MISSING.items():
        for pattern in asking.ASK[asked]:
            assert not _slots(pattern) & set(left_out), (asked, pattern)
        for pattern in asking.SUPPLY[asked]:
            named = _slots(pattern) - {"details"}
            named |= {"name", "email", "address"} if "details" in _slots(pattern) else set()
            assert named & set(left_out), (asked, pattern)
            assert not named - set(left_out) - {"customer_id"}, (asked, pattern)   # nothing else


@pytest.fixture(scope="module")
def train_draw():
    return conversations.generate("train", 1200, seed=4, phrasing="train")


def test_training_conversations_ask_for_what_is_missing_and_use_it_when_given(train_draw):
    turns = [(c, k, t) for c in train_draw for k, t in enumerate(c["turns"])]
    asks = [(c, k, t) for c, k, t in turns if t["intent"] == "ask_missing"]
    assert {t["slots"]["asked"] for _, _, t in asks} == set(conversations.MISSING)
    for _, _, turn in asks:      # no tool: the answer asks for the detail, which the words leave out
        assert [a["name"] for a in turn["gold_actions"]] == ["finish"]
        assert turn["outputs"] == conversations.MISSING[turn["slots"]["asked"]][1]
        for key in conversations.MISSING[turn["slots"]["asked"]][2]:
            value = turn["slots"][key]
            if isinstance(value, str):
                assert not re.search(rf"(?<!\w){re.escape(value)}(?!\w)", turn["instruction"]), turn
    supplied = [(c, k, t) for c, k, t in turns if t["intent"] == "follow_supply"]
    assert len(supplied) > len(asks) / 2
    for conversation, k, turn in supplied:     # the request runs now, as its own words would have run it
        assert conversation["turns"][k - 1]["intent"] == "ask_missing"
        assert turn["slots"]["asked"] == conversation["turns"][k - 1]["slots"]["asked"]
        assert len(turn["gold_actions"]) > 1
    frames, words = grammar.heldout_matcher(), grammar.heldout_word_matcher()
    said = [t["instruction"] for _, _, t in asks + supplied]
    assert [s for s in said if frames.search(s) or words.search(s)] == []


@pytest.mark.parametrize("phrasing", ["template", "heldout"])
def test_other_wordings_never_ask_nor_supply(phrasing):
    drawn = conversations.generate("heldout", 150, seed=4, phrasing=phrasing)
    assert not {t["intent"] for c in drawn for t in c["turns"]} & {"ask_missing", "follow_supply"}


def test_everyday_patterns_use_the_grammars_parts_and_no_held_out_frame_or_word():
    assert set(casual.CASUAL) - {"find_invoices_all"} <= set(phrasebook.FRAMES)
    assert set(casual.OUTSIDE) == set(phrasebook.OUTSIDE_FRAMES)
    tables = (casual.CASUAL, casual.OUTSIDE, asking.ASK, asking.SUPPLY)
    patterns = [p for table in tables for ps in table.values() for p in ps]
    frames, words = grammar.heldout_matcher(), grammar.heldout_word_matcher()
    for pattern in patterns:
        assert grammar.families_in(pattern) <= set(phrasebook.WORDS), pattern
        assert not words.search(pattern), pattern
    tasks = generate_tasks("train", 40 * len(AGENT_INTENTS), 6, list(AGENT_INTENTS + OUTSIDE_INTENTS), "train")
    everyday = [t["instruction"] for t in tasks if ".casual." in t["phrasing"]["frame"]]
    assert len(everyday) > 100
    assert [t for t in everyday if frames.search(t) or words.search(t)] == []


def test_only_the_training_wording_draws_everyday_frames_and_all_invoices_only_without_a_status():
    shown = Counter()
    for phrasing in ("train", "heldout", "words"):
        for task in generate_tasks("train", 600, 7, ["office_find_invoices", "shop_add", "outside_about"], phrasing):
            frame = task["phrasing"]["frame"]
            shown[phrasing, ".casual." in frame] += 1
            if frame.startswith("find_invoices.casual."):
                every = int(frame.rsplit(".", 1)[1]) >= len(casual.CASUAL["find_invoices"])
                assert not every or task["slots"]["status"] is None, task["instruction"]
    assert shown["train", True] > 100
    assert shown["heldout", True] == shown["words", True] == 0


def test_an_everyday_wording_leaves_the_random_stream_as_the_frames_left_it(monkeypatch):
    """The committed hand-written set draws scenarios after a discarded training wording: the
    stream after a request must not depend on whether its wording was everyday or a frame's."""
    slots = {"name": "Ana Diaz", "customer_id": "C123", "status": None, "which": ""}
    rngs = [random.Random(seed) for seed in range(80)]
    texts = [grammar.instruction("office_find_invoices", slots, "train", rng)[1] for rng in rngs]
    assert any(".casual." in frame for frame in texts)
    monkeypatch.setattr(casual, "frames_for", lambda group, slots: ())
    frames_only = [random.Random(seed) for seed in range(80)]
    for rng in frames_only:
        grammar.instruction("office_find_invoices", slots, "train", rng)
    assert [r.getstate() for r in rngs] == [r.getstate() for r in frames_only]
