"""The oracle: for each intent a policy that reads the task's slots and the tool responses
and picks the next call, exactly as a perfect agent would. Running it against the world
gives a task's gold trajectory; `OracleModel` speaks it as text, so the same policy can
stand in for a model in the agent loop (and must then score 100 % under the grader).

A policy is a generator: it yields `Call`s and is sent each call's response.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from world.format import render_call
from world.start import world_for
from world.templates import ANSWERS, OUTSIDE_OUTPUTS
from world.tools import FINISH, call_tool


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    outputs: list[str] = field(default_factory=list)  # for finish: what the answer must contain

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


Policy = Generator[Call, Any, None]


def finish(answer_key: str, outputs: list[str], **values: Any) -> Call:
    return Call(FINISH, {"answer": ANSWERS[answer_key].format(**values)}, [str(o) for o in outputs])


def exact_matches(hits: Any, slots: dict[str, Any]) -> list[dict[str, Any]]:
    """Search results matching all three of style (the query), colour and size."""
    if not isinstance(hits, list):
        return []
    return [h for h in hits if h.get("color") == slots["color"] and h.get("size") == slots["size"]]


# -- building blocks -------------------------------------------------------------------------
def search(slots: dict[str, Any]) -> Generator[Call, Any, Any]:
    return (yield Call("search_products", {"query": slots["style"], "color": slots["color"], "size": slots["size"]}))


def add_first_in_stock(slots: dict[str, Any], hits: Any) -> Generator[Call, Any, dict | None]:
    """Try the exact matches in listed order; an out-of-stock reply moves on to the next."""
    for item in exact_matches(hits, slots):
        reply = yield Call("add_to_cart", {"product_id": item["id"], "size": slots["size"], "quantity": slots["qty"]})
        if isinstance(reply, dict) and reply.get("ok"):
            return item
    return None


def checkout(slots: dict[str, Any]) -> Generator[Call, Any, Any]:
    return (yield Call("checkout_guest", {"name": slots["name"], "email": slots["email"], "address": slots["address"]}))


def customer(slots: dict[str, Any]) -> Generator[Call, Any, Any]:
    return (yield Call("get_customer", {"name": slots["name"]}))


# -- one policy per intent -------------------------------------------------------------------
def shop_find(slots: dict[str, Any]) -> Policy:
    item = exact_matches((yield from search(slots)), slots)[0]
    yield finish("shop_find", [item["id"], item["price"]], id=item["id"], price=item["price"])


def shop_add(slots: dict[str, Any]) -> Policy:
    item = yield from add_first_in_stock(slots, (yield from search(slots)))
    yield finish(slots["intent"], [], qty=slots["qty"], id=item["id"], size=slots["size"])


def shop_near_miss(slots: dict[str, Any]) -> Policy:
    hits = yield from search(slots)
    assert not exact_matches(hits, slots), "a near-miss scenario has no exact match"
    yield finish("shop_near_miss", ["not available"], color=slots["color"], style=slots["style"], size=slots["size"])


def shop_not_stocked(slots: dict[str, Any]) -> Policy:
    """A style the shop does not stock (shop_absent) or never sells (shop_unknown): the search
    finds nothing, and the near miss's sentence must name the style asked for (an answer about
    some other style is no honest one)."""
    hits = yield from search(slots)
    assert hits == [], "nothing of a style the shop does not stock is found"
    yield finish("shop_near_miss", ["not available", slots["style"]], color=slots["color"], style=slots["style"],
                 size=slots["size"])


def shop_checkout(slots: dict[str, Any]) -> Policy:
    order = yield from checkout(slots)
    yield finish(slots["intent"], [order["order"]], order=order["order"], total=order["total"])


def shop_buy(slots: dict[str, Any]) -> Policy:
    yield from add_first_in_stock(slots, (yield from search(slots)))
    yield from shop_checkout(slots)


def shop_missing_info(slots: dict[str, Any]) -> Policy:
    yield finish(slots["intent"], [slots["missing"]], missing=slots["missing"])


def shop_cart_total(slots: dict[str, Any]) -> Policy:
    cart = yield Call("view_cart", {})
    yield finish("shop_cart_total", [cart["total"]], total=cart["total"])


def office_customer(slots: dict[str, Any]) -> Policy:
    found = yield from customer(slots)
    yield finish("office_customer", [found["id"], found["email"]], name=slots["name"], **found)


def office_invoice(slots: dict[str, Any], customer_id: str | None = None) -> Policy:
    customer_id = customer_id or slots["customer_id"]
    made = yield Call("create_invoice", {"customer_id": customer_id, "amount": slots["amount"],
                                         "description": slots["description"]})
    yield finish(slots["intent"], [made["id"]], invoice=made["id"], customer_id=customer_id)


def office_invoice_by_name(slots: dict[str, Any]) -> Policy:
    found = yield from customer(slots)
    yield from office_invoice(slots, found["id"])


def find_invoices(slots: dict[str, Any]) -> Generator[Call, Any, Any]:
    found = yield from customer(slots)
    args = {"customer_id": found["id"]}
    if slots.get("status"):
        args["status"] = slots["status"]
    return (yield Call("find_invoices", args))


def office_find_invoices(slots: dict[str, Any]) -> Policy:
    ids = [inv["id"] for inv in (yield from find_invoices(slots))]
    if ids:
        yield finish("office_find_invoices", ids, ids=", ".join(ids))
    else:
        yield finish("office_find_invoices:none", [], which=slots["which"])


def office_sum(slots: dict[str, Any]) -> Policy:
    total = yield Call("sum_amounts", {"amounts": slots["amounts"]})
    yield finish("office_sum", [total["sum"]], sum=total["sum"])


def office_unpaid_total(slots: dict[str, Any]) -> Policy:
    invoices = yield from find_invoices(slots)
    total = yield Call("sum_amounts", {"amounts": [inv["amount"] for inv in invoices]})
    yield finish("office_unpaid_total", [total["sum"]], name=slots["name"], sum=total["sum"])


def office_course(slots: dict[str, Any]) -> Policy:
    yield Call("register_course", {"student_name": slots["name"], "course_code": slots["course"]})
    yield finish("office_course", [], name=slots["name"], course=slots["course"])


def office_activity(slots: dict[str, Any]) -> Policy:
    reply = yield Call("get_activity_status", {"activity_id": slots["activity"]})
    yield finish("office_activity", [reply["status"]], activity=slots["activity"], status=reply["status"])


def office_missing_info(slots: dict[str, Any]) -> Policy:
    yield finish("office_missing_info", [slots["missing"]], missing=slots["missing"])


def _until_finish(policy: Policy, memo: dict[str, Any]) -> Generator[Call, Any, Call]:
    """Run one goal's policy up to its finish call, which is returned, not yielded. A call
    an earlier goal already made is answered from `memo` (the agent loop vetoes repeats)."""
    call = next(policy)
    while call.name != FINISH:
        key = render_call(call.name, call.arguments)
        if key not in memo:
            memo[key] = yield call
        call = policy.send(memo[key])
    return call


def two_goals(slots: dict[str, Any]) -> Policy:
    """The goals in the order the request gives them; one answer that says both."""
    memo: dict[str, Any] = {}
    done = []
    for goal in slots["goals"]:
        done.append((yield from _until_finish(POLICIES[goal]({**slots, "intent": goal}), memo)))
    yield Call(FINISH, {"answer": " ".join(c.arguments["answer"] for c in done)},
               [o for c in done for o in c.outputs])


# -- follow-ups in a conversation: the slots hold what the earlier turns established -----------
# (world/conversations.py resolves "her", "it", "those" from the history into the slots
# below before the policy runs: a customer's id from an earlier get_customer, a product's id from
# an earlier search, the amounts of the invoices an earlier find_invoices listed.)
def add_known(slots: dict[str, Any]) -> Policy:
    """"Add it" / "two more": the product is known from an earlier turn, no new search."""
    reply = yield Call("add_to_cart", {"product_id": slots["product_id"], "size": slots["size"],
                                       "quantity": slots["qty"]})
    if isinstance(reply, dict) and reply.get("ok"):
        yield finish("shop_add", [], qty=slots["qty"], id=slots["product_id"], size=slots["size"])
    else:
        yield finish("shop_no_more", [slots["product_id"]], id=slots["product_id"], size=slots["size"])


def corrected_search(slots: dict[str, Any]) -> Policy:
    """A correction ("no, size M"): the earlier request again with the corrected value, a look
    or (slots["act"]) an add."""
    hits = yield from search(slots)
    matches = exact_matches(hits, slots)
    if matches and not slots["act"]:
        first = matches[0]
        yield finish("shop_find", [first["id"], first["price"]], id=first["id"], price=first["price"])
        return
    item = (yield from add_first_in_stock(slots, hits)) if matches else None
    if item is not None:
        yield finish("shop_add", [], qty=slots["qty"], id=item["id"], size=slots["size"])
    elif matches:
        yield finish("shop_no_more", [matches[0]["id"]], id=matches[0]["id"], size=slots["size"])
    else:
        yield finish("shop_near_miss", ["not available"], color=slots["color"], style=slots["style"],
                     size=slots["size"])


def known_invoices(slots: dict[str, Any]) -> Policy:
    """"And her invoices?": the customer's id is known from an earlier turn."""
    args = {"customer_id": slots["customer_id"], **({"status": slots["status"]} if slots.get("status") else {})}
    ids = [inv["id"] for inv in (yield Call("find_invoices", args))]
    if ids:
        yield finish("office_find_invoices", ids, ids=", ".join(ids))
    else:
        yield finish("office_find_invoices:none", [], which=slots["which"])


