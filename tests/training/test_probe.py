"""The shop-decision probes find the token that picks a search row, and the one that chooses the
call after a search result, and score them."""

import re
import types

import torch

from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
from training.corpus import corpus_lines
from training.probe import CALL_INTENTS, PROBE_INTENTS, call_choice_probe, main, row_choice_probe


class AlwaysSays:
    """A causal 'model' whose next token is always one fixed token."""

    def __init__(self, token_id: int, vocab: int):
        self.config = types.SimpleNamespace(causal=True)
        self.token_id, self.vocab = token_id, vocab

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(1, ids.shape[1], self.vocab)
        logits[..., self.token_id] = 5.0
        return logits


def test_probe_scores_the_first_digit_of_each_copied_product_id():
    tok = tiny_tokenizer()
    records = list(corpus_lines("heldout", 12, 9090, intents=PROBE_INTENTS))
    digits = [d for r in records for m in r["messages"] if m["role"] == "assistant"
              for d in re.findall(r'"product_id":"P(\d)', m["content"])]
    report = row_choice_probe(AlwaysSays(tok.convert_tokens_to_ids("3"), len(tok)), tok, "heldout", 12)
    assert report["decisions"] == len(digits) > 0
    assert report["accuracy"] == digits.count("3") / len(digits)
    assert sum(report["wrong"].values()) == len(digits) - digits.count("3")


def test_call_probe_scores_the_choice_after_each_search_result_by_intent():
    tok = tiny_tokenizer()
    records = list(corpus_lines("heldout", 12, 9090, intents=CALL_INTENTS))
    want: dict[str, list[str]] = {}
    after_rows = r'<tool_response>\[\{"color".*?</tool_response>\s*<\|assistant\|><tool_call>\{"name":"(\w+)"'
    for r in records:
        want.setdefault(r["intent"], []).extend(re.findall(after_rows, r["text"]))
    add = tok.encode("add_to_cart")[0]
    report = call_choice_probe(AlwaysSays(add, len(tok)), tok, "heldout", 12)["intents"]
    assert set(report) == set(want) and {"shop_add", "shop_near_miss"} <= set(report)
    for intent, names in want.items():
        adds = sum(n == "add_to_cart" for n in names)
        assert report[intent]["decisions"] == len(names) > 0
        assert report[intent]["accuracy"] == adds / len(names)
        assert sum(report[intent]["wrong"].values()) == len(names) - adds
    assert report["shop_near_miss"]["accuracy"] == 0.0 and report["shop_add"]["accuracy"] == 1.0


def test_probes_run_both_twins_decoding_paths():
    tok = tiny_tokenizer()
    for causal in (True, False):
        report = row_choice_probe(tiny_sprout(causal=causal), tok, "train", 6, block_size=8)
        assert report["decisions"] > 0 and 0.0 <= report["accuracy"] <= 1.0 and report["nll"] > 0
        calls = call_choice_probe(tiny_sprout(causal=causal), tok, "train", 6, block_size=8)["intents"]
        assert calls and all(r["decisions"] > 0 and r["nll"] > 0 for r in calls.values())


def test_cli_refuses_an_unknown_folder(capsys, tmp_path):
    assert main(["--model", str(tmp_path / "nowhere")]) == 2
    assert "error:" in capsys.readouterr().err
