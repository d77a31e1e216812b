"""What the earlier requests of a conversation established (Memory: the customer looked up, the
product found or added, the invoices listed, each with the request that did it), and a follow-up's
slots resolved from it ("now invoice her": the customer id of the last lookup), or None when the
history holds nothing it can refer to. world/conversations.py draws the conversations."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from world import entities, followups, grammar, tasks
from world.oracle import Call, exact_matches
from world.state import World


@dataclass
class Memory:
    """What the earlier requests established, each with the index of the request that did."""
    customer: tuple[int, dict[str, str]] | None = None    # {"name", "customer_id"}
    found: tuple[int, dict[str, Any]] | None = None       # the product a search matched
    looked_for: tuple[int, dict[str, Any]] | None = None  # the search's style, colour, size, qty
    added: tuple[int, dict[str, Any]] | None = None       # the product last put in the cart
    invoices: tuple[int, list[dict[str, Any]]] | None = None   # rows a find_invoices listed
    pending: tuple[int, str, dict[str, Any]] | None = None     # a request that asked for a detail
    course: tuple[int, dict[str, str]] | None = None      # {"name", "course"} last registered
    activity: tuple[int, str] | None = None
    cart_touched: bool = False
    styles: set[str] = field(default_factory=set)         # styles a later shop scenario must avoid


def remember(memory: Memory, k: int, intent: str, slots: dict[str, Any], steps: list[tuple[Call, Any]]) -> None:
    """Update `memory` with request k's gold calls and replies."""
    if slots.get("style"):
        memory.styles.add(slots["style"])
    for call, reply in steps:
        args = call.arguments
        if call.name == "search_products":
            wanted = {"style": args["query"], "color": args["color"], "size": args["size"], "qty": slots.get("qty", 1),
                      "act": _acts(intent, slots)}
            memory.looked_for = (k, wanted)
            match = exact_matches(reply, wanted)
            memory.found = (k, {**wanted, "product_id": match[0]["id"]}) if match else None
        elif call.name == "add_to_cart" and isinstance(reply, dict) and reply.get("ok"):
            memory.added = (k, {"product_id": args["product_id"], "size": args["size"]})
            memory.cart_touched = True
        elif call.name in ("view_cart", "checkout_guest"):
            memory.cart_touched = True
        elif call.name == "get_customer" and "id" in reply:
            memory.customer = (k, {"name": args["name"], "customer_id": reply["id"]})
        elif call.name == "create_invoice" and "id" in reply and slots.get("name"):
            memory.customer = (k, {"name": slots["name"], "customer_id": args["customer_id"]})
        elif call.name == "find_invoices" and isinstance(reply, list):
            memory.invoices = (k, reply) if reply else None
        elif call.name == "register_course" and reply.get("ok"):
            memory.course = (k, {"name": args["student_name"], "course": args["course_code"]})
        elif call.name == "get_activity_status":
            memory.activity = (k, args["activity_id"])
    memory.pending = (k, intent, slots) if intent in ("shop_missing_info", "office_missing_info", "ask_missing") \
        else None


def _acts(intent: str, slots: dict[str, Any]) -> bool | None:
    """Whether a request that searched meant to add (True), to look (False), or to buy (None: a
    correction would have to check out again, which no follow-up here does)."""
    if intent in ("shop_add", "shop_near_miss", "shop_out_of_stock"):
        return True
    if intent in (tasks.ABSENT_INTENT, tasks.UNKNOWN_INTENT):
        return slots["wording"] == "act"
    if intent == "follow_size":
        return slots["act"]
    return False if intent == "shop_find" else None


# -- follow-ups: which fit the history, and their slots resolved from it ------------------------
def _last(entry: tuple | None, k: int) -> Any:
    """The entry's value when request k - 1 set it ("it", "those" point at the last answer)."""
    return entry[-1] if entry is not None and entry[0] == k - 1 else None


def _qty(frame: str, rng: random.Random) -> int:
    return rng.randint(1, 3) if "{qty}" in frame else 1


