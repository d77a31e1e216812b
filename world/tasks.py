"""Task generator: an intent + a split + a seed -> a task whose gold trajectory the oracle
finds by executing against the world.

A task is JSON: {id, domain, intent, split, instruction, world: {seed, setup}, slots,
gold_actions, outputs}. `slots` holds what the instruction says as structured values (what
the oracle reads); `world.setup` holds the scenario entities added to the seed's background
world (start.world_for). Every entity value is drawn from the task's split (entities.py).
Shop scenarios list near misses (2 of style / colour / size match) next to the exact match, so
picking an id means comparing attributes; only an absent-product request (shop_absent) asks for a
style the world does not stock, and a shop_unknown request for clothes it never sells (a
raincoat); their searches find nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from world import documents, entities, grammar
from world.oracle import Call, solve
from world.state import World, make_world
from world.templates import INSTRUCTIONS

Scenario = tuple[dict[str, Any], dict[str, Any]]   # (slots, setup)


def _allowed(color: str, size: str, split: str) -> bool:
    return split == "heldout" or entities.split_of("combo", f"{color}|{size}") == "train"


def _add_product(world: World, rng: random.Random, setup: dict, style: str, color: str, stock: dict[str, int]) -> str:
    pid = world.new_id("product")
    product = {"style": style, "color": color, "price": rng.randint(9, 149),
               "stock": {s: stock[s] for s in entities.SIZES if s in stock}}
    world.products[pid] = product
    setup.setdefault("products", {})[pid] = product
    return pid


def _item(qty: int, color: str, style: str) -> str:
    """How a request names what it wants: "a red cap", "2 red caps"."""
    return f"a {color} {style}" if qty == 1 else f"{qty} {color} {entities.plural(style)}"


def _shop(world: World, rng: random.Random, kind: str, style: str | None = None) -> Scenario:
    """kind: exact (one full match), oos (two; the first listed is out of stock), none (only near
    misses). `style`: the style asked for, else one drawn. A style is drawn either way, so a
    task that names one is its seed's task with that style, and the stream goes on the same."""
    split = world.split
    color, size = entities.pick(rng, "combo", split).split("|")
    drawn, qty = rng.choice(entities.DRAWN_STYLES), rng.randint(1, 3)
    style = style or drawn
    setup: dict[str, Any] = {}
    other_sizes = [s for s in entities.SIZES if s != size and _allowed(color, s, split)]
    exact = []
    for _ in range({"exact": 1, "oos": 2, "none": 0}[kind]):
        stock = {size: rng.randint(qty, 6)}
        if other_sizes and rng.random() < 0.5:
            stock[rng.choice(other_sizes)] = rng.randint(1, 6)
        exact.append(_add_product(world, rng, setup, style, color, stock))
    if kind == "oos":
        setup["products"][min(exact)]["stock"][size] = 0
    if kind == "none":  # right colour, wrong size
        wrong = rng.sample(other_sizes, min(len(other_sizes), rng.randint(1, 2)))
        _add_product(world, rng, setup, style, color, {s: rng.randint(1, 6) for s in wrong})
    colors = [c for c in entities.COLORS if c != color and _allowed(c, size, split)]
    for near in rng.sample(colors, rng.randint(1, 2)):  # right size, wrong colour
        _add_product(world, rng, setup, style, near, {size: rng.randint(1, 6)})
    item = _item(qty, color, entities.style_said(style, rng))
    return {"style": style, "color": color, "size": size, "qty": qty, "item": item}, setup


def _absent(world: World, rng: random.Random) -> Scenario:
    """A style the world does not stock at all (8 background products leave at least 2 of the 10
    styles out), asked for in "look" wording (find / do you have) or "act" wording (add to my
    cart): the search returns [] and the honest answer is the near miss's sentence."""
    stocked = {p["style"] for p in world.products.values()}
    style = rng.choice([s for s in entities.DRAWN_STYLES if s not in stocked])
    color, size = entities.pick(rng, "combo", world.split).split("|")
    wording = rng.choice(ABSENT_WORDINGS)
    qty = 1 if wording == "look" else rng.randint(1, 3)
    return ({"style": style, "color": color, "size": size, "qty": qty,
             "item": _item(qty, color, entities.style_said(style, rng)), "wording": wording}, {})


