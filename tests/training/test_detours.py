"""training/detours.py: a wrong add_to_cart that mixes two rows' ids, the shop's error, then
the right call; the wrong call stays out of the loss."""

import random

from tests.sprout.helpers import tiny_tokenizer
from training.corpus import corpus_lines
from training.data import encode_texts
from training.detours import detour, mixed_id
from world import entities
from world.format import assistant_spans, parse_call
from world.grader import replay
from world.tasks import build_task


def test_mixed_id_takes_each_character_from_one_of_the_two_ids():
    rng = random.Random(0)
    for _ in range(50):
        mixed = mixed_id("P2H6", "P4C1", lambda pid: pid not in {"P2H6", "P4C1"}, rng)
        assert mixed not in {"P2H6", "P4C1", None}
        assert all(c in (a, b) for c, a, b in zip(mixed, "P2H6", "P4C1")) and len(mixed) == 4
    assert mixed_id("P2H6", "P2H7", lambda pid: True, rng) is None    # one differing place: no proper mix
    assert mixed_id("P2H6", "P4C16", lambda pid: True, rng) is None
    assert mixed_id("P2H6", "P4C1", lambda pid: pid == "P4H1", rng) == "P4H1"
    assert mixed_id("P2H6", "P4C1", lambda pid: False, rng) is None


def test_detour_goes_before_the_first_add_and_changes_nothing_in_the_end():
    for seed in range(20):
        task, steps, _ = build_task("shop_buy", "train", seed)
        new, wrong = detour(task, steps, random.Random(seed))
        if wrong is None:
            continue
        first_add = next(i for i, (c, _) in enumerate(steps) if c.name == "add_to_cart")
        assert wrong == first_add and len(new) == len(steps) + 1
        bad, reply = new[wrong]
        right = steps[first_add][0]
        assert bad.name == "add_to_cart" and reply == {"error": "unknown product"}
        assert bad.arguments["product_id"] != right.arguments["product_id"]
        assert entities.split_of("product", bad.arguments["product_id"]) == "train"   # no held-out id leaks in
        assert {k: v for k, v in bad.arguments.items() if k != "product_id"} == {
            k: v for k, v in right.arguments.items() if k != "product_id"}
        with_detour = replay(task, [c.to_dict() for c, _ in new]).end_state()
        assert with_detour == replay(task, task["gold_actions"]).end_state()
        return
    raise AssertionError("no shop_buy task in 20 took a detour")


def test_no_detour_without_an_add_to_cart():
    task, steps, _ = build_task("shop_find", "train", 1)
    assert detour(task, steps, random.Random(1)) == (steps, None)


def test_corpus_marks_the_wrong_call_and_training_skips_it():
    records = list(corpus_lines("train", 60, seed=5, intents=["shop_add"], detour_share=1.0))
    detoured = [r for r in records if "untrained_turns" in r]
    assert len(detoured) > 40                                     # nearly every shop_add can take one
    assert not any("untrained_turns" in r for r in corpus_lines("train", 20, seed=5, intents=["shop_add"],
                                                                 detour_share=0.0))
    record = detoured[0]
    (turn,) = record["untrained_turns"]
    text = record["text"]
    spans = assistant_spans(text)
    wrong_text = text[spans[turn][0]:spans[turn][1]]
    assert parse_call(wrong_text.split("<|eos|>")[0]).name == "add_to_cart"
    tok = tiny_tokenizer()
    trained = encode_texts([text], tok, [record["untrained_turns"]])[0]
    everything = encode_texts([text], tok)[0]
    assert len(trained.spans) == len(everything.spans) - 1
    assert everything.spans[turn] not in trained.spans
