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
from world.state import world_for
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
}


def policy_for(task: dict[str, Any]) -> Policy:
    intent = task["intent"]
    if "goals" in task["slots"]:
        return two_goals(task["slots"])
    if intent.startswith("outside_"):
        return outside(task["slots"])
    return POLICIES[intent]({**task["slots"], "intent": intent})


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