def _unknown(world: World, rng: random.Random) -> Scenario:
    """As _absent, for clothes the shop never sells (a raincoat, a blazer): words outside its
    vocabulary that people use anyway. The search finds nothing; the answer is the near miss's."""
    slots, setup = _absent(world, rng)
    style = entities.pick(rng, "unknown_style", world.split)
    return {**slots, "style": style, "item": _item(slots["qty"], slots["color"], style)}, setup


def _guest(world: World, rng: random.Random, missing: str | None = None) -> dict[str, Any]:
    name = entities.pick(rng, "name", world.split)
    slots = {"name": name, "email": entities.email_for(name), "address": entities.pick(rng, "address", world.split)}
    shown = [k for k in ("name", "email", "address") if k != missing]
    slots["details"] = ", ".join(f"{k} {slots[k]}" for k in shown)
    if missing:
        slots["missing"] = missing
    return slots


def _filled_cart(world: World, rng: random.Random) -> dict[str, Any]:
    lines = []
    for pid in rng.sample(sorted(world.products), rng.randint(1, 2)):
        lines.append([pid, rng.choice(sorted(world.products[pid]["stock"])), rng.randint(1, 2)])
    return {"cart": lines}


def _customer(world: World, rng: random.Random, setup: dict, statuses: list[str] = ()) -> dict[str, Any]:
    """A scenario customer (a name no background customer has) with invoices of `statuses`."""
    name = entities.pick(rng, "name", world.split, avoid={c["name"] for c in world.customers.values()})
    cid = world.new_id("customer")
    world.customers[cid] = {"name": name, "email": entities.email_for(name)}
    setup.setdefault("customers", {})[cid] = world.customers[cid]
    for status in statuses:
        iid = world.new_id("invoice")
        world.invoices[iid] = {"customer": cid, "amount": rng.randint(20, 990), "status": status,
                               "description": rng.choice(entities.DESCRIPTIONS)}
        setup.setdefault("invoices", {})[iid] = world.invoices[iid]
    return {"name": name, "customer_id": cid}


def _spoken_list(values: list[Any]) -> str:
    return ", ".join(map(str, values[:-1])) + f" and {values[-1]}"


# -- scenarios, one per intent ---------------------------------------------------------------
def shop_checkout(world: World, rng: random.Random) -> Scenario:
    return _guest(world, rng), _filled_cart(world, rng)


def shop_missing_info(world: World, rng: random.Random) -> Scenario:
    return _guest(world, rng, missing=rng.choice(("name", "email", "address"))), _filled_cart(world, rng)


def shop_buy(world: World, rng: random.Random, style: str | None = None) -> Scenario:
    slots, setup = _shop(world, rng, "exact", style)
    return {**slots, **_guest(world, rng)}, setup


def office_customer(world: World, rng: random.Random) -> Scenario:
    setup: dict[str, Any] = {}
    return _customer(world, rng, setup), setup


def office_invoice(world: World, rng: random.Random) -> Scenario:
    setup: dict[str, Any] = {}
    slots = _customer(world, rng, setup)
    return {**slots, "amount": rng.randint(20, 990), "description": rng.choice(entities.DESCRIPTIONS)}, setup


def office_find_invoices(world: World, rng: random.Random) -> Scenario:
    status = rng.choice((None, "unpaid", "paid"))
    statuses = [rng.choice(entities.INVOICE_STATUSES) for _ in range(rng.randint(2, 4))]
    if status:
        statuses[rng.randrange(len(statuses))] = status
    setup: dict[str, Any] = {}
    slots = _customer(world, rng, setup, statuses)
    return {**slots, "status": status, "which": f"{status} " if status else ""}, setup


def office_unpaid_total(world: World, rng: random.Random) -> Scenario:
    statuses = ["unpaid"] * rng.randint(2, 3) + ["paid"] * rng.randint(0, 2)
    rng.shuffle(statuses)
    setup: dict[str, Any] = {}
    return {**_customer(world, rng, setup, statuses), "status": "unpaid"}, setup


