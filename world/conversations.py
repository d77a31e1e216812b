"""Conversations: one to six requests in one world, each answered before the next is asked.

A later request may lean on the earlier ones: a pronoun ("now invoice her for $40"), an
ellipsis ("two more", "and what do I owe now?"), a correction ("no, size M"), the detail an
earlier request left out ("my email is ..."), or the tool results of earlier requests (the
product id a search found, the amounts of the invoices a lookup listed). Or it opens a new
topic, or says thanks. The wording of follow-ups is in followups.py; a fresh request is worded
as a single task is (templates or the instruction grammar).

How a conversation is drawn: the world starts as the seed's background; each request's scenario
adds its entities to one setup. `Memory` holds what the earlier requests established, read off
their gold calls and replies (`remember`), and a follow-up's slots are resolved from it before
the oracle's policy runs (`resolve`). Every request's gold is then replayed from scratch on the
finished setup (a later scenario's entities must not change an earlier answer); a draw whose
replay differs is dropped and the next one tried.

A conversation is JSON: {id, split, phrasing, world: {seed, setup}, turns: [{intent, domain,
instruction, slots, gold_actions, outputs, no_tools?}]}; `turn_task(conversation, k)` is
request k as a task the grader reads, whose world starts where the gold of requests < k left it
(start.world_for reads `world.before`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from world import entities, followups, grammar, tasks
from world.format import render_call, render_chat, render_response
from world.oracle import Call, exact_matches, policy_for
from world.start import world_for
from world.state import World
from world.templates import INSTRUCTIONS
from world.tools import FINISH, call_tool

# Sprout's context holds 1,024 tokens; a whole conversation stays under this, so the last
# request's prompt leaves room for its reply.
MAX_TOKENS = 896
FOLLOW_UP_SHARE = 0.55      # of requests after the first, when some follow-up fits the history
CLOSING_SHARE = 0.3         # of conversations that end with a thank-you
TURN_WEIGHTS = {1: 2, 2: 3, 3: 3, 4: 2, 5: 1, 6: 1}    # requests per corpus conversation
CART_INTENTS = ("shop_checkout", "shop_missing_info", "shop_cart_total")
SHOP_SCENARIOS = ("shop_find", "shop_add", "shop_near_miss", "shop_out_of_stock", "shop_buy",
                  tasks.ABSENT_INTENT, tasks.UNKNOWN_INTENT)
# what a fresh request may be: one goal, a product the shop lacks, outside the world (grammar only)
FRESH_INTENTS = tasks.AGENT_INTENTS + tuple(tasks.EXTRA_INTENTS)
# follow-ups that point at the last answer ("it", "those", "two more"): tried before the others
POINT_AT_LAST = ("follow_add", "follow_add_more", "follow_size", "follow_checkout", "follow_invoice_amount",
                 "follow_course_code", "follow_sum_those", "follow_course_same", "follow_activity")
# fresh requests whose answer a follow-up can lean on, drawn three times as often as the rest
OPENERS = ("shop_find", "office_customer", "office_missing_info", "shop_missing_info", "office_find_invoices",
           "shop_add", "office_course", "office_activity") * 2
DOMAIN_OF = {intent: domain for intent, (domain, _) in {**tasks.INTENTS, **tasks.EXTRA_INTENTS}.items()}


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


# ask_missing: a request of `asked` that leaves out what its tool needs -> (what the answer asks
# for, the words the answer must hold, the slots the request does not say)
MISSING: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
    "shop_find": ("size", ["size"], ("size",)),
    "shop_add": ("size", ["size"], ("size",)),
    "shop_buy": ("size", ["size"], ("size",)),
    "shop_checkout": ("name, email and address", ["name", "email", "address"], ("name", "email", "address")),
    "office_customer": ("customer name", ["name"], ("name",)),
    "office_invoice_by_name": ("customer", ["customer"], ("name", "customer_id")),
    "office_find_invoices": ("customer name", ["name"], ("name",)),
    "office_unpaid_total": ("customer name", ["name"], ("name",)),
    "office_sum": ("amounts", ["amounts"], ("amounts",)),
    "office_course": ("student name", ["name"], ("name",)),
    "office_activity": ("activity id", ["activity id"], ("activity",)),
}


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


# -- fresh requests ---------------------------------------------------------------------------
def _customer_with_invoices(world: World, rng: random.Random) -> tasks.Scenario:
    """A customer looked up in a conversation has invoices, so "and her invoices?" can follow."""
    setup: dict[str, Any] = {}
    statuses = [rng.choice(entities.INVOICE_STATUSES) for _ in range(rng.randint(0, 3))]
    return tasks._customer(world, rng, setup, statuses), setup


def fresh(intent: str, memory: Memory, world: World, rng: random.Random, phrasing: str, asked: str = ""
          ) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """(slots, setup, instruction) of a new-topic request, or None when it does not fit the
    conversation so far (a style an earlier request used, a cart an earlier request read).
    ask_missing takes the intent whose request leaves something out (`asked`); its wording is
    the caller's (the hand-written set)."""
    if intent in tasks.OUTSIDE_INTENTS:
        slots = {"kind": intent.removeprefix("outside_"), **grammar.outside_slots(rng, world.split)}
        return slots, {}, tasks.phrase(intent, slots, phrasing, rng)[0]
    if intent == "ask_missing":
        made = fresh(asked, memory, world, rng, "template")
        if made is None:
            return None
        slots, setup, _ = made
        missing, outputs, _ = MISSING[asked]
        return {**slots, "asked": asked, "missing": missing, "missing_outputs": outputs}, setup, ""
    if intent in CART_INTENTS and memory.cart_touched and not world.cart:
        return None
    builder = _customer_with_invoices if intent == "office_customer" else (
        tasks.INTENTS.get(intent) or tasks.EXTRA_INTENTS[intent])[1]
    slots, setup = builder(world, rng)
    if intent in SHOP_SCENARIOS and slots["style"] in memory.styles:
        return None
    if intent in CART_INTENTS:
        if memory.cart_touched:
            setup.pop("cart", None)               # the cart is what the earlier requests left
        else:
            memory.styles.update(world.products[pid]["style"] for pid, _, _ in setup.get("cart", []))
    if phrasing == "template":
        text = rng.choice(INSTRUCTIONS[tasks.template_key(intent, slots)]).format(
            **{**slots, "amounts": slots.get("amounts_text", "")})
    else:
        text = tasks.phrase(intent, slots, phrasing, rng)[0]
    return slots, setup, text


