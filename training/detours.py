"""Detours: training transcripts in which the agent makes the mistake a parallel decoder makes,
the shop says so, and the agent puts it right.

The mistake measured most often on the Sprout twins: the product id of an add_to_cart call
mixes two rows of the search result, its characters taken partly from the matching row and
partly from another one at the same positions (rows P2H6 and P4C1, wanted P4C1, written
P2C1). No such product exists, so the shop answers {"error": "unknown product"}; a gold
trajectory never shows that reply, so a model that met it had never learned what comes next.

A detour inserts one such wrong call and the shop's real reply before the first add_to_cart
of a search-based transcript. The wrong call is context, not a target: its index is listed in
the record's "untrained_turns" and no loss falls on it, so the model learns the correction
without learning the mistake.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from world import entities
from world.oracle import Call
from world.start import world_for
from world.tools import call_tool

# Off by default: a run with detours did not beat one without (models/README.md, "Detours").
DETOUR_SHARE = 0.0    # of the transcripts that can take one


def mixed_id(right: str, other: str, allowed: Callable[[str], bool], rng: random.Random) -> str | None:
    """`right` with some (not all) of the positions where `other` differs taken from `other`;
    None when the two ids do not differ in two or more places or no mix is `allowed`."""
    if len(right) != len(other):
        return None
    differ = [i for i, (a, b) in enumerate(zip(right, other)) if a != b]
    if len(differ) < 2:
        return None
    subsets = [[i for j, i in enumerate(differ) if mask >> j & 1] for mask in range(1, 2 ** len(differ) - 1)]
    rng.shuffle(subsets)
    for subset in subsets:
        mixed = "".join(other[i] if i in subset else c for i, c in enumerate(right))
        if allowed(mixed):
            return mixed
    return None


def detour(task: dict[str, Any], steps: list[tuple[Call, Any]],
           rng: random.Random) -> tuple[list[tuple[Call, Any]], int | None]:
    """`steps` with one wrong add_to_cart (and the shop's reply) before the first right one;
    returns the new steps and the index of the wrong call among them, or (steps, None) when
    the transcript has no add_to_cart after a search with another row to mix with."""
    search = next((reply for call, reply in steps if call.name == "search_products"), None)
    first_add = next((i for i, (call, _) in enumerate(steps) if call.name == "add_to_cart"), None)
    if not isinstance(search, list) or first_add is None:
        return steps, None
    right_call = steps[first_add][0]
    right = right_call.arguments["product_id"]
    world = world_for(task)

    def allowed(pid: str) -> bool:   # no real product, and no value of the other split
        return pid not in world.products and entities.split_of("product", pid) == task["split"]

    others = sorted({row["id"] for row in search if row["id"] != right})
    rng.shuffle(others)
    for other in others:
        wrong = mixed_id(right, other, allowed, rng)
        if wrong is not None:
            break
    else:
        return steps, None
    call = Call("add_to_cart", {**right_call.arguments, "product_id": wrong})
    reply = call_tool(world, call.name, call.arguments)   # the shop's own words for the mistake
    return steps[:first_add] + [(call, reply)] + steps[first_add:], first_add