def office_sum(world: World, rng: random.Random) -> Scenario:
    amounts = [rng.randint(5, 990) for _ in range(rng.randint(2, 4))]
    return {"amounts": amounts, "amounts_text": _spoken_list(amounts)}, {}


def office_course(world: World, rng: random.Random) -> Scenario:
    code = world.new_id("course")
    world.courses[code] = rng.randint(1, 30)
    return {"name": entities.pick(rng, "name", world.split), "course": code}, {"courses": {code: world.courses[code]}}


def office_activity(world: World, rng: random.Random) -> Scenario:
    aid = world.new_id("activity")
    world.activities[aid] = rng.choice(entities.ACTIVITY_STATUSES)
    return {"activity": aid}, {"activities": {aid: world.activities[aid]}}


def office_missing_info(world: World, rng: random.Random) -> Scenario:
    setup: dict[str, Any] = {}
    slots = _customer(world, rng, setup)
    missing = rng.choice(("amount", "course code"))          # drawn first: the seeds' tasks stay as they were
    return {**slots, "missing": missing, "description": rng.choice(entities.DESCRIPTIONS)}, setup


# intent -> (domain, scenario builder)
INTENTS: dict[str, tuple[str, Callable[[World, random.Random], Scenario]]] = {
    "shop_find": ("shop", lambda w, r: _shop(w, r, "exact")),
    "shop_add": ("shop", lambda w, r: _shop(w, r, "exact")),
    "shop_near_miss": ("shop", lambda w, r: _shop(w, r, "none")),
    "shop_out_of_stock": ("shop", lambda w, r: _shop(w, r, "oos")),
    "shop_checkout": ("shop", shop_checkout),
    "shop_missing_info": ("shop", shop_missing_info),
    "shop_cart_total": ("shop", lambda w, r: ({}, _filled_cart(w, r))),
    "shop_buy": ("shop", shop_buy),
    "office_customer": ("office", office_customer),
    "office_invoice": ("office", office_invoice),
    "office_invoice_by_name": ("office", office_invoice),
    "office_find_invoices": ("office", office_find_invoices),
    "office_sum": ("office", office_sum),
    "office_unpaid_total": ("office", office_unpaid_total),
    "office_course": ("office", office_course),
    "office_activity": ("office", office_activity),
    "office_missing_info": ("office", office_missing_info),
}
AGENT_INTENTS = tuple(INTENTS)
# The intents whose request names a style: build_task(..., style=) asks them for that one.
SHOP_KINDS = {"shop_find": "exact", "shop_add": "exact", "shop_near_miss": "none", "shop_out_of_stock": "oos"}
STYLED_INTENTS = (*SHOP_KINDS, "shop_buy")


def styled(intent: str, style: str) -> Callable[[World, random.Random], Scenario]:
    """The scenario of `intent` about products of `style` (a T-shirt: issue 49)."""
    if style not in entities.STYLES:
        raise ValueError(f"Unknown style {style!r}; choose one of {', '.join(entities.STYLES)}.")
    if intent == "shop_buy":
        return lambda world, rng: shop_buy(world, rng, style)
    if intent in SHOP_KINDS:
        return lambda world, rng: _shop(world, rng, SHOP_KINDS[intent], style)
    raise ValueError(f"{intent} names no style; a style can be given to {', '.join(STYLED_INTENTS)}.")
# A product the shop does not stock at all. A training-corpus intent (training/corpus.py
# default_intents), kept out of AGENT_INTENTS and PHRASING_INTENTS so that the committed sets and
# the validation draws built from those stay as they are; measured on its own check set below.
ABSENT_INTENT = "shop_absent"
ABSENT_WORDINGS = ("look", "act")
UNKNOWN_INTENT = "shop_unknown"      # the same for clothes outside the shop's vocabulary
EXTRA_INTENTS: dict[str, tuple[str, Callable[[World, random.Random], Scenario]]] = {
    ABSENT_INTENT: ("shop", _absent),
    UNKNOWN_INTENT: ("shop", _unknown),
}
DOC_INTENTS = documents.DOC_INTENTS
ALL_INTENTS = AGENT_INTENTS + DOC_INTENTS


