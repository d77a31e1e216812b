"""Values of a tool call that the model read nowhere (world/provenance.py): what
"appears" means, case by case; the oracle's calls (every value copied right) are never marked;
the same calls with one value changed always are."""

from __future__ import annotations

import pytest

from world import grammar
from world.provenance import Known, Unseen, describe, numbers_in, unseen_in_call, unseen_values
from world.tasks import AGENT_INTENTS, PHRASING_INTENTS, build_task, task_seeds

REQUEST = "Buy a blue dress in size L for Mia Park, mia@example.com, 12 Oak Street."


def unseen(arguments, *sources, name="checkout_guest"):
    return unseen_in_call({"name": name, "arguments": arguments}, list(sources))


def test_the_miscopied_email_is_marked_and_the_copied_ones_are_not():
    marked = unseen({"name": "Mia Park", "email": "mia.exam@post.io", "address": "12 Oak Street"}, REQUEST)
    assert marked == [Unseen("email", "mia.exam@post.io")]
    assert unseen({"name": "Mia Park", "email": "mia@example.com", "address": "12 Oak Street"}, REQUEST) == []


@pytest.mark.parametrize(("value", "text", "seen"), [
    ("MIA@Example.COM", "write to mia@example.com please", True),          # case folds
    ("12  Oak\tStreet", "ship to 12 Oak\nStreet", True),                    # whitespace collapses
    ("mia@example.co", "mia@example.com", False),                           # a prefix is not the value
    ("L", "size L", True),
    ("L", "Please", False),                                                 # no letter glued on
    ("jacket", "two navy jackets", True),                                   # a word in its plural
    ("dress", "three dresses", True),
    ("P5K7", "P5K7s", False),                                               # an id has no plural
    ("Mia Park", "I'm Mia\n Park.", True),
    ("Mia Parks", "Mia Park", False),
    ("", "anything", True),                                                 # nothing to copy
], ids=lambda v: repr(v)[:24])
def test_text_appears(value, text, seen):
    assert (unseen_values({"v": value}, Known.of([text])) == []) is seen


@pytest.mark.parametrize(("value", "text", "seen"), [
    (1250.5, "charge $1,250.50 for repairs", True),
    (1250, "charge $1,250.50", False),
    (923, "Sum 923,984", True),                                             # a list without spaces
    (984.0, "923 and 984.", True),
    (3, "dresses x3", True),
    (20, "the product P20", False),                                         # digits inside an id
    (2, "two navy jackets", True),
    (2, "someone", False),                                                  # a number word stands alone
    (1, "a blue dress", True),                                              # "a" is one
    (0.3, "0.30", True),
    (0.1 + 0.2, "0.3", True),                                               # to a tolerance
    ("3", "x3", True),                                                      # a number written as text
    (5, "2018-2021", False),
    (2021, "2018-2021", True),
], ids=lambda v: repr(v)[:24])
def test_number_appears(value, text, seen):
    assert (unseen_values({"v": value}, Known.of([text])) == []) is seen


def test_numbers_in_reads_digits_groups_and_words():
    assert sorted(numbers_in("pay $1,250.50 and 7, plus two x3 P20")) == [1, 2, 3, 7, 250.5, 1250.5]


def test_ids_and_numbers_from_earlier_tool_responses_are_known():
    hits = [{"color": "blue", "size": "L", "id": "P5K7", "price": 49}]
    assert unseen({"product_id": "P5K7", "size": "L", "quantity": 1}, REQUEST, hits, name="add_to_cart") == []
    assert unseen({"product_id": "P5K8", "size": "L", "quantity": 1}, REQUEST, hits,
                  name="add_to_cart") == [Unseen("product_id", "P5K8")]
    assert unseen({"amounts": [49, 50]}, "add them", hits, name="sum_amounts") == [Unseen("amounts[1]", 50)]


def test_true_false_and_null_are_never_marked():
    assert unseen_values({"a": True, "b": False, "c": None}, Known.of([])) == []


def test_a_choice_from_the_schema_is_marked_only_against_another_named_choice():
    owes = "How much does Uma Ortiz still owe?"
    assert unseen({"customer_id": "C1", "status": "unpaid"}, owes, {"id": "C1"}, name="find_invoices") == []
    asked_navy = "Find a navy jacket in size XS."
    assert unseen({"query": "jacket", "color": "blue", "size": "XS"}, asked_navy,
                  name="search_products") == [Unseen("color", "blue")]
    assert unseen({"query": "jacket", "color": "navy", "size": "XS"}, asked_navy, name="search_products") == []


def test_finish_and_unparsed_calls_are_not_checked():
    assert unseen_in_call({"name": "finish", "arguments": {"answer": "Done: order O77."}}, ["hi"]) == []
    assert unseen_in_call(None, ["hi"]) == []
    assert unseen_in_call({"name": "get_customer", "arguments": "Cleo"}, ["hi"]) == []


def test_the_sentence_names_each_value():
    sentence = describe([Unseen("email", "mia.exam@post.io"), Unseen("amounts[1]", 50)])
    assert "email = mia.exam@post.io" in sentence and "amounts[1] = 50" in sentence
    assert "appear nowhere" in sentence


def gold_trajectories(per_phrasing: int = 40):
    """(instruction, [(call, response)]) of the oracle for every phrasing, both splits."""
    for phrasing in grammar.PHRASINGS:
        intents = AGENT_INTENTS if phrasing == "template" else PHRASING_INTENTS
        for split in ("train", "heldout"):
            for intent, seed in task_seeds(split, per_phrasing, 7, intents):
                task, steps, _ = build_task(intent, split, seed, phrasing)
                yield task["instruction"], steps


def test_the_oracles_calls_are_never_marked():
    checked = 0
    for instruction, steps in gold_trajectories():
        known: list = [instruction]
        for call, response in steps:
            assert unseen_in_call(call.to_dict(), known) == [], (instruction, call)
            known.append(response)
            checked += 1
    assert checked > 300


def changed(value):
    """The value with one character (or its amount) changed, as a miscopy would."""
    if isinstance(value, (int, float)):
        return value + 7
    last = len(value) - 1
    return value[:last] + ("q" if value[last] != "q" else "z")


def test_the_oracles_calls_with_one_value_changed_are_marked():
    marked = 0
    for instruction, steps in gold_trajectories(per_phrasing=15):
        known: list = [instruction]
        for call, response in steps:
            arguments = call.to_dict()["arguments"]
            for key, value in arguments.items():
                if key in ("color", "size", "status") or not isinstance(value, (str, int, float)):
                    continue                       # a choice from the schema's list: its own test above
                wrong = changed(value)
                if not unseen_values({"v": wrong}, Known.of(known)):
                    continue                       # the changed value happens to be written somewhere
                found = unseen_in_call({"name": call.name, "arguments": {**arguments, key: wrong}}, known)
                assert [u.path for u in found] == [key], (instruction, key, wrong)
                marked += 1
            known.append(response)
    assert marked > 100