# -- drawing a conversation -------------------------------------------------------------------
def _merge_setup(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if key == "cart":
            into.setdefault("cart", []).extend(value)
        else:
            into.setdefault(key, {}).update(value)


def _run(world: World, task: dict[str, Any]) -> tuple[list[tuple[Call, Any]], Call]:
    policy = policy_for(task)
    steps, call = [], next(policy)
    while call.name != FINISH:
        reply = call_tool(world, call.name, call.arguments)
        steps.append((call, reply))
        call = policy.send(reply)
    return steps, call


def turn_messages(turn: dict[str, Any], steps: list[tuple[Call, Any]], final: Call) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": turn["instruction"]}]
    for call, reply in steps:
        messages.append({"role": "assistant", "content": render_call(call.name, call.arguments)})
        messages.append({"role": "tool", "content": render_response(reply)})
    messages.append({"role": "assistant", "content": render_call(final.name, final.arguments)})
    return messages


@cache
def _token_counter():
    """The shipped twins' tokenizer (byte-level BPE: any text encodes; new words cost more tokens)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(Path(__file__).parents[1] / "models" / "sprout-bd" / "tokenizer.json"))


def count_tokens(messages: list[dict[str, str]]) -> int:
    return len(_token_counter().encode(render_chat(messages, add_generation_prompt=False)).ids)


def _phrasing_split(phrasing: str) -> int:
    return 1 if phrasing == "heldout" else 0      # followups.FRAMES: (training, held-out)


def draw(split: str, seed: int, phrasing: str = "train", turns: int | None = None, plan: list[str] | None = None,
         max_tokens: int = MAX_TOKENS) -> dict[str, Any] | None:
    """One conversation, or None when this draw does not hold together (the caller tries the
    next seed). `turns` requests (drawn from TURN_WEIGHTS when None), or the intents of `plan`."""
    rng = random.Random(f"conversation:{split}:{phrasing}:{seed}")
    wanted = len(plan) if plan else turns or rng.choices(list(TURN_WEIGHTS), list(TURN_WEIGHTS.values()))[0]
    frames_at = _phrasing_split(phrasing)
    setup: dict[str, Any] = {}
    memory, done, before, messages = Memory(), [], [], []
    for k in range(wanted):
        # the world as request k finds it, built afresh for each option (a rejected one may have added to it)
        spec = {"split": split, "world": {"seed": seed, "setup": setup, "before": before}}
        turn = _next_turn(k, wanted, plan, memory, lambda spec=spec: world_for(spec), rng, phrasing, frames_at)
        if turn is None:
            return None
        intent, slots, extra, text = turn
        _merge_setup(setup, extra)
        task = {"intent": intent, "split": split, "slots": slots,
                "world": {"seed": seed, "setup": setup, "before": before}}
        steps, final = _run(world_for(task), task)
        record = {"intent": intent, "domain": _domain(intent, slots), "instruction": text, "slots": slots,
                  "gold_actions": [c.to_dict() for c, _ in steps] + [final.to_dict()], "outputs": final.outputs}
        if intent in tasks.OUTSIDE_INTENTS or intent == "closing":
            record["no_tools"] = True
        messages += turn_messages(record, steps, final)
        if count_tokens(messages) > max_tokens:
            break
        remember(memory, k, intent, slots, steps)
        done.append(record)
        before = before + [c.to_dict() for c, _ in steps]
    if not done or (plan and len(done) < len(plan)):
        return None
    conversation = {"id": f"conv-{split}-{phrasing}-{seed}", "split": split, "phrasing": phrasing,
                    "world": {"seed": seed, "setup": setup}, "turns": done}
    return conversation if replays(conversation) else None


def _domain(intent: str, slots: dict[str, Any]) -> str:
    if intent in tasks.OUTSIDE_INTENTS or intent == "closing":
        return "outside"
    if "asked" in slots:                   # ask_missing, follow_supply
        return DOMAIN_OF[slots["asked"]]
    if intent.startswith("follow_"):
        return "office" if any(w in intent for w in ("invoice", "course", "activity", "sum", "unpaid")) else "shop"
    return DOMAIN_OF[intent]


def _next_turn(k: int, wanted: int, plan: list | None, memory: Memory, live, rng: random.Random,
               phrasing: str, frames_at: int) -> tuple[str, dict[str, Any], dict[str, Any], str] | None:
    """(intent, slots, setup additions, instruction) of request k, or None. `live()` builds the
    world as request k finds it. A plan entry is an intent, or a hand-written request
    (handwritten.py): {"intent", "text", "where", "asked"}."""
    if plan and isinstance(plan[k], dict):
        return _written_turn(plan[k], k, memory, live(), rng)
    options = [plan[k]] if plan else None
    if options is None:
        follow = [i for i in followups.FOLLOW_INTENTS if i != "closing"]
        rng.shuffle(follow)
        follow.sort(key=lambda i: i not in POINT_AT_LAST)      # what the last answer opened comes first
        if k == wanted - 1 and k > 0 and rng.random() < CLOSING_SHARE:
            options = ["closing"]
        elif k > 0 and rng.random() < FOLLOW_UP_SHARE:
            options = follow
        pool = FRESH_INTENTS + OPENERS + (tasks.OUTSIDE_INTENTS if phrasing != "template" else ())
        options = (options or []) + [rng.choice(pool) for _ in range(6)]
    for intent in options:
        extra: dict[str, Any] = {}
        if intent in followups.FRAMES:
            frame = rng.choice(followups.FRAMES[intent][frames_at])
            slots = resolve(intent, frame, memory, live(), extra, k, rng)
            if slots is None:
                continue
            text = follow_up_text(intent, frame, slots, rng)
        else:
            made = fresh(intent, memory, live(), rng, phrasing)
            if made is None:
                continue
            slots, extra, text = made
            if k > 0:
                text = rng.choice(followups.HELDOUT_THANKS_OPENERS if frames_at else followups.THANKS_OPENERS) + text
        return intent, slots, extra, text
    return None


def _written_turn(entry: dict[str, Any], k: int, memory: Memory, world: World, rng: random.Random
                  ) -> tuple[str, dict[str, Any], dict[str, Any], str] | None:
    """A hand-written request: its text's placeholders filled from the slots the scenario (or,
    for a follow-up, the history) gives. What the text says in words (a status, "one cap") is
    `where`: a follow-up takes it as its slots; a new request whose draw disagrees is None."""
    intent, text, where = entry["intent"], entry["text"], entry.get("where", {})
    extra: dict[str, Any] = {}
    if intent.startswith("follow_") or intent == "closing":
        slots = resolve(intent, text, memory, world, extra, k, rng)
        if slots is None:
            return None
        slots.update(where)
        if "status" in where:
            slots["which"] = f"{where['status']} " if where["status"] else ""
    else:
        made = fresh(intent, memory, world, rng, "train", entry.get("asked", ""))   # its own words replace these
        if made is None:
            return None
        slots, extra, _ = made
        if any(slots.get(key) != value for key, value in where.items()):
            return None
        if "qty" in slots and (slots["qty"] > 1) != ("{qty" in text):    # "a cap" is one, "{qty} caps" more
            return None
    return intent, slots, extra, fill(text, slots)


def fill(text: str, slots: dict[str, Any]) -> str:
    """A hand-written request's placeholders: the slots, and a few surface forms of them."""
    values = dict(slots)
    if "style" in slots:
        values["styles"] = entities.plural(slots["style"])
    if "qty" in slots:
        values["qty_word"] = grammar.NUMBER_WORDS[slots["qty"]] if slots["qty"] < 10 else str(slots["qty"])
    if "name" in slots:
        values["first"] = slots["name"].split()[0]
    if "amounts" in slots:
        shown = [str(a) for a in slots["amounts"]]
        values.update(amounts=", ".join(shown[:-1]) + " and " + shown[-1], amounts_plus=" + ".join(shown),
                      amounts_list=", ".join(shown), amounts_lines=" / ".join(shown))
    return text.format(**values)