# -- two goals in one request, and requests outside the world (grammar phrasings only) --------
def _merge(*scenarios: Scenario) -> Scenario:
    slots: dict[str, Any] = {}
    setup: dict[str, Any] = {}
    for scenario_slots, scenario_setup in scenarios:
        slots.update(scenario_slots)
        for key, value in scenario_setup.items():
            setup[key] = {**setup[key], **value} if isinstance(value, dict) and key in setup else value
    return slots, setup


def _add_and_cart(world: World, rng: random.Random) -> Scenario:
    """A product to add, and a cart that may already hold products of other styles."""
    slots, setup = _shop(world, rng, "exact")
    others = sorted(pid for pid, p in world.products.items() if p["style"] != slots["style"])
    picked = rng.sample(others, min(len(others), rng.randint(0, 2)))
    lines = [[pid, rng.choice(sorted(world.products[pid]["stock"])), 1] for pid in picked]
    return slots, {**setup, "cart": lines} if lines else setup


def _invoice_and_owed(world: World, rng: random.Random) -> Scenario:
    statuses = ["unpaid"] * rng.randint(1, 2) + ["paid"] * rng.randint(0, 2)
    rng.shuffle(statuses)
    setup: dict[str, Any] = {}
    slots = _customer(world, rng, setup, statuses)
    return {**slots, "status": "unpaid", "amount": rng.randint(20, 990),
            "description": rng.choice(entities.DESCRIPTIONS)}, setup


# two-goal intent -> (domain, the two goals, scenario builder); the goals run in the order the
# request states them, which is either order
TWO_GOALS: dict[str, tuple[str, tuple[str, str], Callable[[World, random.Random], Scenario]]] = {
    "both_course_activity": ("office", ("office_course", "office_activity"),
                             lambda w, r: _merge(office_course(w, r), office_activity(w, r))),
    "both_add_total": ("shop", ("shop_add", "shop_cart_total"), _add_and_cart),
    "both_invoice_unpaid": ("office", ("office_invoice_by_name", "office_unpaid_total"), _invoice_and_owed),
    "both_customer_sum": ("office", ("office_customer", "office_sum"),
                          lambda w, r: _merge(office_customer(w, r), office_sum(w, r))),
}
TWO_GOAL_INTENTS = tuple(TWO_GOALS)
OUTSIDE_INTENTS = tuple(f"outside_{kind}" for kind in grammar.OUTSIDE_KINDS)
# the agent intents the grammar phrases: the benchmark's, two goals, outside the world
PHRASING_INTENTS = AGENT_INTENTS + TWO_GOAL_INTENTS + OUTSIDE_INTENTS


def task_group(task: dict[str, Any]) -> str:
    """one goal, two goals, outside (the world) or document: how a benchmark breaks results down."""
    intent = task["intent"]
    if intent in TWO_GOALS:
        return "two goals"
    if intent in OUTSIDE_INTENTS:
        return "outside"
    return "document" if intent in DOC_INTENTS else "one goal"


def template_key(intent: str, slots: dict[str, Any]) -> str:
    """Which templates and grammar frames word the request: an absent product is asked for in
    the words of a find or of an add."""
    if intent in (ABSENT_INTENT, UNKNOWN_INTENT):
        return "shop_find" if slots["wording"] == "look" else "shop_add"
    return f"{intent}:{slots['missing']}" if intent == "office_missing_info" else intent


def phrase(intent: str, slots: dict[str, Any], phrasing: str, rng: random.Random,
           noise: bool = True) -> tuple[str, str]:
    """(instruction, frame id) of a task's slots in a grammar phrasing."""
    if intent in TWO_GOALS:
        return grammar.two_goal_instruction(slots["goals"], slots, phrasing, rng, noise)
    if intent in OUTSIDE_INTENTS:
        return grammar.outside_instruction(slots["kind"], slots, phrasing, rng, noise)
    values = {**slots, "by_name": intent == "office_invoice_by_name"}
    return grammar.instruction(template_key(intent, slots), values, phrasing, rng, noise)


