"""Shop-decision probes: the two tokens most failed shop tasks of a Sprout twin come down to.

- The row: the first digit of the product id in add_to_cart, where the model picks a row of the
  search result. A wrong pick is sorted by what its row gets wrong (colour, size).
- The call: the first token of the call's name right after a search result, where the model
  chooses between adding ("add") and answering that nothing matches ("finish"), scored by
  intent (shop_add has one matching row, shop_out_of_stock two, shop_near_miss none).
Each token is scored alone on fresh transcripts, in the state decoding meets it: the AR twin
reads its causal logits; the BD twin denoises the token's block with every token left of it
committed and the rest masked (as prefix_threshold decodes). A minute or two on the CPU, so it
can score checkpoints during training.

    python -m training.probe --model models/sprout-bd [--split heldout --n 240 --json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import torch

from sprout.chat import MASK, ROLE_MARKERS
from training.corpus import corpus_lines

PROBE_INTENTS = ["shop_add", "shop_buy", "shop_out_of_stock"]
ID_OPENING = '"product_id":"P'   # the digit after this picks the row
CALL_INTENTS = ["shop_add", "shop_out_of_stock", "shop_near_miss"]
NAME_OPENING = '<tool_call>{"name":"'   # the token after this chooses the call


def _messages_at(record: dict[str, Any]):
    """Each message of a transcript with the character offset of its content in the text."""
    offset, text = 0, record["text"]
    for message in record["messages"]:
        at = text.index(message["content"], offset)
        offset = at + len(message["content"])
        yield message, at


def _decisions(record: dict[str, Any]) -> list[tuple[int, dict[str, str], list[dict[str, Any]]]]:
    """(character offset of the id's first digit, the call's arguments, the rows it chose from)
    for each add_to_cart in a transcript, with the latest search result before it."""
    out, rows = [], []
    for message, at in _messages_at(record):
        content = message["content"]
        if message["role"] == "tool" and content.startswith("["):
            rows = json.loads(content)
        if message["role"] == "assistant" and ID_OPENING in content:
            arguments = json.loads(content.split("<tool_call>", 1)[1].rsplit("</tool_call>", 1)[0])["arguments"]
            out.append((at + content.index(ID_OPENING) + len(ID_OPENING), arguments, rows))
    return out


def _calls_after_rows(record: dict[str, Any]) -> list[int]:
    """Character offset of the call name in each assistant turn right after a search result."""
    out, after_rows = [], False
    for message, at in _messages_at(record):
        content = message["content"]
        if message["role"] == "assistant" and after_rows and content.startswith(NAME_OPENING):
            out.append(at + len(NAME_OPENING))
        after_rows = message["role"] == "tool" and content.startswith('[{"color"')
    return out


@torch.inference_mode()
def _token_logits(model, ids: list[int], position: int, turn_start: int, block_size: int, mask_id: int) -> torch.Tensor:
    """Logits (V,) for token `position` as decoding meets it (the AR twin: causal; the BD twin:
    its block denoised with the tokens left of it committed)."""
    if model.config.causal:
        return model(torch.tensor([ids[:position]]))[0, -1]
    start = turn_start + (position - turn_start) // block_size * block_size      # its block's first token
    cache, _ = model.prefill(torch.tensor([ids[:start]]))
    block = ids[start:position] + [mask_id] * (block_size - (position - start))
    return model.denoise(torch.tensor([block]), cache)[0, position - start]


def _scored_tokens(model, tokenizer, record: dict[str, Any], chars: list[int], block_size: int):
    """(true token id, log-probs (V,)) of the token at each character offset, as decoding meets it."""
    mask_id = tokenizer.convert_tokens_to_ids(MASK)
    assistant = tokenizer.convert_tokens_to_ids(ROLE_MARKERS["assistant"])
    enc = tokenizer(record["text"], return_offsets_mapping=True, add_special_tokens=False)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    for char in chars:
        position = next(i for i, (a, b) in enumerate(offsets) if a <= char < b)
        turn_start = max(i + 1 for i in range(position) if ids[i] == assistant)
        logits = _token_logits(model, ids, position, turn_start, block_size, mask_id)
        yield ids[position], logits.float().log_softmax(-1)


def row_choice_probe(model, tokenizer, split: str = "heldout", n: int = 240, seed: int = 9090,
                     block_size: int = 16) -> dict[str, Any]:
    """Accuracy and NLL of the row-choosing digit over the add_to_cart calls of n transcripts."""
    counts, nll = Counter(), 0.0
    for record in corpus_lines(split, n, seed, intents=PROBE_INTENTS):
        decisions = _decisions(record)
        scored = _scored_tokens(model, tokenizer, record, [char for char, _, _ in decisions], block_size)
        for (_, arguments, rows), (truth, logp) in zip(decisions, scored):
            guess = int(logp.argmax())
            counts["decisions"] += 1
            nll -= float(logp[truth])
            if guess == truth:
                counts["right"] += 1
                continue
            digit = tokenizer.decode([guess])
            picked = [r for r in rows if r["id"][1:2] == digit]
            if not picked:
                counts["wrong: no such row"] += 1
            elif any(r["size"] == arguments.get("size") for r in picked):   # the right size: so the colour is off
                counts["wrong: a row of another colour"] += 1
            else:
                counts["wrong: a row of another size"] += 1
    total = max(counts["decisions"], 1)
    return {"model_causal": bool(model.config.causal), "split": split, "transcripts": n,
            "decisions": counts["decisions"], "accuracy": counts["right"] / total, "nll": nll / total,
            "wrong": {k.split(": ", 1)[1]: v for k, v in counts.items() if k.startswith("wrong")}}


def call_choice_probe(model, tokenizer, split: str = "heldout", n: int = 240, seed: int = 9090,
                      block_size: int = 16) -> dict[str, Any]:
    """Per intent: how often the first token of the call after a search result is right, its NLL,
    and the wrong choices by what was said instead."""
    per_intent: dict[str, Counter] = {}
    for record in corpus_lines(split, n, seed, intents=CALL_INTENTS):
        counts = per_intent.setdefault(record["intent"], Counter())
        for truth, logp in _scored_tokens(model, tokenizer, record, _calls_after_rows(record), block_size):
            guess = int(logp.argmax())
            counts["decisions"] += 1
            counts["nll"] -= float(logp[truth])
            counts["right" if guess == truth else f"said {tokenizer.decode([guess])!r}"] += 1
    report = {}
    for intent, counts in sorted(per_intent.items()):
        total = max(counts["decisions"], 1)
        report[intent] = {"decisions": counts["decisions"], "accuracy": counts["right"] / total,
                          "nll": counts["nll"] / total,
                          "wrong": {k[5:]: v for k, v in counts.items() if k.startswith("said ")}}
    return {"model_causal": bool(model.config.causal), "split": split, "transcripts": n, "intents": report}


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m training.probe", description=__doc__.split("\n\n")[0])
    cli.add_argument("--model", required=True, help="a Sprout folder")
    cli.add_argument("--split", choices=("train", "heldout"), default="heldout")
    cli.add_argument("--n", type=int, default=240, help="shop transcripts")
    cli.add_argument("--block-size", type=int, default=16, help="BD: the decoding block size")
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    from engine.backends.base import BackendError
    from engine.backends.sprout import load

    try:
        backend = load(args.model, device="cpu")
    except BackendError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report = row_choice_probe(backend.model, backend.tokenizer, args.split, args.n, block_size=args.block_size)
    calls = call_choice_probe(backend.model, backend.tokenizer, args.split, args.n, block_size=args.block_size)
    if args.json:
        print(json.dumps({**report, "calls": calls["intents"]}))
    else:
        print(f"{args.model}: row-choosing digit right in {report['accuracy']:.1%} of {report['decisions']} "
              f"add_to_cart calls ({args.split}), NLL {report['nll']:.3f}; wrong: {report['wrong']}")
        for intent, scores in calls["intents"].items():
            print(f"  call after the search result, {intent}: right in {scores['accuracy']:.1%} of "
                  f"{scores['decisions']}, NLL {scores['nll']:.3f}; wrong: {scores['wrong']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
