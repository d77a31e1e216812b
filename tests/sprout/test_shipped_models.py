"""The committed checkpoints: small, loadable with the Auto classes, and decodable live."""

from pathlib import Path

import pytest
from transformers import AutoModel, AutoTokenizer

import engine.sprout  # noqa: F401  (registers Sprout with the Auto classes)
from engine.generate import MASK_GLYPH, main

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
    code = main(["--model", str(MODELS / "sprout-bd"), "--prompt", "Check activity A536.", "--gen-length", "32",
                 "--block-size", "16", "--steps", "16", "--device", "cpu", "--live"])
    out = capsys.readouterr().out
    assert code == 0
    lines = [line for line in out.splitlines() if line.strip()]
    assert MASK_GLYPH in lines[0]                  # the first round still has masked positions
    assert sum(MASK_GLYPH in line for line in lines) >= 2
