"""What the Agent tab runs and shows of it: the held-out tasks in its picker (and two document
tasks), a typed instruction as a task of its own, and the world a task's steps leave behind."""

from __future__ import annotations

from typing import Any

from world.agent import Step
from world.start import world_for
from world.task_sets import load_heldout_tasks
from world.tasks import make_task
from world.tools import FINISH, call_tool

from .conversation_world import DEFAULT_WORLD

CUSTOM = ""                                   # the task choice that means "use the typed instruction"
DOC_TASKS = (("doc_resume", 1), ("doc_html", 2))


def benchmark_tasks() -> list[dict[str, Any]]:
    """The held-out agent tasks, then one resume and one page task (answers that are code)."""
    return load_heldout_tasks() + [make_task(intent, "heldout", seed) for intent, seed in DOC_TASKS]


DOMAIN_WORDS = {"shop": "shop", "office": "back office", "doc": "document"}


def task_label(task: dict[str, Any]) -> str:
    """"Find a grey dress in size M. (shop: find)": the instruction whole, then the kind of task in
    words (the id, "shop_find-heldout-201093322", stays the choice's value)."""
    domain, _, rest = str(task["intent"]).partition("_")
    kind = f"{DOMAIN_WORDS.get(domain, domain)}: {rest.replace('_', ' ')}" if rest else domain
    return f"{' '.join(task['instruction'].split())} ({kind})"


def custom_task(instruction: str) -> dict[str, Any]:
    """A typed instruction in a fresh copy of the world a new chat starts in (the Chat's, every
    style stocked), so the two tabs stock the same products; no gold answer to grade it against."""
    return {"id": "typed", "domain": "shop", "intent": "typed", "split": DEFAULT_WORLD["split"],
            "instruction": instruction, "world": {"seed": DEFAULT_WORLD["seed"], "setup": DEFAULT_WORLD["setup"]},
            "gold_actions": [], "outputs": []}


def world_after(task: dict[str, Any], steps: list[Step]) -> Any:
    """The world after the executed calls (vetoed and unparsed ones never ran), replayed from the start."""
    world = world_for(task)
    for step in steps:
        if step.call and not step.error and step.call["name"] != FINISH:
            try:
                call_tool(world, step.call["name"], step.call["arguments"])
            except Exception:  # noqa: BLE001 - it failed in the episode too, and changed nothing
                pass
    return world


def world_view(task: dict[str, Any], steps: list[Step]) -> dict[str, Any]:
    """The world state the tab shows: cart, orders, invoices, registrations after the executed calls."""
    if task.get("domain") == "document":
        return {"note": "Document tasks do not touch the world."}
    world = world_after(task, steps)
    state = world.end_state()
    return {"cart": state["cart"], "cart_total": world.cart_total(), "orders": state["orders"],
            "invoices": state["invoices"], "registrations": state["registrations"]}
