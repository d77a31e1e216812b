"""Training corpus: complete chat transcripts rendered from oracle trajectories.

    python -m training.corpus --split train --n 20000 --seed 0 --out data/train.jsonl

One JSON line per task: {"id", "intent", "split", "messages": [{"role", "content"}], "text"},
`text` = render_chat(messages, add_generation_prompt=False). No system turn and no tool list:
the model learns the tools; loss goes on format.assistant_spans(text) except the assistant
turns listed in "untrained_turns" (present only when there are some). Agent tasks are
user -> (assistant call -> tool response)* -> assistant finish; document tasks are
user -> assistant document (plain text). Intents come in balanced shuffled rounds. With
--detour-share, that share of the transcripts that can take one carry a detour
(training/detours.py): a wrong call, the shop's error, then the right call.

--phrasing picks the wording (world/grammar.py): `template` (the default; the corpus the
shipped twins trained on) or `train`, the instruction grammar's training phrasings (the old
templates are one family of them), which also brings in two-goal and outside-the-world
transcripts. Held-out wordings (`heldout`, `words`) may only be written for the held-out split,
as validation corpora:

    python -m training.corpus --split train --phrasing train --n 120000 --seed 0 --out data/corpus-train-v5.jsonl

--conversations N adds N conversation rows (world/conversations.py: 1 to 6 requests in
one world, follow-ups that lean on the earlier turns, thanks, new topics), shuffled in among the
single-request rows with a seeded order. A conversation row has "intent": "conversation",
"intents" (one per request) and the whole chat in "messages"; loss falls on every assistant
turn, so the model learns to answer each request with the ones before it in view:

    python -m training.corpus --split train --phrasing train --n 40000 --conversations 20000 --seed 9 \
      --out data/corpus-train-v9.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

from training.detours import DETOUR_SHARE, detour
from world import conversations
from world.format import render_call, render_chat, render_response, system_prompt
from world.grammar import PHRASINGS
from world.oracle import Call
from world.tasks import (
    ALL_INTENTS,
    DOC_INTENTS,
    EXTRA_INTENTS,
    PHRASING_INTENTS,
    STYLED_INTENTS,
    build_task,
    task_seeds,
)


def transcript_messages(task: dict[str, Any], steps: list[tuple[Call, Any]], final: Call | None,
                        system: str | None = None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": task["instruction"]})
    if task["domain"] == "document":
        messages.append({"role": "assistant", "content": task["gold_output"]})
        return messages
    for call, reply in steps:
        messages.append({"role": "assistant", "content": render_call(call.name, call.arguments)})
        messages.append({"role": "tool", "content": render_response(reply)})
    messages.append({"role": "assistant", "content": render_call(final.name, final.arguments)})
    return messages


def default_intents(phrasing: str = "template") -> list[str]:
    """Every intent a corpus of this phrasing covers: the grammar adds two-goal and
    outside-the-world requests; both add requests for products the shop does not stock."""
    base = ALL_INTENTS if phrasing == "template" else PHRASING_INTENTS + DOC_INTENTS
    return list(base + tuple(EXTRA_INTENTS))


def check_phrasing(split: str, phrasing: str) -> None:
    if phrasing not in PHRASINGS:
        raise ValueError(f"Unknown phrasing {phrasing!r}; choose one of {', '.join(PHRASINGS)}.")
    if split == "train" and phrasing in ("heldout", "words"):
        raise ValueError(f"The {phrasing} wording is held out: it may not go into a training corpus.")


def corpus_lines(split: str, n: int, seed: int, intents: list[str] | None = None, system: str | None = None,
                 detour_share: float = DETOUR_SHARE, phrasing: str = "template", tee_share: float = 0.0):
    """Yield the corpus records one by one. `tee_share` of the requests that name a style
    (STYLED_INTENTS) ask for T-shirts, which random worlds never stock (world/entities.py
    DRAWN_STYLES); 1/11 makes them as common as each of the other ten styles."""
    check_phrasing(split, phrasing)
    prompt = system_prompt(system)
    for intent, task_seed in task_seeds(split, n, seed, intents or default_intents(phrasing)):
        tee = intent in STYLED_INTENTS and random.Random(f"tee:{intent}:{task_seed}").random() < tee_share
        task, steps, final = build_task(intent, split, task_seed, phrasing, style="t-shirt" if tee else None)
        rng = random.Random(f"detour:{task['id']}")
        wrong = None
        if rng.random() < detour_share:
            steps, wrong = detour(task, steps, rng)
        messages = transcript_messages(task, steps, final, prompt)
        record = {"id": task["id"], "intent": intent, "split": split, "messages": messages,
                  "text": render_chat(messages, add_generation_prompt=False)}
        if wrong is not None:
            record["untrained_turns"] = [wrong]     # assistant turn i is step i's call
        yield record


def conversation_lines(split: str, n: int, seed: int, system: str | None = None, phrasing: str = "train"):
    """Yield n conversation records (the grammar's wording, or the templates with `template`)."""
    check_phrasing(split, phrasing)
    prompt = system_prompt(system)
    for conversation in conversations.generate(split, n, seed, phrasing):
        messages = [{"role": "system", "content": prompt}] if prompt else []
        messages += conversations.conversation_messages(conversation)
        yield {"id": conversation["id"], "intent": "conversation",
               "intents": [t["intent"] for t in conversation["turns"]], "split": split, "messages": messages,
               "text": render_chat(messages, add_generation_prompt=False)}


def mixed_lines(singles, conversation_rows, seed: int):
    """The two kinds of rows interleaved in a seeded random order (both streams kept in order)."""
    singles, conversation_rows = list(singles), list(conversation_rows)
    kinds = [0] * len(singles) + [1] * len(conversation_rows)
    random.Random(f"mix:{seed}").shuffle(kinds)
    streams = (iter(singles), iter(conversation_rows))
    for kind in kinds:
        yield next(streams[kind])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("train", "heldout"), default="train")
    parser.add_argument("--n", type=int, default=20000, help="number of transcripts")
    parser.add_argument("--conversations", type=int, default=0,
                        help="also this many conversation rows of 1 to 6 requests (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output .jsonl path")
    parser.add_argument("--intents", default="",
                        help=f"comma-separated subset of: {', '.join(default_intents('train'))}")
    parser.add_argument("--phrasing", choices=PHRASINGS, default="template",
                        help="template (default), or the grammar's train wording (heldout, words: held-out split only)")
    parser.add_argument("--system", choices=("none", "compact", "full"), default="none",
                        help="system turn to put in every transcript (default none)")
    parser.add_argument("--detour-share", type=float, default=DETOUR_SHARE,
                        help=f"share of the search-and-add transcripts given a detour (default {DETOUR_SHARE})")
    parser.add_argument("--tee-share", type=float, default=0.0,
                        help="share of the requests that name a style asked about T-shirts (default 0; 0.09 makes "
                             "them as common as each other style)")
    args = parser.parse_args(argv)
    intents = [i.strip() for i in args.intents.split(",") if i.strip()] or None
    known = default_intents(args.phrasing)
    unknown = sorted(set(intents or []) - set(known))
    if unknown:
        parser.error(f"unknown intent(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    try:
        check_phrasing(args.split, args.phrasing)
    except ValueError as error:
        parser.error(str(error))
    if args.n < 0 or args.n + args.conversations < 1 or args.conversations < 0:
        parser.error("--n and --conversations must not be negative, and together at least 1")
    if not 0.0 <= args.detour_share <= 1.0:
        parser.error("--detour-share must be between 0 and 1")
    if not 0.0 <= args.tee_share <= 1.0:
        parser.error("--tee-share must be between 0 and 1")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lengths = []
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w") as handle:
        system = None if args.system == "none" else args.system
        singles = corpus_lines(args.split, args.n, args.seed, intents, system, args.detour_share, args.phrasing,
                               args.tee_share)
        talks = conversation_lines(args.split, args.conversations, args.seed, system, args.phrasing)
        for record in mixed_lines(singles, talks, args.seed) if args.conversations else singles:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            lengths.append(len(record["text"]))
    tmp.replace(out)
    print(f"Wrote {len(lengths)} {args.split} transcripts to {out}: chars mean {statistics.mean(lengths):.0f}, "
          f"median {statistics.median(lengths):.0f}, max {max(lengths)}.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
