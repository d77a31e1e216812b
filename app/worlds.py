"""The world a conversation with a world-format model (Sprout) acts in, shared by the Chat tab and
the /v1 API: which world it starts from, how many tool steps one answer may take, and what is
said when no answer came."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from world import entities as E
from world.state import World, make_world, random_product, world_for
from world.tasks import load_heldout_tasks

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
    for style in E.STYLES:
        mine = {pid: p for pid, p in world.products.items() if p["style"] == style}
        colors = [c for c in E.COLORS if c not in {p["color"] for p in mine.values()}]
        for color in rng.sample(colors, PER_STYLE - len(mine)) if len(mine) < PER_STYLE else []:
            options = E.sizes_for(color, split)
            chosen = rng.sample(options, min(len(options), rng.randint(2, 3)))
            pid = world.new_id("product")
            world.products[pid] = mine[pid] = random_product(
                rng, split, style, color, tuple(s for s in E.SIZES if s in chosen))
        products.update(mine)
    return {"products": products}


# Stored with every conversation (app/chat.py), so a chat reopens in the world it had, this
# setup or an older one (a spec stored without products rebuilds the bare background world).
DEFAULT_WORLD = {**BACKGROUND, "setup": stocked_setup()}
MAX_TOOL_STEPS = 8            # model replies per answer (tool calls, parse errors, the answer itself)


def speaks_world(backend: Any) -> bool:
    """Whether the model writes its world's agent format natively (every reply a tool call, the
    answer the call finish): Sprout, and fakes that stand in for it."""
    return getattr(backend, "chat_format", None) == "world"


def one_request(backend: Any) -> bool:
    """Whether the model was trained on one request per conversation (Sprout: every training
    transcript is one request, its tool calls and its answer)."""
    return bool(getattr(backend, "one_request_per_chat", False))


def model_context(backend: Any, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages the model reads. A one-request model reads the system text and the
    conversation from the latest user message on: given earlier turns too, Sprout repeats an
    earlier answer instead of reading the new request. Its world still holds what the earlier
    turns did (the cart, new customers)."""
    if not one_request(backend):
        return messages
    latest = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if latest is None:
        return messages
    return [m for m in messages[:latest] if m["role"] == "system"] + messages[latest:]


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
    why = early or f"no answer after {steps_taken} tool steps (the limit is {MAX_TOOL_STEPS})"
    return f"(The model gave no answer: {why}.)"