def resolve(intent: str, frame: str, memory: Memory, world: World, setup: dict[str, Any], k: int,
            rng: random.Random) -> dict[str, Any] | None:
    """The slots of follow-up `intent` worded by `frame` at request k, or None when the history
    holds nothing it can refer to. New entities it names (a course, an activity) go into the
    world and the setup."""
    split = world.split
    if intent == "follow_add":
        found = _last(memory.found, k)
        if _last(memory.added, k):        # the last request already added it
            return None
        return found and {**found, "qty": _qty(frame, rng)}
    if intent == "follow_add_more":
        added = _last(memory.added, k)
        return added and {**added, "qty": rng.randint(1, 3)}
    if intent == "follow_cart_total":
        return {} if _last(memory.added, k) or (memory.cart_touched and world.cart) else None
    if intent == "follow_size":
        looked = _last(memory.looked_for, k)
        if not looked or looked["style"] not in entities.STYLES or looked["act"] is None:
            return None
        sizes = [s for s in entities.SIZES if s != looked["size"] and tasks._allowed(looked["color"], s, split)]
        stocked = [s for p in world.products.values() if p["style"] == looked["style"] and p["color"] == looked["color"]
                   for s in p["stock"] if s in sizes]
        if not sizes:
            return None
        return {**looked, "size": rng.choice(stocked) if stocked and rng.random() < 0.6 else rng.choice(sizes)}
    pending = memory.pending[1:] if memory.pending and memory.pending[0] == k - 1 else None
    if intent == "follow_checkout":
        if not pending or pending[0] != "shop_missing_info" or not world.cart:
            return None
        asked = pending[1]
        return {key: asked[key] for key in ("name", "email", "address")} | {"label": asked["missing"],
                                                                          "value": asked[asked["missing"]]}
    if intent == "follow_supply":
        return {**pending[1]} if pending and pending[0] == "ask_missing" else None
    if intent == "follow_invoice_amount":
        if not pending or pending[0] != "office_missing_info" or pending[1]["missing"] != "amount":
            return None
        asked = pending[1]
        return {key: asked[key] for key in ("name", "customer_id", "description")} | {"amount": rng.randint(20, 990)}
    if intent == "follow_course_code":
        if not pending or pending[0] != "office_missing_info" or pending[1]["missing"] != "course code":
            return None
        return {"name": pending[1]["name"], "course": _new_course(world, setup, rng)}
    customer = memory.customer[1] if memory.customer else None
    if intent == "follow_invoice":
        return customer and {**customer, "amount": rng.randint(20, 990),
                             "description": rng.choice(entities.DESCRIPTIONS)}
    if intent == "follow_find_invoices":
        status = rng.choice(entities.INVOICE_STATUSES) if "{status}" in frame else None
        return customer and {**customer, "status": status, "which": f"{status} " if status else ""}
    if intent == "follow_unpaid_total":
        return customer and dict(customer)
    if intent == "follow_course":
        return customer and {"name": customer["name"], "course": _new_course(world, setup, rng)}
    if intent == "follow_sum_those":
        rows = _last(memory.invoices, k)
        return rows and {"amounts": [row["amount"] for row in rows]}
    if intent == "follow_course_same":
        course = _last(memory.course, k)
        return course and {"name": entities.pick(rng, "name", split, avoid={course["name"]}),
                           "course": course["course"]}
    if intent == "follow_activity":
        if not _last(memory.activity, k):
            return None
        aid = world.new_id("activity")
        world.activities[aid] = rng.choice(entities.ACTIVITY_STATUSES)
        setup.setdefault("activities", {})[aid] = world.activities[aid]
        return {"activity": aid}
    if intent == "closing":
        return {} if k > 0 else None
    raise ValueError(f"Unknown follow-up {intent!r}; choose one of {', '.join(followups.FOLLOW_INTENTS)}.")


def _new_course(world: World, setup: dict[str, Any], rng: random.Random) -> str:
    code = world.new_id("course")
    world.courses[code] = rng.randint(1, 30)
    setup.setdefault("courses", {})[code] = world.courses[code]
    return code


def follow_up_text(intent: str, frame: str, slots: dict[str, Any], rng: random.Random) -> str:
    obj, subj, pos = rng.choice(followups.PRONOUNS)
    values = {**slots, "obj": obj, "subj": subj, "pos": pos, "qty": grammar.number(slots.get("qty", 1), rng),
              "amount": grammar.money(slots.get("amount", ""), rng), "status": slots.get("status") or ""}
    text = frame.format(**values)
    return text[0].upper() + text[1:]
