"""The world a Chat conversation (and a /v1 call) starts in when the message is no held-out
task's instruction: the held-out background world with every style stocked (app/conversation_world.py),
and stored chats reopen in the world they had."""

import json

from app.chat import stored_world
from app.conversation_world import DEFAULT_WORLD, PER_STYLE, world_from_spec, world_spec_for
from world import entities
from world.state import make_world
from world.tools import call_tool

OLD_SPEC = {"seed": 0, "split": "heldout", "setup": {}}     # what chats stored before every style was stocked


def _rows(world, style):
    return [row for size in entities.SIZES
            for row in call_tool(world, "search_products", {"query": style, "size": size})]


def test_every_style_is_found_in_several_colours_and_sizes():
    world = world_from_spec(DEFAULT_WORLD)
    for style in entities.STYLES:
        rows = _rows(world, style)
        assert len({r["color"] for r in rows}) >= PER_STYLE and len({r["size"] for r in rows}) >= 2, style
        assert {r["id"] for r in rows} <= set(world.products)
    # the bare background world lacks some styles: the setup is what stocks them
    assert any(_rows(world_from_spec(OLD_SPEC), style) == [] for style in entities.STYLES)


def test_the_setup_keeps_the_background_and_the_worlds_rules():
    background, world = make_world(0, "heldout"), world_from_spec(DEFAULT_WORLD)
    assert all(world.products[pid] == p for pid, p in background.products.items())
    assert world.customers == background.customers and world.invoices == background.invoices
    for pid, product in world.products.items():
        assert entities.split_of("product", pid) == "heldout" and product["style"] in entities.STYLES
        assert set(product["stock"]) <= set(entities.sizes_for(product["color"], "heldout")) and product["stock"]
        assert all(isinstance(n, int) and n > 0 for n in product["stock"].values())
    # fresh ids go on after the setup's: a new product never takes one of them
    assert world.new_id("product") not in world.products


def test_a_conversation_gets_a_copy_of_the_default_spec():
    spec = world_spec_for("hello, who are you?")
    assert spec == DEFAULT_WORLD
    spec["setup"]["products"].clear()
    assert DEFAULT_WORLD["setup"]["products"]


def _conversation(spec, calls):
    return {"meta": {"world": json.loads(json.dumps(spec))},
            "turns": [{"tool_calls": [{"name": n, "arguments": a, "error_type": None} for n, a in calls]}]}


def test_stored_chats_reopen_in_the_world_they_had():
    old = stored_world(_conversation(OLD_SPEC, [("add_to_cart", {"product_id": "P9J7", "size": "M", "quantity": 1})]))
    assert old.products == make_world(0, "heldout").products and old.cart == [["P9J7", "M", 1]]
    assert call_tool(old, "search_products", {"query": "jacket"}) == []
    jacket = next(pid for pid, p in world_from_spec(DEFAULT_WORLD).products.items() if p["style"] == "jacket")
    size = next(iter(world_from_spec(DEFAULT_WORLD).products[jacket]["stock"]))
    new = stored_world(_conversation(DEFAULT_WORLD, [("add_to_cart", {"product_id": jacket, "size": size,
                                                                      "quantity": 1})]))
    assert new.products == world_from_spec(DEFAULT_WORLD).products and new.cart == [[jacket, size, 1]]
