"""The committed checkpoints: small, loadable with the Auto classes, and decodable live."""

from pathlib import Path

import pytest
from transformers import AutoModel, AutoTokenizer

import sprout.modeling  # noqa: F401  (registers Sprout with the Auto classes)
from engine.cli import MASK_GLYPH, main

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize("name,causal", [("sprout-bd", False), ("sprout-ar", True)])
def test_shipped_folder_loads_with_auto_classes_and_fits_the_budget(name, causal):
    folder = MODELS / name
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size <= 25 * 2**20, f"{name} is {size / 2**20:.1f} MB; the budget is 25 MB"
    model = AutoModel.from_pretrained(folder)
    assert type(model).__name__ == "SproutModel" and model.config.causal is causal
    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.convert_tokens_to_ids("<|mask|>") == model.config.mask_token_id


def test_live_cli_shows_blocks_resolving_with_the_shipped_bd_model(capsys):
    # a fixed schedule (one token per round) so the rounds are visible however confident the
    # model is; with the threshold sampler the trained model may fill a block in one round
    code = main(["--model", str(MODELS / "sprout-bd"), "--prompt", "Check activity A536.", "--gen-length", "32",
                 "--block-size", "16", "--steps", "16", "--sampler", "low_confidence", "--device", "cpu", "--live"])
    out = capsys.readouterr().out
    assert code == 0
    rounds = [line.count(MASK_GLYPH) for line in out.splitlines() if line.startswith("[block 0 ")]
    assert len(rounds) == 16 and rounds[0] > rounds[-1]          # masks resolve round by round
    assert all(a >= b for a, b in zip(rounds, rounds[1:]))