def known_unpaid_total(slots: dict[str, Any]) -> Policy:
    invoices = yield Call("find_invoices", {"customer_id": slots["customer_id"], "status": "unpaid"})
    if not invoices:    # nothing to add up (sum_amounts takes at least one amount)
        yield finish("office_unpaid_total", [0], name=slots["name"], sum=0)
        return
    total = yield Call("sum_amounts", {"amounts": [inv["amount"] for inv in invoices]})
    yield finish("office_unpaid_total", [total["sum"]], name=slots["name"], sum=total["sum"])


def ask_missing(slots: dict[str, Any]) -> Policy:
    """A request that leaves out what its tool needs ("add a red cap", no size): ask for it."""
    yield finish("ask_missing", slots["missing_outputs"], missing=slots["missing"])


def closing(slots: dict[str, Any]) -> Policy:
    """"Thanks!" / "that's all": no tool, a short reply."""
    yield finish("closing", ["welcome"])


def outside(slots: dict[str, Any]) -> Policy:
    """A request outside the world: no tool, one honest sentence."""
    yield finish(f"outside_{slots['kind']}", list(OUTSIDE_OUTPUTS[slots["kind"]]))


POLICIES = {
    "shop_find": shop_find, "shop_add": shop_add, "shop_near_miss": shop_near_miss,
    "shop_absent": shop_not_stocked, "shop_unknown": shop_not_stocked,
    "shop_out_of_stock": shop_add, "shop_checkout": shop_checkout, "shop_missing_info": shop_missing_info,
    "shop_cart_total": shop_cart_total, "shop_buy": shop_buy,
    "office_customer": office_customer, "office_invoice": office_invoice,
    "office_invoice_by_name": office_invoice_by_name, "office_find_invoices": office_find_invoices,
    "office_sum": office_sum, "office_unpaid_total": office_unpaid_total, "office_course": office_course,
    "office_activity": office_activity, "office_missing_info": office_missing_info,
    # follow-ups (world/conversations.py FOLLOW_UPS says what each one refers to)
    "follow_add": add_known, "follow_add_more": add_known, "follow_cart_total": shop_cart_total,
    "follow_size": corrected_search, "follow_checkout": shop_checkout,
    "follow_invoice": office_invoice, "follow_invoice_amount": office_invoice_by_name,
    "follow_find_invoices": known_invoices, "follow_unpaid_total": known_unpaid_total,
    "follow_sum_those": office_sum, "follow_course": office_course, "follow_course_same": office_course,
    "follow_course_code": office_course, "follow_activity": office_activity, "closing": closing,
    "ask_missing": ask_missing,
}