def turn_task(conversation: dict[str, Any], k: int) -> dict[str, Any]:
    """Request k as a task for the grader and the oracle: its world starts where the gold calls
    of requests 0..k-1 left it."""
    before = [a for turn in conversation["turns"][:k] for a in turn["gold_actions"] if a["name"] != FINISH]
    turn = conversation["turns"][k]
    return {**turn, "id": f"{conversation['id']}.{k}", "split": conversation["split"],
            "conversation": conversation["id"], "world": {**conversation["world"], "before": before}}


def replays(conversation: dict[str, Any]) -> bool:
    """Whether every request's gold, replayed on the finished setup, is the one recorded."""
    world = world_for({"split": conversation["split"], "world": conversation["world"]})
    for k, turn in enumerate(conversation["turns"]):
        steps, final = _run(world, turn_task(conversation, k))
        actions = [c.to_dict() for c, _ in steps] + [final.to_dict()]
        if actions != turn["gold_actions"] or final.outputs != turn["outputs"]:
            return False
    return True


def conversation_messages(conversation: dict[str, Any]) -> list[dict[str, str]]:
    """The gold chat of a whole conversation: each request, its calls and replies, its answer."""
    world = world_for({"split": conversation["split"], "world": conversation["world"]})
    messages: list[dict[str, str]] = []
    for k, turn in enumerate(conversation["turns"]):
        steps, final = _run(world, turn_task(conversation, k))
        messages += turn_messages(turn, steps, final)
    return messages


def generate(split: str, n: int, seed: int, phrasing: str = "train", turns: tuple[int, int] | None = None
             ) -> list[dict[str, Any]]:
    """n conversations; `turns` = (fewest, most) requests, else TURN_WEIGHTS."""
    rng = random.Random(f"conversations:{split}:{phrasing}:{seed}")
    out: list[dict[str, Any]] = []
    while len(out) < n:
        wanted = rng.randint(*turns) if turns else None
        conversation = draw(split, rng.getrandbits(31), phrasing, wanted)
        if conversation is not None and (not turns or len(conversation["turns"]) >= turns[0]):
            out.append(conversation)
    return out
