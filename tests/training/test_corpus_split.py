"""training/corpus.py and the split: held-out values never reach a training corpus;
the committed held-out benchmark set is balanced, held-out only, and solvable."""

import json
import random
import re
import string
from collections import Counter

import pytest

from engine.trace import GenerationConfig
from tests.training.ngrams import TOKEN, ngrams
from tests.world.heldout_values import assert_heldout_values
from training.corpus import corpus_lines, main
from world import entities, grammar
from world.agent import run_episode
from world.format import assistant_spans, parse_call, render_chat
from world.oracle import OracleModel, solve
from world.start import world_for
from world.task_sets import HELDOUT_SIZE, load_heldout_tasks, validation_tasks
from world.tasks import AGENT_INTENTS, ALL_INTENTS, EXTRA_INTENTS, UNKNOWN_INTENT, build_task

PERSON_ARG = re.compile(r'"name":"([A-Z][a-z]+ [A-Z][a-z]+)"')     # a person's name in a call (not a tool's)


def _combos(record):
    """(colour, size) pairs in every call and every tool response of a transcript."""
    found = []
    for m in record["messages"]:
        if m["role"] == "assistant" and m["content"].startswith("<tool_call>"):
            items = [json.loads(m["content"][len("<tool_call>"):-len("</tool_call>")])["arguments"]]
        elif m["role"] == "tool":
            body = json.loads(m["content"])
            items = body if isinstance(body, list) else body.get("items", [body])
        else:
            continue
        found += [(i["color"], i["size"]) for i in items if isinstance(i, dict) and "color" in i and "size" in i]
    return found


@pytest.mark.slow
def test_heldout_values_never_occur_in_20000_training_transcripts():
    records = list(corpus_lines("train", 20000, seed=0))
    assert Counter(r["intent"] for r in records).keys() == set(ALL_INTENTS) | set(EXTRA_INTENTS)
    grams = ngrams(r["text"] for r in records)
    leaks = [(kind, v) for kind, values in entities.heldout_values().items() if kind != "combo"
             for v in values if " ".join(TOKEN.findall(v)) in grams]
    assert leaks == []
    heldout_combos = {tuple(c.split("|")) for c in entities.pool("combo", "heldout")}
    assert not {c for r in records for c in _combos(r)} & heldout_combos
    # and the check itself can see a leak: a held-out corpus is full of held-out values
    held = list(corpus_lines("heldout", 200, seed=0))
    held_grams = ngrams(r["text"] for r in held)
    assert any(" ".join(TOKEN.findall(v)) in held_grams for v in entities.heldout_values()["name"])
    assert {c for r in held for c in _combos(r)} & heldout_combos


def test_training_names_and_addresses_are_mostly_one_offs():
    """Made-up values and train-only streets make most training addresses and many names one-offs,
    which only copying gets right; none is a held-out value, and none reaches a held-out world."""
    assert not {entities.street_of(a) for a in entities.pool("address", "heldout")} & set(entities.TRAIN_ONLY_STREETS)
    records = list(corpus_lines("train", 400, seed=1))
    addresses = [m.group(1) for r in records for m in re.finditer(r'"address":"([^"]+)"', r["text"])]
    names = [m.group(1) for r in records for m in PERSON_ARG.finditer(r["text"])]
    assert len(addresses) > 20 and len(names) > 50
    shared = [a for a in addresses if entities.street_of(a) in entities.STREETS]
    assert len(shared) < len(addresses) / 3
    assert len(set(addresses)) > 0.9 * len(addresses)
    made_up = [n for n in names if entities.is_made_up("name", n)]
    assert 0.3 * len(names) < len(made_up) < 0.7 * len(names)
    assert all(entities.split_of("name", n) == "train" for n in made_up)
    assert not set(w for n in made_up for w in n.split()) & set(entities.FIRST_NAMES + entities.LAST_NAMES)
    held = list(corpus_lines("heldout", 100, seed=1))
    assert not any(entities.is_made_up("name", m.group(1)) for r in held for m in PERSON_ARG.finditer(r["text"]))


def test_training_course_codes_are_half_made_up_and_held_out_ones_never_are():
    """A code never seen before can only be copied: about half the training codes are made up
    (consonants and a digit, the grammar's pattern), no made-up code is a subject's, and held-out
    worlds keep the subjects' codes."""
    code = re.compile(r'"course_code":"([^"]+)"')
    pattern = re.compile(grammar.SLOT_PATTERNS["course"])
    codes = [m.group(1) for r in corpus_lines("train", 600, seed=2) for m in code.finditer(r["text"])]
    assert len(codes) > 20
    made_up = [c for c in codes if entities.is_made_up("course", c)]
    assert 0.25 * len(codes) < len(made_up) < 0.75 * len(codes)
    assert all(pattern.fullmatch(c) and not set(c[:3]) & set("AEIOUY") for c in made_up)
    held = [m.group(1) for r in corpus_lines("heldout", 300, seed=2) for m in code.finditer(r["text"])]
    assert held and not any(entities.is_made_up("course", c) for c in held)
    assert all(entities.split_of("course", c) == "heldout" for c in held)