# a follow-up answers in the words of the request it completes
ANSWER_KEY = {"follow_checkout": "shop_checkout", "follow_invoice": "office_invoice",
              "follow_invoice_amount": "office_invoice_by_name"}


def policy_for(task: dict[str, Any]) -> Policy:
    intent = task["intent"]
    if "goals" in task["slots"]:
        return two_goals(task["slots"])
    if intent.startswith("outside_"):
        return outside(task["slots"])
    if intent == "follow_supply":       # the detail an ask_missing answer asked for: the request runs now
        asked = task["slots"]["asked"]
        return POLICIES[asked]({**task["slots"], "intent": asked})
    return POLICIES[intent]({**task["slots"], "intent": ANSWER_KEY.get(intent, intent)})


def solve(task: dict[str, Any]) -> tuple[list[tuple[Call, Any]], Call]:
    """Run the oracle against the task's world: [(call, response)] up to, and the finish call."""
    world = world_for(task)
    policy = policy_for(task)
    steps: list[tuple[Call, Any]] = []
    call = next(policy)
    while call.name != FINISH:
        reply = call_tool(world, call.name, call.arguments)
        steps.append((call, reply))
        call = policy.send(reply)
    return steps, call


class OracleModel:
    """The oracle as a text model for `world.agent.run_episode(generate_fn=...)`: reads the
    last tool response from the chat, answers with the next call rendered canonically."""

    def __init__(self, task: dict[str, Any]):
        self.policy = policy_for(task)
        self.started = False

    def __call__(self, messages: list[dict[str, str]]) -> str:
        if not self.started:
            self.started = True
            call = next(self.policy)
        else:
            call = self.policy.send(json.loads(messages[-1]["content"]))
        return render_call(call.name, call.arguments)
