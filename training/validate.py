"""Validation loss of several model folders on the same held-out rows: how the campaign chooses a
checkpoint (issue 49, "checkpoints are chosen on validation only") and whether it ships.

    python -m training.validate --model models/sprout-bd --model runs/out/sprout-bd-s5 \
        --corpus data/corpus-heldout-cpu.jsonl --corpus data/val-conversations-heldout.jsonl [--json]

Each folder is scored by its own twin's loss (`config.causal`: AR's next-token loss, else the BD
loss with its fixed masking seed), exactly as `training.train` scores its evaluations
(`training.losses.validation_loss`, the first `--rows` rows of each corpus), so the numbers here and
in a run's log are one definition. Weights are read in fp32 whatever they were stored in (the
committed checkpoints are bf16), so two folders differ only by their weights. Prints a table, or
JSON with --json: {"rows": N, "losses": {folder: {corpus: loss}}}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer

import sprout.modeling  # noqa: F401  (registers Sprout with the Auto classes)
from sprout.tokenizer import EOS, MASK, PAD
from training.data import encode_texts
from training.losses import validation_loss
from training.train import TRAIN_PRESETS, read_corpus


def folder_losses(folder: Path, corpora: list[Path], rows: int, max_tokens: int) -> dict[str, float]:
    """{corpus name: validation loss} for one model folder, its twin read from its config."""
    model = AutoModel.from_pretrained(folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = {"eos": tokenizer.convert_tokens_to_ids(EOS), "pad": tokenizer.convert_tokens_to_ids(PAD),
           "mask": tokenizer.convert_tokens_to_ids(MASK)}
    twin = "ar" if model.config.causal else "bd"
    losses = {}
    with torch.no_grad():
        for corpus in corpora:
            texts, untrained = read_corpus(corpus)
            examples = encode_texts(texts[:rows], tokenizer, untrained[:rows])
            losses[corpus.name] = round(validation_loss(model, examples, ids, twin, max_tokens), 5)
    return losses


def table(losses: dict[str, dict[str, float]]) -> str:
    corpora = list(next(iter(losses.values())))
    lines = ["| model | " + " | ".join(corpora) + " |", "|---" * (len(corpora) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(f"{row[c]:.4f}" for c in corpora) + " |" for name, row in losses.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--model", action="append", required=True, help="a model folder (repeat to compare)")
    cli.add_argument("--corpus", action="append", required=True, help="a held-out JSONL corpus (repeat)")
    cli.add_argument("--rows", type=int, default=200, help="the first ROWS rows of each corpus (training's 200)")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    corpora = [Path(c) for c in args.corpus]
    missing = [str(p) for p in [*map(Path, args.model), *corpora] if not p.exists()]
    if missing:
        cli.error("not found: " + ", ".join(missing))
    max_tokens = TRAIN_PRESETS["cpu"]["max_tokens"]
    losses = {name: folder_losses(Path(name), corpora, args.rows, max_tokens) for name in args.model}
    print(json.dumps({"rows": args.rows, "losses": losses}, indent=2) if args.json else table(losses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
