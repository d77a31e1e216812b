"""The row-choice probe finds the digit that picks a search row and scores it."""

import re
import types

import torch

from engine.sprout.probe import PROBE_INTENTS, main, row_choice_probe
from engine.world.corpus import corpus_lines
from tests.sprout.helpers import tiny_sprout, tiny_tokenizer


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


def test_probe_runs_both_twins_decoding_paths():
    tok = tiny_tokenizer()
    for causal in (True, False):
        report = row_choice_probe(tiny_sprout(causal=causal), tok, "train", 6, block_size=8)
        assert report["decisions"] > 0 and 0.0 <= report["accuracy"] <= 1.0 and report["nll"] > 0


def test_cli_refuses_an_unknown_folder(capsys, tmp_path):
    assert main(["--model", str(tmp_path / "nowhere")]) == 2
    assert "error:" in capsys.readouterr().err
