"""The tools as pages registered them, in the shapes the agent loop reads: a PageTool per tool, and
PageToolsOf(driver), world.agent's view of the open pages (their tools plus finish; a call runs in
its page through the driver, world/webmcp/driver.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from world.format import ToolSet
from world.tools import FINISH, TOOLS_BY_NAME


@dataclass
class PageTool:
    """A tool as a page registered it."""
    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    annotations: dict[str, bool] = field(default_factory=dict)
    tab: int = 0                     # which open page owns it

    def definition(self) -> dict[str, Any]:
        """In the registry's shape (world/tools.py), for the prompt and the parser."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                "annotations": dict(self.annotations)}


# A call, in one round trip; `startOver`: the tab first goes to that session in place, its redraw
# left to the call's own answer (start_over_on_call).


class PageToolsOf:
    """The agent loop's view of the open pages (world.agent.PageTools): the tools they registered,
    read now, plus finish (the agent's own: it ends the turn and changes nothing a page shows);
    each call runs in its page."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self._known: ToolSet | None = None

    @property
    def tools(self) -> ToolSet:
        """The tools as the pages register them now (a navigation or a toolchange changes them)."""
        listed = [t.definition() for t in self.driver.current_tools()] + [TOOLS_BY_NAME[FINISH]]
        if self._known is None or self._known.tools != listed:
            self._known = ToolSet(listed)
        return self._known

    def execute(self, call: dict[str, Any]) -> Any:
        return self.driver.call(call["name"], call["arguments"])
