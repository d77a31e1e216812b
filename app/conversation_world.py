"""The world a conversation with a world-format model (Sprout) acts in, shared by the Chat tab and
the /v1 API: which world it starts from, how many tool steps one answer may take, and what is
said when no answer came."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from world import agent, entities
from world.start import world_for
from world.state import World, make_world, random_product
from world.task_sets import load_heldout_tasks

BACKGROUND = {"seed": 0, "split": "heldout"}
PER_STYLE = 3                 # products of every style in the Chat's world, each in its own colour


def stocked_setup(seed: int = BACKGROUND["seed"], split: str = BACKGROUND["split"]) -> dict[str, Any]:
    """A setup that stocks every style in PER_STYLE colours and two or three sizes each. The
    background world (8 products) leaves half the styles out, so a person exploring the Chat
    would mostly hear "not available". A setup's products replace the background's of their
    style, so the background's own products come along unchanged; the new ones take the world's
    next free ids, colours and sizes of its split."""
    world = make_world(seed, split)
    rng = random.Random(f"chat-world:{seed}:{split}")
    products: dict[str, Any] = {}
    for style in entities.STYLES:
        mine = {pid: p for pid, p in world.products.items() if p["style"] == style}
        colors = [c for c in entities.COLORS if c not in {p["color"] for p in mine.values()}]
        for color in rng.sample(colors, PER_STYLE - len(mine)) if len(mine) < PER_STYLE else []:
            options = entities.sizes_for(color, split)
            chosen = rng.sample(options, min(len(options), rng.randint(2, 3)))
            pid = world.new_id("product")
            world.products[pid] = mine[pid] = random_product(
                rng, split, style, color, tuple(s for s in entities.SIZES if s in chosen))
        products.update(mine)
    return {"products": products}


# Stored with every conversation (app/chat.py), so a chat reopens in the world it had, this
# setup or an older one (a spec stored without products rebuilds the bare background world).
DEFAULT_WORLD = {**BACKGROUND, "setup": stocked_setup()}
MAX_REPLIES = 8            # model replies per answer (tool calls, parse errors, the answer itself)


def speaks_world(backend: Any) -> bool:
    """Whether the model writes its world's agent format natively (every reply a tool call, the
    answer the call finish): Sprout, and fakes that stand in for it."""
    return backend.chat_format == "world"


# what a model reads of the conversation: the rule lives with the agent loop (the benchmark uses it too)
one_request, model_context = agent.one_request, agent.model_context


def world_spec_for(message: str) -> dict[str, Any]:
    """The world a conversation starts in: the held-out task whose instruction `message` is, else
    the held-out background world with every style stocked (DEFAULT_WORLD)."""
    wanted = " ".join(message.split()).lower()
    for task in load_heldout_tasks():
        if " ".join(task["instruction"].split()).lower() == wanted:
            return {"seed": task["world"]["seed"], "split": task["split"], "setup": task["world"].get("setup", {}),
                    "task_id": task["id"]}
    return copy.deepcopy(DEFAULT_WORLD)


def world_from_spec(spec: Mapping[str, Any]) -> World:
    return world_for({"split": spec["split"], "world": {"seed": spec["seed"], "setup": spec.get("setup", {})}})


def no_answer_note(steps_taken: int, early: str = "") -> str:
    """What a person reads when the loop ended without an answer (`early`: why it stopped early)."""
    why = early or f"no answer after {steps_taken} tool steps (the limit is {MAX_REPLIES})"
    return f"(The model gave no answer: {why}.)"


# The card's example kinds (its tasks' kinds, world/tasks.py) written again about a given world,
# in the card's own sentence frames: what the examples name is then what the world shown holds.
def _shop_item(world: World, skip_style: str = "") -> tuple[str, str, str] | None:
    """(colour, style, size) of the first product in id order with two sizes or more, another style than skip_style."""
    for _pid, p in sorted(world.products.items()):
        sizes = [s for s in entities.SIZES if s in p["stock"]]
        if len(sizes) >= 2 and p["style"] != skip_style:
            return p["color"], p["style"], sizes[-1]
    return None


def _example(kind: str, prompt: str, world: World) -> str | None:
    if kind == "office_sum":
        return prompt                                    # names nothing of the world
    customers = sorted(world.customers.items())
    if kind == "shop_add" and (item := _shop_item(world)):
        return f"Please add a {item[0]} {item[1]} in size {item[2]} to the cart."
    if kind == "shop_find" and (first := _shop_item(world)) and (item := _shop_item(world, skip_style=first[1])):
        return f"Find a {item[0]} {item[1]} in size {item[2]}."
    if kind == "office_customer" and customers:
        return f"Look up customer {customers[0][1]['name']}."
    if kind == "office_course" and len(customers) > 1:
        cid, customer = customers[1]
        open_course = next((code for code, seats in sorted(world.courses.items())
                            if seats > 0 and [cid, code] not in [list(r) for r in world.registrations]), None)
        if open_course:
            return f"Register {customer['name']} for {open_course}."
    if kind == "office_unpaid_total":
        owing = {v["customer"] for v in world.invoices.values() if v["status"] == "unpaid"}
        name = next((c["name"] for cid, c in customers if cid in owing), None)
        if name:
            return f"What does {name} owe in unpaid invoices?"
    return None


def world_examples(examples: list[dict[str, Any]], world: World) -> list[str]:
    """The card's examples (each {"prompt", "task"?}) about `world`: an example of a world task
    comes back in its card wording with this world's products, customers and courses, one of a
    kind not known here is left out; an example with no task (plain text) stays as it is."""
    out = []
    for example in examples:
        task = example.get("task")
        written = example["prompt"] if not task else _example(str(task).split("-")[0], example["prompt"], world)
        if written and written not in out:
            out.append(written)
    return out
