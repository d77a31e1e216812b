"""world: tasks, templates, the oracle (100 % under the grader) and document checkers."""

import json
import shutil
from collections import Counter

import pytest

from engine.trace import GenerationConfig
from world import entities
from world.agent import run_episode
from world.documents import check_html, check_latex
from world.grader import grade_document
from world.oracle import OracleModel
from world.tasks import AGENT_INTENTS, ALL_INTENTS, DOC_INTENTS, OUTSIDE_INTENTS, generate_tasks, make_task
from world.templates import ANSWERS, CONVERSATION_ANSWERS, INSTRUCTIONS

CONFIG = GenerationConfig()
SHOP_MULTI_STEP = {"shop_buy", "shop_out_of_stock", "office_invoice_by_name", "office_find_invoices",
                   "office_unpaid_total"}


def test_at_least_ten_intents_each_with_five_to_ten_paraphrases():
    assert len(AGENT_INTENTS) >= 10
    for key, templates in INSTRUCTIONS.items():
        assert 5 <= len(set(templates)) <= 10, key
    for intent in ALL_INTENTS:
        assert any(k.split(":")[0] == intent for k in INSTRUCTIONS), intent
    assert {k.split(":")[0] for k in ANSWERS} == set(AGENT_INTENTS + OUTSIDE_INTENTS + CONVERSATION_ANSWERS)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_oracle_scores_100_percent_on_500_tasks(split):
    tasks = generate_tasks(split, 500, seed=11)
    assert Counter(t["intent"] for t in tasks).keys() == set(AGENT_INTENTS)
    failed = []
    for task in tasks:
        transcript = run_episode(None, task, CONFIG, generate_fn=OracleModel(task))
        if not transcript.success:
            failed.append((task["id"], transcript.error_type, transcript.reason))
        assert transcript.nfe == 0 and len(transcript.steps) == len(task["gold_actions"])
    assert failed == []


def test_tasks_are_deterministic_json():
    a, b = make_task("shop_buy", "train", 3), make_task("shop_buy", "train", 3)
    assert a == b == json.loads(json.dumps(a))
    assert make_task("shop_buy", "train", 4) != a


@pytest.mark.parametrize("intent", AGENT_INTENTS)
def test_every_intent_makes_sense(intent):
    for seed in range(5):
        task = make_task(intent, "train", seed)
        names = [a["name"] for a in task["gold_actions"]]
        assert names[-1] == "finish" and "finish" not in names[:-1]
        assert task["domain"] == intent.split("_")[0] and task["instruction"].strip()
        if intent in SHOP_MULTI_STEP:
            assert len(names) >= 3
        if intent.endswith("missing_info"):
            assert names == ["finish"] and task["slots"]["missing"] in task["gold_actions"][0]["arguments"]["answer"]
            assert task["slots"].get(task["slots"]["missing"], "@@") not in task["instruction"]


def test_shop_scenarios_show_near_misses():
    for seed in range(20):
        near = make_task("shop_near_miss", "train", seed)
        assert [a["name"] for a in near["gold_actions"]] == ["search_products", "finish"]
        oos = make_task("shop_out_of_stock", "train", seed)
        adds = [a for a in oos["gold_actions"] if a["name"] == "add_to_cart"]
        assert len(adds) == 2 and adds[0]["arguments"]["product_id"] != adds[1]["arguments"]["product_id"]


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_task_values_come_from_their_split(split):
    for task in generate_tasks(split, 60, seed=5):
        s = task["slots"]
        for key, kind in (("name", "name"), ("address", "address"), ("customer_id", "customer"),
                          ("course", "course"), ("activity", "activity")):
            if key in s:
                assert entities.split_of(kind, s[key]) == split, (task["id"], key)
        if "size" in s:
            assert entities.split_of("combo", f"{s['color']}|{s['size']}") == split


# -- documents -------------------------------------------------------------------------------
@pytest.mark.parametrize("intent", DOC_INTENTS)
def test_gold_documents_pass_their_checker(intent):
    for seed in range(10):
        task = make_task(intent, "heldout", seed)
        assert grade_document(task, task["gold_output"]).success
        assert all(o in task["gold_output"] for o in task["outputs"])
        assert len(task["gold_output"]) < 900, "documents stay short"


def test_latex_checker_finds_problems():
    task = make_task("doc_resume", "train", 1)
    gold, facts = task["gold_output"], task["slots"]
    assert check_latex(gold, facts) == []
    assert any("email" in p for p in check_latex(gold.replace(facts["email"], ""), facts))
    assert "unbalanced braces" in check_latex(gold.replace("\\section*{", "\\section*"), facts)
    assert "missing \\end{document}" in check_latex(gold.replace("\\end{document}", ""), facts)
    verdict = grade_document(task, gold.replace("\\end{document}", ""))
    assert not verdict.success and verdict.error_type == "parse_error"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed here")
def test_gold_resume_compiles_with_pdflatex():
    task = make_task("doc_resume", "train", 5)
    assert check_latex(task["gold_output"], task["slots"], compile_pdf=True) == []
    assert check_latex(task["gold_output"].replace("\\begin{document}", "\\begin{documnt}\\begin{document}"),
                       task["slots"], compile_pdf=True) == ["the LaTeX does not compile"]


def test_html_checker_finds_problems():
    task = make_task("doc_html", "train", 2)
    gold, spec = task["gold_output"], task["slots"]
    assert check_html(gold, spec) == []
    assert check_html(gold.replace("<h1>", "<h2>").replace("</h1>", "</h2>"), spec) == [
        f"no <h1> {spec['heading']!r}"]
    assert any("link" in p for p in check_html(gold.replace(spec["href"], "/elsewhere"), spec))
    assert check_html("<p><<<&&", spec)  # broken markup is reported, never raised
    verdict = grade_document(task, gold.replace(spec["title"], "Other"))
    assert not verdict.success and verdict.error_type == "wrong_value"
