"""Which registry tools each web app offers, and the state a page reads to draw itself.

A page registers its tools with the schemas served from here (the registry's own dicts), never
typed again in JavaScript, with what WebMCP lets a page say beyond the registry: which tools change
the world (consequentialHint), whose answers carry text people typed (untrustedContentHint), and
what each field of the declarative checkout form means (toolparamdescription, from the schema's
property descriptions). `finish` belongs to the agent, not to a page: it ends the agent's
turn and changes nothing a page could show.
"""

from __future__ import annotations

from typing import Any

from world.state import World
from world.tools import FINISH, TOOLS, view_cart

APP_TOOLS: dict[str, tuple[str, ...]] = {
    "shop": ("search_products", "add_to_cart", "view_cart", "checkout_guest"),
    "office": ("get_customer", "create_invoice", "find_invoices", "sum_amounts", "register_course",
               "get_activity_status"),
}
assert {n for names in APP_TOOLS.values() for n in names} | {FINISH} == {t["name"] for t in TOOLS}, \
    "every registry tool but finish belongs to one app"
# Titles for people (WebMCP's `title`); the registry holds what a model reads.
TITLES = {"search_products": "Search the catalogue", "add_to_cart": "Add to cart", "view_cart": "Show the cart",
          "checkout_guest": "Guest checkout", "get_customer": "Find a customer", "create_invoice": "New invoice",
          "find_invoices": "A customer's invoices", "sum_amounts": "Add up amounts",
          "register_course": "Register for a course", "get_activity_status": "Activity status"}


# Tools that change the world: an agent's host may ask the person first.
CONSEQUENTIAL = frozenset({"add_to_cart", "checkout_guest", "create_invoice", "register_course"})
# Tools whose answer holds text a person typed (a customer's email): data for the model, never orders.
UNTRUSTED_ANSWERS = frozenset({"get_customer"})
# The checkout form's fields, for the agent (the form's toolparamdescription attributes).
PARAMETER_DESCRIPTIONS = {"checkout_guest": {"name": "The buyer's full name.",
                                             "email": "Where the order confirmation is sent.",
                                             "address": "Where the order is delivered."}}


def page_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A registry tool as a page registers it: its title, the WebMCP hints, and its fields' descriptions."""
    name = tool["name"]
    schema = tool["inputSchema"]
    described = PARAMETER_DESCRIPTIONS.get(name, {})
    if described:
        properties = {key: {**value, "description": described[key]} if key in described else value
                      for key, value in schema["properties"].items()}
        schema = {**schema, "properties": properties}
    return {**tool, "title": TITLES[name], "inputSchema": schema,
            "annotations": {**tool["annotations"], "consequentialHint": name in CONSEQUENTIAL,
                            "untrustedContentHint": name in UNTRUSTED_ANSWERS}}


def app_of(tool_name: str) -> str | None:
    return next((app for app, names in APP_TOOLS.items() if tool_name in names), None)


def tools_of(app: str) -> list[dict[str, Any]]:
    """The registry's definitions of an app's tools, in registry order, as its page registers them."""
    names = APP_TOOLS[app]
    return [page_tool(t) for t in TOOLS if t["name"] in names]


def page_state(world: World, app: str) -> dict[str, Any]:
    """What a page shows besides tool results: the catalogue and cart, or the office's records."""
    if app == "shop":
        products = [{"id": pid, "style": p["style"], "color": p["color"], "price": p["price"],
                     "stock": dict(p["stock"])} for pid, p in sorted(world.products.items())]
        return {"products": products, "cart": view_cart(world),
                "orders": [{"id": o["id"], "total": o["total"]} for o in world.orders]}
    return {
        "customers": [{"id": cid, **c} for cid, c in sorted(world.customers.items())],
        "invoices": [{"id": iid, **v} for iid, v in sorted(world.invoices.items())],
        "courses": [{"code": code, "seats": seats} for code, seats in sorted(world.courses.items())],
        "registrations": [list(r) for r in world.registrations],
        "activities": [{"id": aid, "status": status} for aid, status in sorted(world.activities.items())],
    }