def build_task(intent: str, split: str, seed: int, phrasing: str = "template", style: str | None = None,
               ) -> tuple[dict[str, Any], list[tuple[Call, Any]], Call | None]:
    """A task and its oracle trajectory ([(call, response)], finish call); documents have none.

    phrasing: "template" (the old templates, the committed benchmark's wording) or a grammar
    phrasing (grammar.PHRASINGS). The scenario (world, entities, gold) is the same for every
    phrasing of one (intent, split, seed); the wording comes from a random stream of its own.
    Documents keep their templates whatever the phrasing. `style` asks a shop intent
    (STYLED_INTENTS) for products of that style; its id ends in the style.
    """
    if split not in entities.SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose train or heldout.")
    if phrasing not in grammar.PHRASINGS:
        raise ValueError(f"Unknown phrasing {phrasing!r}; choose one of {', '.join(grammar.PHRASINGS)}.")
    rng = random.Random(f"task:{intent}:{split}:{seed}")
    if style is not None:
        domain, scenario = "shop", styled(intent, style)
        slots, setup = scenario(make_world(seed, split), rng)
    elif intent in DOC_INTENTS:
        return documents.make_doc_task(intent, split, seed, rng), [], None
    elif intent in TWO_GOALS:
        domain, goals, scenario = TWO_GOALS[intent]
        slots, setup = scenario(make_world(seed, split), rng)
        slots["goals"] = list(goals if rng.random() < 0.5 else goals[::-1])
    elif intent in OUTSIDE_INTENTS:
        domain, setup = "outside", {}
        slots = {"kind": intent.removeprefix("outside_"), **grammar.outside_slots(rng, split)}
    elif intent in INTENTS or intent in EXTRA_INTENTS:
        domain, scenario = INTENTS.get(intent) or EXTRA_INTENTS[intent]
        slots, setup = scenario(make_world(seed, split), rng)
    else:
        known = PHRASING_INTENTS + tuple(EXTRA_INTENTS) + DOC_INTENTS
        raise ValueError(f"Unknown intent {intent!r}; choose one of {', '.join(known)}.")
    if phrasing == "template":
        if intent not in INTENTS and intent not in EXTRA_INTENTS:
            raise ValueError(f"{intent} has no template phrasing; choose one of {', '.join(grammar.PHRASINGS[1:])}.")
        template = rng.choice(INSTRUCTIONS[template_key(intent, slots)])
        text = template.format(**{**slots, "amounts": slots.get("amounts_text", "")})
        task_id = f"{intent}-{split}-{seed}"
    else:
        text, frame = phrase(intent, slots, phrasing, random.Random(f"phrase:{intent}:{split}:{phrasing}:{seed}"))
        task_id = f"{intent}-{split}-{phrasing}-{seed}"
    if style is not None:
        task_id += f"-{style}"
    task = {"id": task_id, "domain": domain, "intent": intent, "split": split,
            "instruction": text, "world": {"seed": seed, "setup": setup}, "slots": slots}
    if phrasing != "template":
        task["phrasing"] = {"split": phrasing, "frame": frame}
    if intent in OUTSIDE_INTENTS:
        task["no_tools"] = True     # the grader fails any tool call but finish
    steps, final = solve(task)
    task["gold_actions"] = [c.to_dict() for c, _ in steps] + [final.to_dict()]
    task["outputs"] = final.outputs
    return task, steps, final


def make_task(intent: str, split: str, seed: int, phrasing: str = "template", style: str | None = None,
              ) -> dict[str, Any]:
    return build_task(intent, split, seed, phrasing, style)[0]


def task_seeds(split: str, n: int, seed: int, intents: tuple[str, ...] | list[str] | None = None):
    """(intent, task seed) pairs, balanced: each round of len(intents) tasks covers every
    intent once, in a shuffled order."""
    intents = list(intents or AGENT_INTENTS)
    rng = random.Random(f"tasks:{split}:{seed}")
    out: list[tuple[str, int]] = []
    while len(out) < n:
        round_ = intents[:]
        rng.shuffle(round_)
        out.extend((intent, rng.getrandbits(31)) for intent in round_)
    return out[:n]


def generate_tasks(split: str, n: int, seed: int, intents: tuple[str, ...] | list[str] | None = None,
                   phrasing: str = "template") -> list[dict]:
    return [make_task(intent, split, s, phrasing) for intent, s in task_seeds(split, n, seed, intents)]
