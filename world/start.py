"""Where a task starts: its world, built from the seed and split, with the task's setup applied and,
for a request inside a conversation, the earlier requests' gold calls replayed (`world.before`,
world/conversations.py). Beside state.py, not in it: the replay runs the tools, and tools.py reads
state.py's World."""

from __future__ import annotations

from typing import Any

from world.state import World, make_world
from world.tools import call_tool


def world_for(task: dict[str, Any]) -> World:
    """The exact starting state of a task. A request inside a conversation starts where the
    earlier requests' gold calls left the world (`world.before`, world/conversations.py)."""
    world_spec = task["world"]
    world = make_world(world_spec["seed"], task["split"]).apply(world_spec.get("setup", {}))
    if world_spec.get("before"):
        for action in world_spec["before"]:
            call_tool(world, action["name"], action["arguments"])
    return world
