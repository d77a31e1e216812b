"""world/conversations.py: conversations of 1 to 6 requests whose follow-ups lean on the
earlier turns, the oracle that answers them from the history, and the committed benchmark."""

import re
from collections import Counter

import pytest

from engine.trace import GenerationConfig
from world import conversation_sets, conversations, followups
from world.agent import run_conversation
from world.format import render_call
from world.grader import replay
from world.oracle import OracleModel
from world.start import world_for
from world.task_sets import write_task_list

CONFIG = GenerationConfig()


def _oracle_runs(drawn):
    return [run_conversation(None, c, CONFIG, system=None, generate_for=OracleModel) for c in drawn]


@pytest.mark.parametrize("split,phrasing", [("train", "train"), ("heldout", "heldout")], ids=["train", "heldout"])
def test_the_oracle_answers_every_request_of_300_conversations(split, phrasing):
    drawn = conversations.generate(split, 300, seed=11, phrasing=phrasing)
    runs = _oracle_runs(drawn)
    failed = [(t.task_id, t.reason) for ran in runs for t in ran.requests if not t.success]
    assert failed == [] and all(ran.success for ran in runs)
    intents = Counter(t["intent"] for c in drawn for t in c["turns"])
    assert set(followups.FOLLOW_INTENTS) <= set(intents), "every kind of follow-up is drawn"
    assert sum(intents[i] for i in followups.FOLLOW_INTENTS) > 0.25 * sum(intents.values())
    lengths = Counter(len(c["turns"]) for c in drawn)
    assert set(lengths) == set(range(1, 7))
    assert max(conversations.count_tokens(conversations.conversation_messages(c)) for c in drawn) \
        <= conversations.MAX_TOKENS


def test_a_follow_up_needs_the_history_its_answer_comes_from():
    """"Now invoice her": the customer id is in no word of the request, only in an earlier tool
    response; "what do those add up to?": the amounts come from an earlier find_invoices."""
    drawn = conversations.generate("train", 200, seed=3)
    checked = Counter()
    for c in drawn:
        chat = render_chat_text(c)
        for k, turn in enumerate(c["turns"]):
            if turn["intent"] == "follow_invoice":
                customer = turn["gold_actions"][0]["arguments"]["customer_id"]
                assert customer not in turn["instruction"] and customer in chat.split(turn["instruction"])[0]
                checked["invoice"] += 1
            if turn["intent"] == "follow_sum_those":
                earlier = c["turns"][k - 1]["gold_actions"]
                assert earlier[0]["name"] in ("find_invoices", "get_customer")
                amounts = turn["gold_actions"][0]["arguments"]["amounts"]
                assert all(str(a) not in turn["instruction"] for a in amounts)
                checked["sum"] += 1
    assert checked["invoice"] and checked["sum"]


def render_chat_text(conversation):
    return "\n".join(m["content"] for m in conversations.conversation_messages(conversation))


def test_a_model_that_ignores_the_history_fails_the_follow_ups_only():
    """The oracle, except that a follow-up is answered as if it were the first request: it gives up."""
    drawn = [c for c in conversations.generate("heldout", 40, seed=5, phrasing="heldout", turns=(2, 6))
                     if any(t["intent"].startswith("follow_") for t in c["turns"])]

    def forgetful(task):
        if task["intent"].startswith("follow_"):
            return lambda messages: render_call("finish", {"answer": "Please give more details."})
        return OracleModel(task)

    runs = [run_conversation(None, c, CONFIG, system=None, generate_for=forgetful) for c in drawn]
    for ran in runs:
        assert not ran.success
        for t in ran.requests:
            assert t.success == (not _is_follow(t.task_id, drawn))


def _is_follow(task_id, drawn):
    conversation_id, k = task_id.rsplit(".", 1)
    turn = next(c for c in drawn if c["id"] == conversation_id)["turns"][int(k)]
    return turn["intent"].startswith("follow_")


def test_each_request_starts_where_the_gold_of_the_earlier_ones_left_the_world():
    conversation = next(c for c in conversations.generate("train", 50, seed=2) if len(c["turns"]) >= 4)
    world = world_for({"split": conversation["split"], "world": conversation["world"]})
    for k, turn in enumerate(conversation["turns"]):
        task = conversations.turn_task(conversation, k)
        assert world_for(task).end_state() == world.end_state()
        world = replay(task, turn["gold_actions"])


