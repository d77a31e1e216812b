"""The tools a model may call and how it writes a call: handed to the engine by whoever owns the tools.

The generation core knows no world. Scaffolded decoding (engine/scaffold/) needs the tools' names and
schemas to write a call's fixed text, and the check of a finished call; a served model
(engine/backends/remote.py) needs them as OpenAI `tools[]`. The agent world builds one `ToolCalls` from
its registry (world/tools.py, `world.format.TOOL_CALLS`) and passes it to `generate` / `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)           # hashed by identity: one registry, one cached call shape
class ToolCalls:
    tools: Sequence[dict[str, Any]]              # MCP-style entries: name, description, inputSchema
    open: str                                    # the text before a call's JSON, e.g. "<tool_call>"
    close: str                                   # the text after it
    problem: Callable[[str], str]                # why a reply's call does not follow its tool's schema; "" if it does
    render: Callable[[str, dict[str, Any]], str]  # a call (name, arguments) as the model writes it

    def openai_tools(self) -> list[dict[str, Any]]:
        return openai_tools(self.tools)


def openai_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """MCP-style tools as an OpenAI-compatible server takes them (`tools[]`)."""
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": t["inputSchema"]}} for t in tools]
