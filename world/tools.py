"""The tool registry: WebMCP-shaped definitions (name, description, inputSchema,
annotations.readOnlyHint), each with a Python function over a `World`.

One registry feeds the prompt text, the OpenAI-style `tools[]`, the parser's validation and
the canonical argument order (= the order of `inputSchema.properties`). Tool responses are
compact: only the fields a next step needs. A domain failure (unknown id, out of stock) is a
response `{"error": "..."}`, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.tool_calls import openai_tools as engine_openai_tools
from world import entities
from world.state import World

SEARCH_LIMIT = 4


def _string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def _schema(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


TOOLS: list[dict[str, Any]] = [
    {"name": "search_products", "description": "Search the shop by style, optionally colour and size.",
     "inputSchema": _schema({"query": _string(minLength=1), "color": _string(enum=list(entities.COLORS)),
                             "size": _string(enum=list(entities.SIZES))}, ("query",)),
     "annotations": {"readOnlyHint": True}},
    {"name": "add_to_cart", "description": "Put a quantity of a product in one size into the cart.",
     "inputSchema": _schema({"product_id": _string(), "size": _string(enum=list(entities.SIZES)),
                             "quantity": {"type": "integer", "minimum": 1, "maximum": 9}},
                            ("product_id", "size", "quantity")),
     "annotations": {"readOnlyHint": False}},
    {"name": "view_cart", "description": "List the cart and its total.",
     "inputSchema": _schema({}, ()), "annotations": {"readOnlyHint": True}},
    {"name": "checkout_guest", "description": "Place an order for the cart as a guest.",
     "inputSchema": _schema({"name": _string(minLength=1), "email": _string(minLength=3),
                             "address": _string(minLength=1)}, ("name", "email", "address")),
     "annotations": {"readOnlyHint": False}},
    {"name": "get_customer", "description": "Look up a customer by full name.",
     "inputSchema": _schema({"name": _string(minLength=1)}, ("name",)),
     "annotations": {"readOnlyHint": True}},
    {"name": "create_invoice", "description": "Create an unpaid invoice for a customer id.",
     "inputSchema": _schema({"customer_id": _string(), "amount": {"type": "number", "exclusiveMinimum": 0},
                             "description": _string(minLength=1)}, ("customer_id", "amount", "description")),
     "annotations": {"readOnlyHint": False}},
    {"name": "find_invoices", "description": "List a customer's invoices, optionally only paid or unpaid.",
     "inputSchema": _schema({"customer_id": _string(), "status": _string(enum=list(entities.INVOICE_STATUSES))},
                            ("customer_id",)),
     "annotations": {"readOnlyHint": True}},
    {"name": "sum_amounts", "description": "Add up a list of amounts.",
     "inputSchema": _schema({"amounts": {"type": "array", "items": {"type": "number"}, "minItems": 1}},
                            ("amounts",)),
     "annotations": {"readOnlyHint": True}},
    {"name": "register_course", "description": "Register a student for a course code.",
     "inputSchema": _schema({"student_name": _string(minLength=1), "course_code": _string()},
                            ("student_name", "course_code")),
     "annotations": {"readOnlyHint": False}},
    {"name": "get_activity_status", "description": "Get the status of an activity id.",
     "inputSchema": _schema({"activity_id": _string()}, ("activity_id",)),
     "annotations": {"readOnlyHint": True}},
    {"name": "finish", "description": "End the task with the final answer for the user.",
     "inputSchema": _schema({"answer": _string()}, ("answer",)),
     "annotations": {"readOnlyHint": True}},
]
TOOLS_BY_NAME: dict[str, dict[str, Any]] = {t["name"]: t for t in TOOLS}
FINISH = "finish"


def argument_order(name: str) -> list[str]:
    """Canonical key order of a tool's arguments: the order of its schema's properties."""
    return list(TOOLS_BY_NAME[name]["inputSchema"]["properties"])


def _number(amount: float) -> int | float:
    """Amounts as the model reads them: 120, not 120.0; at most two decimals."""
    return int(amount) if float(amount).is_integer() else round(float(amount), 2)


# -- shop ------------------------------------------------------------------------------------
def _style_matches(style: str, query: str) -> bool:
    words = entities.in_catalogue_words(query).split()
    return style in words or entities.plural(style) in words


def search_products(world: World, query: str, color: str | None = None, size: str | None = None) -> list[dict]:
    """Variants (product x size) whose style is in the query, at most one of colour / size off:
    near misses are listed next to the exact match, in id order. Each row names its colour and
    size before its id: a causal model reads a row left to right, so it can then find the row
    that matches the request and copy the id that follows, instead of having to carry every
    id forward to the colour that comes after it (what the order changed for Sprout:
    models/README.md, "How they were trained")."""
    wanted = (color is not None) + (size is not None)
    scored = []
    for pid, product in world.products.items():
        if not _style_matches(product["style"], query):
            continue
        for stocked in product["stock"]:
            score = (product["color"] == color) + (stocked == size)
            if score >= wanted - 1:
                scored.append((-score, pid, entities.SIZES.index(stocked), stocked, product))
    top = sorted(sorted(scored)[:SEARCH_LIMIT], key=lambda row: (row[1], row[2]))
    return [{"color": product["color"], "size": stocked, "id": pid, "price": product["price"]}
            for _, pid, _, stocked, product in top]


def add_to_cart(world: World, product_id: str, size: str, quantity: int) -> dict:
    product = world.products.get(product_id)
    if product is None:
        return {"error": "unknown product"}
    if size not in product["stock"]:
        return {"error": "size not available"}
    in_cart = sum(q for pid, s, q in world.cart if pid == product_id and s == size)
    if product["stock"][size] < in_cart + quantity:
        return {"error": "out of stock"}
    for line in world.cart:
        if line[0] == product_id and line[1] == size:
            line[2] += quantity
            break
    else:
        world.cart.append([product_id, size, quantity])
    return {"ok": True}


def view_cart(world: World) -> dict:
    return {"items": [{"id": pid, "size": s, "qty": q} for pid, s, q in world.cart], "total": world.cart_total()}


def checkout_guest(world: World, name: str, email: str, address: str) -> dict:
    if not world.cart:
        return {"error": "cart is empty"}
    if "@" not in email:
        return {"error": "invalid email"}
    order = {"id": world.new_id("order"), "name": name, "email": email, "address": address,
             "items": [list(line) for line in world.cart], "total": world.cart_total()}
    world.orders.append(order)
    world.cart.clear()
    return {"order": order["id"], "total": order["total"]}


# -- office ----------------------------------------------------------------------------------
def get_customer(world: World, name: str) -> dict:
    for cid, record in world.customers.items():
        if record["name"].lower() == name.strip().lower():
            return {"id": cid, "email": record["email"]}
    return {"error": "no such customer"}


def create_invoice(world: World, customer_id: str, amount: float, description: str) -> dict:
    if customer_id not in world.customers:
        return {"error": "unknown customer"}
    invoice_id = world.new_id("invoice")
    world.invoices[invoice_id] = {"customer": customer_id, "amount": _number(amount),
                                  "status": "unpaid", "description": description}
    return {"id": invoice_id}


def find_invoices(world: World, customer_id: str, status: str | None = None) -> list[dict] | dict:
    if customer_id not in world.customers:
        return {"error": "unknown customer"}
    found = sorted((k, v) for k, v in world.invoices.items()
                   if v["customer"] == customer_id and status in (None, v["status"]))
    if status is None:  # the filter already says the status otherwise
        return [{"id": k, "amount": v["amount"], "status": v["status"]} for k, v in found]
    return [{"id": k, "amount": v["amount"]} for k, v in found]


def sum_amounts(world: World, amounts: list[float]) -> dict:
    return {"sum": _number(round(sum(amounts), 2))}


def register_course(world: World, student_name: str, course_code: str) -> dict:
    seats = world.courses.get(course_code)
    if seats is None:
        return {"error": "unknown course"}
    if [student_name, course_code] in world.registrations:
        return {"error": "already registered"}
    if seats < 1:
        return {"error": "course is full"}
    world.courses[course_code] = seats - 1
    world.registrations.append([student_name, course_code])
    return {"ok": True}


def get_activity_status(world: World, activity_id: str) -> dict:
    status = world.activities.get(activity_id)
    return {"error": "unknown activity"} if status is None else {"status": status}


def finish(world: World, answer: str) -> dict:
    return {"ok": True}


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "search_products": search_products, "add_to_cart": add_to_cart, "view_cart": view_cart,
    "checkout_guest": checkout_guest, "get_customer": get_customer, "create_invoice": create_invoice,
    "find_invoices": find_invoices, "sum_amounts": sum_amounts, "register_course": register_course,
    "get_activity_status": get_activity_status, "finish": finish,
}
assert set(FUNCTIONS) == set(TOOLS_BY_NAME), "every registered tool needs a function"


def call_tool(world: World, name: str, arguments: dict[str, Any]) -> Any:
    """Run a validated call (see format.parse_call) against the world; returns the response."""
    return FUNCTIONS[name](world, **arguments)


def openai_tools() -> list[dict[str, Any]]:
    """The registry as OpenAI-style `tools[]`."""
    return engine_openai_tools(TOOLS)
