"""world: the tool registry, the seeded world state and the tool functions."""

import jsonschema
import pytest

from world import entities
from world.format import full_system_prompt, render_response
from world.start import world_for
from world.state import make_world
from world.tools import FUNCTIONS, TOOLS, argument_order, call_tool, openai_tools

EXPECTED = {
    "search_products": (["query", "color", "size"], ["query"], True),
    "add_to_cart": (["product_id", "size", "quantity"], ["product_id", "size", "quantity"], False),
    "view_cart": ([], [], True),
    "checkout_guest": (["name", "email", "address"], ["name", "email", "address"], False),
    "get_customer": (["name"], ["name"], True),
    "create_invoice": (["customer_id", "amount", "description"], ["customer_id", "amount", "description"], False),
    "find_invoices": (["customer_id", "status"], ["customer_id"], True),
    "sum_amounts": (["amounts"], ["amounts"], True),
    "register_course": (["student_name", "course_code"], ["student_name", "course_code"], False),
    "get_activity_status": (["activity_id"], ["activity_id"], True),
    "finish": (["answer"], ["answer"], True),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_registry_entry_is_webmcp_shaped(name):
    tool = next(t for t in TOOLS if t["name"] == name)
    order, required, read_only = EXPECTED[name]
    assert set(tool) == {"name", "description", "inputSchema", "annotations"}
    jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
    assert argument_order(name) == order and tool["inputSchema"]["required"] == required
    assert tool["annotations"]["readOnlyHint"] is read_only
    assert name in FUNCTIONS


def test_prompt_and_openai_tools_come_from_the_registry():
    tools = openai_tools()
    assert [t["function"]["name"] for t in tools] == list(EXPECTED)
    assert tools[1]["function"]["parameters"] is TOOLS[1]["inputSchema"]
    prompt = full_system_prompt()
    assert all(f'"name":"{name}"' in prompt for name in EXPECTED)


@pytest.mark.parametrize("split", entities.SPLITS)
def test_world_is_deterministic_and_stays_in_its_split(split):
    a, b = make_world(7, split), make_world(7, split)
    assert a.products == b.products and a.customers == b.customers and a.invoices == b.invoices
    assert make_world(8, split).products != a.products
    assert all(entities.split_of("product", pid) == split for pid in a.products)
    assert all(entities.split_of("customer", cid) == split and entities.split_of("name", c["name"]) == split
               for cid, c in a.customers.items())
    assert all(entities.split_of("invoice", i) == split for i in a.invoices)
    if split == "train":
        assert all(entities.split_of("combo", f"{p['color']}|{s}") == "train"
                   for p in a.products.values() for s in p["stock"])


def test_split_pools_are_disjoint_and_both_non_empty():
    for kind in entities.ENTITY_KINDS:
        train, held = set(entities.pool(kind, "train")), set(entities.pool(kind, "heldout"))
        assert train and held and not train & held, kind


def _shop_world():
    setup = {"products": {
        "P1A1": {"style": "hoodie", "color": "blue", "price": 25, "stock": {"M": 1, "L": 3}},
        "P2B2": {"style": "hoodie", "color": "red", "price": 30, "stock": {"L": 0}},
        "P3C3": {"style": "hoodie", "color": "green", "price": 20, "stock": {"S": 4}},
        "P4D4": {"style": "cap", "color": "blue", "price": 9, "stock": {"L": 4}},
    }}
    return world_for({"split": "train", "world": {"seed": 1, "setup": setup}})


def test_search_lists_near_misses_in_id_order():
    world = _shop_world()
    hits = call_tool(world, "search_products", {"query": "hoodies", "color": "blue", "size": "L"})
    assert hits == [{"color": "blue", "size": "M", "id": "P1A1", "price": 25},   # size off
                    {"color": "blue", "size": "L", "id": "P1A1", "price": 25},   # exact
                    {"color": "red", "size": "L", "id": "P2B2", "price": 30}]    # colour off
    # the fields a row is chosen by come before the id the model copies (dict equality ignores order)
    assert all(list(row) == ["color", "size", "id", "price"] for row in hits)
    assert render_response(hits).startswith('[{"color":"blue","size":"M","id":"P1A1"')
    assert len(call_tool(world, "search_products", {"query": "hoodie"})) == 4  # every hoodie variant
    assert call_tool(world, "search_products", {"query": "scarf"}) == []


def test_cart_and_checkout():
    world = _shop_world()
    assert call_tool(world, "checkout_guest", {"name": "A B", "email": "a@b.c", "address": "1 X St"}) == {
        "error": "cart is empty"}
    out_of_stock = {"error": "out of stock"}
    assert call_tool(world, "add_to_cart", {"product_id": "P2B2", "size": "L", "quantity": 1}) == out_of_stock
    assert call_tool(world, "add_to_cart", {"product_id": "P1A1", "size": "XS", "quantity": 1}) == {
        "error": "size not available"}
    assert call_tool(world, "add_to_cart", {"product_id": "P0Z0", "size": "L", "quantity": 1}) == {
        "error": "unknown product"}
    assert call_tool(world, "add_to_cart", {"product_id": "P1A1", "size": "L", "quantity": 2}) == {"ok": True}
    assert call_tool(world, "add_to_cart", {"product_id": "P1A1", "size": "L", "quantity": 2}) == out_of_stock
    assert call_tool(world, "view_cart", {}) == {"items": [{"id": "P1A1", "size": "L", "qty": 2}], "total": 50}
    order = call_tool(world, "checkout_guest", {"name": "A B", "email": "a@b.c", "address": "1 X St"})
    assert order["total"] == 50 and entities.split_of("order", order["order"]) == "train"
    assert world.cart == [] and world.orders[0]["items"] == [["P1A1", "L", 2]]


def test_office_tools():
    world = make_world(3, "train")
    cid, customer = next(iter(world.customers.items()))
    found = call_tool(world, "get_customer", {"name": customer["name"].upper()})
    assert found == {"id": cid, "email": customer["email"]}
    assert call_tool(world, "get_customer", {"name": "Nobody Here"}) == {"error": "no such customer"}
    made = call_tool(world, "create_invoice", {"customer_id": cid, "amount": 120.0, "description": "audit"})
    assert world.invoices[made["id"]] == {"customer": cid, "amount": 120, "status": "unpaid", "description": "audit"}
    unpaid = call_tool(world, "find_invoices", {"customer_id": cid, "status": "unpaid"})
    assert {"id": made["id"], "amount": 120} in unpaid and all(set(i) == {"id", "amount"} for i in unpaid)
    assert all("status" in i for i in call_tool(world, "find_invoices", {"customer_id": cid}))
    assert call_tool(world, "sum_amounts", {"amounts": [10.25, 20.5, 3]}) == {"sum": 33.75}
    assert call_tool(world, "sum_amounts", {"amounts": [0.1, 0.2]}) == {"sum": 0.3}
    code = next(iter(world.courses))
    assert call_tool(world, "register_course", {"student_name": "Ana Diaz", "course_code": code}) == {"ok": True}
    assert call_tool(world, "register_course", {"student_name": "Ana Diaz", "course_code": code}) == {
        "error": "already registered"}
    assert call_tool(world, "register_course", {"student_name": "Ana Diaz", "course_code": "ZZZ1"}) == {
        "error": "unknown course"}
    aid, status = next(iter(world.activities.items()))
    assert call_tool(world, "get_activity_status", {"activity_id": aid}) == {"status": status}


def test_new_ids_replay_identically():
    a, b = make_world(5, "heldout"), make_world(5, "heldout")
    assert [a.new_id("invoice") for _ in range(3)] == [b.new_id("invoice") for _ in range(3)]
