"""The tab's world as its web pages (app/world_page.py) and the examples written about the world
shown (app/conversation_world.py world_examples)."""

import json
from pathlib import Path

from app.conversation_world import DEFAULT_WORLD, world_examples, world_from_spec
from app.world_page import WorldPages, page_for
from world.tools import call_tool

CARD = json.loads((Path(__file__).parents[2] / "models" / "sprout-bd" / "playground.json").read_text())["examples"]


def test_each_tab_keeps_one_session_and_the_frame_shows_its_current_world():
    pages = WorldPages(limit=2)
    first, second = world_from_spec(DEFAULT_WORLD), world_from_spec(DEFAULT_WORLD)
    html = pages.show(("browser-1", "chat"), first)
    session = pages.session_for(("browser-1", "chat"))
    assert f"/apps/shop/?session={session}&amp;v=" in html and pages.sessions.get(session).world is first
    again = pages.show(("browser-1", "chat"), second)              # New chat: the same session, the new world
    assert pages.session_for(("browser-1", "chat")) == session and pages.sessions.get(session).world is second
    assert again != html                                           # a new stamp: the frame reloads
    assert pages.session_for(("browser-2", "chat")) != session     # another browser, another session
    pages.session_for(("browser-3", "chat"))                       # the oldest key is forgotten past the limit
    assert pages.session_for(("browser-1", "chat")) != session


def test_the_frame_opens_on_the_page_the_call_changed():
    assert page_for(None) == ("shop", "")
    assert page_for({"name": "add_to_cart", "arguments": {}}) == ("shop", "#/cart")
    assert page_for({"name": "checkout_guest", "arguments": {}}, {"order": "O1", "total": 5}) == ("shop", "#/order/O1")
    assert page_for({"name": "checkout_guest", "arguments": {}}, {"error": "cart is empty"}) == ("shop", "")
    assert page_for({"name": "get_customer", "arguments": {}}) == ("office", "")


def test_the_frame_escapes_what_it_is_given():
    html = WorldPages().show(("k", "chat"), world_from_spec(DEFAULT_WORLD),
                             {"name": "checkout_guest"}, {"order": '"><script>x</script>'})
    assert "<script>" not in html and "%22%3E%3Cscript%3E" in html


def test_the_examples_name_only_what_the_world_shown_holds():
    world = world_from_spec(DEFAULT_WORLD)
    written = world_examples(CARD, world)
    assert len(written) == len(CARD) and not set(written) & {e["prompt"] for e in CARD if "Sum" not in e["prompt"]}
    add, look, find, register, owe, total = written
    names = {c["name"] for c in world.customers.values()}
    for sentence, style_at in ((add, "add a "), (find, "Find a ")):
        color, style = sentence.split(style_at)[1].split()[:2]
        size = sentence.split("in size ")[1].split()[0].rstrip(".")
        rows = call_tool(world, "search_products", {"query": style, "color": color, "size": size})
        exact = {r["id"] for r in rows if (r["color"], r["size"]) == (color, size)}
        assert len(exact) == 1, sentence                            # one product in stock answers it
    assert look.removeprefix("Look up customer ").rstrip(".") in names
    student, course = register.removeprefix("Register ").rstrip(".").split(" for ")
    assert student in names and world.courses[course] > 0
    owing = owe.removeprefix("What does ").split(" owe")[0]
    customer = call_tool(world, "get_customer", {"name": owing})
    assert call_tool(world, "find_invoices", {"customer_id": customer["id"], "status": "unpaid"})
    assert total == "Sum these amounts: 923 and 984."               # names nothing of the world: kept


def test_an_example_of_a_kind_not_known_is_left_out_and_plain_text_stays():
    world = world_from_spec(DEFAULT_WORLD)
    assert world_examples([{"prompt": "Do a thing.", "task": "shop_mystery-heldout-1"},
                           {"prompt": "Write a haiku."}], world) == ["Write a haiku."]
