"""training/corpus.py with the instruction grammar (--phrasing train): two-goal and
outside-the-world transcripts, and no held-out frame, synonym or value in 20,000 training
transcripts."""

import json
import re
from collections import Counter

import pytest

from tests.training.ngrams import TOKEN, ngrams
from training.corpus import corpus_lines, default_intents, main
from world import entities, grammar
from world.format import assistant_spans, parse_call, render_chat
from world.tasks import EXTRA_INTENTS, OUTSIDE_INTENTS, PHRASING_INTENTS, TWO_GOAL_INTENTS


def _heldout_values():
    """Every held-out entity value, the outside-the-world topics included."""
    values = {kind: v for kind, v in entities.heldout_values().items() if kind != "combo"}
    values.update({f"topic:{kind}": grammar.topic_pool(kind, "heldout") for kind in grammar.TOPICS})
    return values


def _user_turns(records):
    return [m["content"] for r in records for m in r["messages"] if m["role"] == "user"]


def _leaks(records):
    """(held-out frames in user turns, held-out words anywhere, held-out values anywhere)."""
    frames, words = grammar.heldout_matcher(), grammar.heldout_word_matcher()
    frame_hits = [t for t in _user_turns(records) if frames.search(t)]
    word_hits = [m.group() for r in records for m in words.finditer(r["text"])]
    grams = ngrams(r["text"] for r in records)
    value_hits = [(kind, v) for kind, vs in _heldout_values().items()
                  for v in vs if " ".join(TOKEN.findall(v)) in grams]
    return frame_hits, word_hits, value_hits


@pytest.fixture(scope="module")
def corpus_20000():
    """Generated once for the module (~1-2 min on two busy cores)."""
    return list(corpus_lines("train", 20000, seed=0, phrasing="train"))


@pytest.mark.slow
def test_no_heldout_frame_word_or_value_in_20000_training_transcripts(corpus_20000):
    records = corpus_20000
    assert Counter(r["intent"] for r in records).keys() == set(default_intents("train"))
    frame_hits, word_hits, value_hits = _leaks(records)
    assert frame_hits == [] and word_hits == [] and value_hits == []
    heldout_combos = {tuple(c.split("|")) for c in entities.pool("combo", "heldout")}
    seen = {(m["color"], m["size"]) for r in records
            for m in re.finditer(r'"color":"(?P<color>\w+)","size":"(?P<size>\w+)"', r["text"])}
    assert seen and not seen & heldout_combos


@pytest.mark.slow
def test_the_leak_checks_see_a_leak():
    """A held-out corpus in held-out wording trips all three checks."""
    held = list(corpus_lines("heldout", 300, seed=0, phrasing="heldout"))
    frame_hits, _, value_hits = _leaks(held)
    assert len(frame_hits) > 200 and {k for k, _ in value_hits} >= {"name", "topic:city"}
    _, word_hits, _ = _leaks(list(corpus_lines("heldout", 100, seed=0, phrasing="words")))
    assert len(word_hits) > 50


def test_grammar_corpus_has_every_kind_of_transcript():
    records = list(corpus_lines("train", 3 * len(default_intents("train")), seed=4, phrasing="train"))
    intents = Counter(r["intent"] for r in records)
    assert set(intents) == set(PHRASING_INTENTS) | {"doc_resume", "doc_html"} | set(EXTRA_INTENTS)
    for r in records:
        assert r["text"] == render_chat(r["messages"], add_generation_prompt=False)
        if r["intent"] in OUTSIDE_INTENTS:     # one finish call, nothing else
            spans = assistant_spans(r["text"])
            assert len(spans) == 1 and parse_call(r["text"][slice(*spans[0])]).name == "finish"
        if r["intent"] in TWO_GOAL_INTENTS:
            assert len(assistant_spans(r["text"])) >= 3
        assert len(r["text"]) < 1800, "a transcript stays compact"


def test_cli_writes_a_grammar_corpus_and_refuses_heldout_wording_for_training(tmp_path, capsys):
    out = tmp_path / "train.jsonl"
    assert main(["--split", "train", "--phrasing", "train", "--n", "30", "--seed", "2", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 30 and {r["intent"] for r in lines} & set(TWO_GOAL_INTENTS + OUTSIDE_INTENTS)
    for phrasing in ("heldout", "words"):
        with pytest.raises(SystemExit):
            main(["--split", "train", "--phrasing", phrasing, "--n", "3", "--out", str(out)])
        assert "held out" in capsys.readouterr().err
    assert main(["--split", "heldout", "--phrasing", "heldout", "--n", "5", "--out", str(out),
                 "--intents", "both_add_total"]) == 0
    assert {json.loads(line)["intent"] for line in out.read_text().splitlines()} == {"both_add_total"}
    # the default stays the template corpus the shipped twins trained on
    assert main(["--split", "train", "--n", "5", "--seed", "1", "--out", str(out)]) == 0
    assert all("-train-train-" not in json.loads(line)["id"] for line in out.read_text().splitlines())


def test_training_eval_can_choose_checkpoints_on_phrasing_validation_tasks(monkeypatch):
    """training.train --agent-task-set phrasing: validation tasks in held-out wording, no benchmark task."""
    import world.agent
    from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
    from training.evaluate import agent_eval
    from world.task_sets import PHRASING_PATH, load_heldout_tasks

    seen = []

    class Done:
        success, nfe = True, 1

    monkeypatch.setattr(world.agent, "run_episode", lambda backend, task, cfg: seen.append((task, cfg)) or Done())
    report = agent_eval(tiny_sprout(causal=True), tiny_tokenizer(), "ar", 30, "phrasing")
    tasks = [t for t, _ in seen]
    assert report["agent_tasks"] == 30 and all(t["phrasing"]["split"] == "heldout" for t in tasks)
    assert {t["intent"] for t in tasks} & set(OUTSIDE_INTENTS) and seen[0][1].gen_length >= 96
    assert not {t["id"] for t in tasks} & {t["id"] for t in load_heldout_tasks(PHRASING_PATH)}


def test_a_tee_share_of_the_styled_requests_asks_for_t_shirts_with_training_values_only():
    from world.tasks import STYLED_INTENTS

    plain = list(corpus_lines("train", 600, 3, phrasing="train"))
    tees = list(corpus_lines("train", 600, 3, phrasing="train", tee_share=0.25))
    assert not any(r["id"].endswith("-t-shirt") for r in plain)
    shirted = [r for r in tees if r["id"].endswith("-t-shirt")]
    styled = [r for r in tees if r["intent"] in STYLED_INTENTS]
    assert all(r["intent"] in STYLED_INTENTS for r in shirted)
    assert 0.15 * len(styled) <= len(shirted) <= 0.35 * len(styled)
    # each call searches the style's own word, whatever the request called it
    searches = [parse_call(m["content"]) for r in shirted for m in r["messages"]
                if m["role"] == "assistant" and '"search_products"' in m["content"]]
    assert searches and all(call.arguments["query"] == "t-shirt" for call in searches)
    # the rows that are not T-shirts are the plain corpus's rows
    assert [r for r in tees if not r["id"].endswith("-t-shirt")] == [r for r in plain if r["id"] not in
                                                                    {s["id"].removesuffix("-t-shirt") for s in shirted}]
    assert _leaks(shirted) == ([], [], [])
