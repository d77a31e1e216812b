"""The conversation benchmarks' sets: the committed held-out conversations (the seed's six office
requests in one conversation first, then 2 to 6 requests each, held-out frames and entities),
the hand-written ones (world/handwritten.py), validation draws, and how a request is counted
(new topic, follow-up, closing, outside). Conversations are drawn by world/conversations.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from world import followups, tasks
from world.conversations import draw, generate

CONVERSATIONS_PATH = Path(__file__).with_name("heldout_conversations.json")
HANDWRITTEN_PATH = Path(__file__).with_name("handwritten_conversations.json")   # world/handwritten.py
CONVERSATIONS_SIZE, CONVERSATIONS_SEED, CONVERSATIONS_VALIDATION_SEED = 49, 449, 3003
BENCH_TURNS = (2, 6)
# the seed's six office requests, asked in one conversation: an invoice, a course registration,
# adding up amounts, an activity's status, a customer's details, then that customer's invoices
SIX_OFFICE = ["office_invoice_by_name", "office_course", "office_sum", "office_activity", "office_customer",
              "follow_find_invoices"]


def make_conversation_set(n: int = CONVERSATIONS_SIZE, seed: int = CONVERSATIONS_SEED) -> list[dict[str, Any]]:
    """The six office requests in one conversation, then n - 1 conversations of 2 to 6 requests,
    all on held-out values in held-out wording: from a pool drawn in order, first one for each
    follow-up intent (so every kind is measured), then the rest in the pool's order."""
    six = next(c for s in range(seed, seed + 100) if (c := draw("heldout", s, "heldout", plan=SIX_OFFICE)))
    six["id"] = "conv-heldout-six-office"
    pool = generate("heldout", 8 * n, seed, "heldout", BENCH_TURNS)
    chosen: list[dict[str, Any]] = []
    for intent in followups.FOLLOW_INTENTS:
        if not any(t["intent"] == intent for c in chosen for t in c["turns"]):
            chosen += [next(c for c in pool if any(t["intent"] == intent for t in c["turns"]))]
    chosen += [c for c in pool if c not in chosen][: n - 1 - len(chosen)]
    return [six] + sorted(chosen, key=pool.index)


def load_conversations(path: str | Path = CONVERSATIONS_PATH) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text())


def validation_conversations(n: int, seed: int = CONVERSATIONS_VALIDATION_SEED) -> list[dict[str, Any]]:
    """n conversations drawn as the benchmark's, none of them: choose checkpoints on these."""
    benchmark = {c["id"] for c in load_conversations()}
    return [c for c in generate("heldout", 2 * n, seed, "heldout", BENCH_TURNS) if c["id"] not in benchmark][:n]


def request_kind(turn: dict[str, Any]) -> str:
    """How the benchmark breaks requests down: a follow-up, a closing, outside the world, or new."""
    if turn["intent"] == "closing":
        return "closing"
    if turn["intent"].startswith("follow_"):
        return "follow-up"
    return "outside" if turn["intent"] in tasks.OUTSIDE_INTENTS else "new topic"