def test_draws_are_deterministic_and_splits_keep_their_wording():
    assert conversations.generate("train", 20, seed=1) == conversations.generate("train", 20, seed=1)
    held = {f for frames in followups.FRAMES.values() for f in frames[1]}
    trained = {f for frames in followups.FRAMES.values() for f in frames[0]}
    trained |= {f for frames in followups.WIDER.values() for f in frames}
    assert not held & trained


def _runs(frame: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\{\w+\}|[a-z']+", frame.lower())          # a slot counts as a word
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_no_training_follow_up_shares_five_words_in_a_row_with_a_held_out_one():
    """Held-out follow-ups are sentence shapes never trained on: not only never the same frame,
    never a long stretch of one either (short runs such as "how much is" are everyday English)."""
    held = [(f, _runs(f, 5)) for frames in followups.FRAMES.values() for f in frames[1]]
    trained = [f for frames in followups.FRAMES.values() for f in frames[0]]
    trained += [f for frames in followups.WIDER.values() for f in frames]
    shared = [(f, h) for f in trained for h, runs in held if _runs(f, 5) & runs]
    assert not shared, shared
    assert set(followups.WIDER) == set(followups.FRAMES)                     # every lesson widened


def test_only_the_training_wording_draws_the_wider_frames(monkeypatch):
    # marked copies of the training frames stand in for the wider ones: the same slots, a known start
    marked = {intent: tuple(f"Zq {frame}" for frame in frames[0]) for intent, frames in followups.FRAMES.items()}
    monkeypatch.setattr(followups, "WIDER", marked)
    requests = {phrasing: [t["instruction"] for seed in range(200)
                           for t in (conversations.draw("train", seed, phrasing) or {"turns": []})["turns"]]
                for phrasing in ("train", "template")}
    assert sum(r.startswith("Zq ") for r in requests["train"]) > 20
    assert not any(r.startswith("Zq ") for r in requests["template"])


def test_the_committed_benchmark_is_what_make_conversation_set_draws(tmp_path):
    committed = conversation_sets.load_conversations()
    assert len(committed) == conversation_sets.CONVERSATIONS_SIZE
    assert len({c["id"] for c in committed}) == len(committed)
    assert all(2 <= len(c["turns"]) <= 6 and c["split"] == "heldout" for c in committed)
    six = committed[0]
    assert [t["intent"] for t in six["turns"]] == conversation_sets.SIX_OFFICE
    assert {t["intent"] for c in committed for t in c["turns"]} >= set(followups.FOLLOW_INTENTS)
    path = tmp_path / "again.json"
    write_task_list(conversation_sets.make_conversation_set(), path)
    assert path.read_text() == conversation_sets.CONVERSATIONS_PATH.read_text()
    assert all(r.success for r in _oracle_runs(committed))
    validation = conversation_sets.validation_conversations(10)
    assert len(validation) == 10 and not {c["id"] for c in validation} & {c["id"] for c in committed}


def test_the_hand_written_set_is_built_from_its_source_and_the_oracle_answers_all_of_it(tmp_path):
    from world import handwritten

    committed = conversation_sets.load_conversations(conversation_sets.HANDWRITTEN_PATH)
    requests = [t for c in committed for t in c["turns"]]
    assert len(requests) >= 400 and len({t["instruction"] for t in requests}) == len(requests)
    assert sum(len(c["turns"]) > 1 for c in committed) >= 50                      # follow-ups in conversations
    intents = {t["intent"] for t in requests}
    assert intents >= (set(conversations.FRESH_INTENTS) | set(followups.FOLLOW_INTENTS)
                       | {"ask_missing", "follow_supply"})
    assert {t["slots"]["asked"] for t in requests if t["intent"] == "ask_missing"} == set(conversations.MISSING)
    path = tmp_path / "again.json"
    write_task_list(handwritten.make_handwritten_set(), path)
    assert path.read_text() == conversation_sets.HANDWRITTEN_PATH.read_text()
    runs = _oracle_runs(committed)
    assert [t.task_id for ran in runs for t in ran.requests if not t.success] == []


def test_training_conversations_ask_about_t_shirts_and_held_out_ones_never_roll_for_them():
    styles = {split: Counter(t["slots"].get("style") for c in conversations.generate(split, 300, seed=3)
                             for t in c["turns"] if t["intent"] in conversations.SHOP_SCENARIOS)
              for split in ("train", "heldout")}
    styled = sum(styles["train"].values())
    assert 0.03 * styled < styles["train"]["t-shirt"] < 0.2 * styled, styles["train"]
    assert styles["heldout"]["t-shirt"] == 0
