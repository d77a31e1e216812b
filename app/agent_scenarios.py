"""The Agent tab's one-click scenarios, run through the web pages (app/page_venue.py):

  office-six   six office requests in a row in one world (world/office_six.py, the held-out set's
               first chain), each graded as a task
  black-tshirt the seed's demo in its own words, "Find me a black T-shirt in size L, add it to the
               cart, and check out as a guest: <name>, <email>, <address>."
               (world.task_sets.seed_demo_task: a held-out world with black T-shirts in size L)

A conversation shows in the tab as one task: its requests' instructions in order, and its world.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from world.office_six import load_office_six
from world.task_sets import seed_demo_task

from .live import markdown_safe


@dataclass(frozen=True)
class Scenario:
    name: str
    label: str
    conversation: bool

    def build(self) -> dict[str, Any]:
        """The task (or, for a conversation, the conversation) the scenario runs."""
        if self.name == "office-six":
            return load_office_six()[0]
        return seed_demo_task()


SCENARIOS = {s.name: s for s in (Scenario("office-six", "Six office tasks in a row", True),
                                  Scenario("black-tshirt", "A black T-shirt in size L, guest checkout", False))}


def scenario_instruction(name: str) -> str:
    """What the scenario asks, whole (a conversation: its requests, numbered), for the Instruction
    box before it runs: the name, email and address the model's calls use are there to read first,
    not first seen inside a tool call. "" for a name that is not a scenario."""
    scenario = SCENARIOS.get(name)
    if scenario is None:
        return ""
    built = scenario.build()
    return conversation_task(built)["instruction"] if scenario.conversation else built["instruction"]


def conversation_task(conversation: dict[str, Any]) -> dict[str, Any]:
    """The conversation as the tab's task: its world, and its requests as the instruction."""
    instructions = [turn["instruction"] for turn in conversation["turns"]]
    return {"id": conversation["id"], "domain": "office", "intent": "office_six", "split": conversation["split"],
            "world": conversation["world"], "instruction": "\n".join(f"{k}. {text}" for k, text
                                                                      in enumerate(instructions, 1)),
            "requests": instructions, "gold_actions": [], "outputs": []}


def conversation_verdict(transcript: Any, cost: str) -> str:
    """One line per request asked: ✅ or ❌ with the grader's reason."""
    lines = []
    for k, request in enumerate(transcript.requests, 1):
        mark = "✅" if request.success else f"❌ {markdown_safe(request.error_type or 'failed')}:"
        lines.append(f"{k}. {mark} {markdown_safe(request.instruction)} — {markdown_safe(request.reason)}")
    passed = sum(1 for r in transcript.requests if r.success)
    head = "### ✅ All requests succeeded" if transcript.success else f"### {passed} of {len(lines)} request(s) passed"
    return f"{head}\n" + "\n".join(lines) + f"\n\n{cost}"


def conversation_meta(transcript: Any) -> dict[str, Any]:
    return {"success": transcript.success, "seconds": transcript.seconds,
            "requests": [{"task_id": r.task_id, "success": r.success, "error_type": r.error_type, "reason": r.reason}
                         for r in transcript.requests]}