def test_training_clothes_the_shop_never_sells_are_half_made_up_and_never_a_shop_word():
    """The five held-out clothes ("tuxedo") can only be copied: half the training requests for
    clothes the shop never sells name a made-up piece (lower case, no word of the shop's), and
    held-out tasks keep the real ones."""
    styles = [build_task(UNKNOWN_INTENT, "train", seed, "train")[0]["slots"]["style"] for seed in range(300)]
    made_up = [s for s in styles if entities.is_made_up("unknown_style", s)]
    assert 0.3 * len(styles) < len(made_up) < 0.7 * len(styles)
    shop = {w for v in entities.STYLES + entities.UNKNOWN_STYLES + entities.COLORS for w in v.split()}
    assert all(s.islower() and s not in shop and entities.split_of("unknown_style", s) == "train" for s in made_up)
    held = [build_task(UNKNOWN_INTENT, "heldout", seed, "heldout")[0]["slots"]["style"] for seed in range(100)]
    assert set(held) == set(entities.pool("unknown_style", "heldout"))


def test_corpus_records_are_complete_compact_transcripts():
    records = list(corpus_lines("train", 2 * len(ALL_INTENTS), seed=3))
    for r in records:
        assert set(r) - {"untrained_turns"} == {"id", "intent", "split", "messages", "text"}
        assert r["text"] == render_chat(r["messages"], add_generation_prompt=False)
        assert "<|system|>" not in r["text"] and "<tools>" not in r["text"]
        spans = assistant_spans(r["text"])
        assert len(spans) == sum(m["role"] == "assistant" for m in r["messages"])
        if r["intent"] in AGENT_INTENTS:
            calls = [parse_call(r["text"][a:b]) for a, b in spans]
            assert all(c.render() + "<|eos|>" == r["text"][a:b] for c, (a, b) in zip(calls, spans))
            assert calls[-1].name == "finish"
        assert len(r["text"]) < 1200, "a transcript stays compact"


def test_corpus_cli_writes_jsonl(tmp_path, capsys):
    out = tmp_path / "train.jsonl"
    assert main(["--split", "train", "--n", "25", "--seed", "1", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 25 and all(r["split"] == "train" for r in lines)
    assert "chars mean" in capsys.readouterr().err
    assert main(["--split", "heldout", "--n", "3", "--seed", "1", "--out", str(out),
                 "--intents", "office_sum", "--system", "compact"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["intent"] for r in lines} == {"office_sum"} and lines[0]["text"].startswith("<|system|>")
    with pytest.raises(SystemExit):
        main(["--n", "3", "--out", str(out), "--intents", "nope"])


# -- the committed held-out benchmark set ----------------------------------------------------
HELDOUT = load_heldout_tasks()


def test_heldout_set_is_49_balanced_tasks():
    assert len(HELDOUT) == HELDOUT_SIZE == 49 and len({t["id"] for t in HELDOUT}) == 49
    counts = Counter(t["intent"] for t in HELDOUT)
    assert counts.keys() == set(AGENT_INTENTS) and max(counts.values()) - min(counts.values()) <= 1


def test_validation_tasks_are_held_out_but_not_the_benchmark():
    """Checkpoints are chosen on these, so the benchmark's tasks stay unseen."""
    tasks = validation_tasks(2 * len(AGENT_INTENTS))
    assert len(tasks) == 2 * len(AGENT_INTENTS)
    assert {t["intent"] for t in tasks} == set(AGENT_INTENTS)
    assert all(t["split"] == "heldout" for t in tasks)
    assert not {t["id"] for t in tasks} & {t["id"] for t in load_heldout_tasks()}


def test_heldout_set_uses_heldout_values_only():
    for task in HELDOUT:
        assert task["split"] == "heldout"
        world = world_for(task)
        assert_heldout_values(task, world)
        assert all(entities.split_of("name", c["name"]) == "heldout" for c in world.customers.values())
        for order in re.findall(r"\bO\d{3}\b", json.dumps(task)):
            assert entities.split_of("order", order) == "heldout"


def test_heldout_set_is_solved_by_its_gold_and_the_oracle():
    for task in HELDOUT:
        steps, final = solve(task)
        assert [c.to_dict() for c, _ in steps] + [final.to_dict()] == task["gold_actions"], task["id"]
        assert final.outputs == task["outputs"]
        assert run_episode(None, task, GenerationConfig(), generate_fn=OracleModel(task)).success


def test_heldout_document_set_is_committed_balanced_and_solvable():
    from world.task_sets import HELDOUT_DOCS_PATH, make_heldout_documents
    from world.tasks import DOC_INTENTS

    docs = load_heldout_tasks(HELDOUT_DOCS_PATH)
    assert docs == json.loads(json.dumps(make_heldout_documents()))          # the file is what the code makes
    assert Counter(t["intent"] for t in docs) == {intent: 5 for intent in DOC_INTENTS}
    for task in docs:
        assert task["split"] == "heldout"
        assert run_episode(None, task, GenerationConfig(), generate_fn=lambda _m, t=task: t["gold_output"]).success


def test_made_up_words_open_with_every_capital_letter():
    """A copied name's first letter is a token of its own; training must show each one."""
    rng = random.Random(0)
    firsts = {entities.made_up_word(rng)[0] for _ in range(3000)}
    assert firsts == set(string.ascii_uppercase)
