"""The grader: an attempt succeeds when it finished, its end state equals the end state of
replaying the task's gold_actions, and every expected output string is in its final answer.
A request that only reads and whose answer names nothing ("she has no unpaid invoices") would
pass any finish that way, so it also needs the lookups the gold makes: each gold call's tool,
called on the same required arguments, with an optional filter the gold's or none (a model may
list all of a customer's invoices and read the unpaid ones itself).

A failed attempt gets one error_type, its first cause:

    parse_error  a reply held no readable call (malformed JSON, no <tool_call>)
    wrong_tool   a call named no tool, or the tools used differ from the gold ones
    missing_arg  a call left out a required argument
    wrong_value  an ill-typed / extra argument, or right tools with wrong values
    loop         an identical call was repeated (and vetoed)
    step_limit   the step limit came before finish
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from world.documents import check_document
from world.start import world_for
from world.state import World
from world.tools import FINISH, TOOLS_BY_NAME, call_tool

ERROR_TYPES = ("parse_error", "wrong_tool", "missing_arg", "wrong_value", "loop", "step_limit")
# step error kind (format.PARSE_ERRORS + the loop's veto) -> error_type
ERROR_OF_KIND = {"malformed_json": "parse_error", "no_call": "parse_error", "unknown_tool": "wrong_tool",
                 "missing_arg": "missing_arg", "bad_arg_type": "wrong_value", "extra_arg": "wrong_value",
                 "repeated_call": "loop"}


class StepLike(Protocol):
    call: dict[str, Any] | None     # {"name", "arguments"} when the reply parsed
    error: dict[str, Any] | None    # {"kind", "message", ...} when it did not, or was vetoed


@dataclass
class Grade:
    success: bool
    error_type: str | None          # None on success
    reason: str                     # a sentence for a person

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "error_type": self.error_type, "reason": self.reason}


def replay(task: dict[str, Any], actions: list[dict[str, Any]]) -> World:
    """The task's world after running `actions` (finish excluded) from the start."""
    world = world_for(task)
    for action in actions:
        if action["name"] != FINISH:
            call_tool(world, action["name"], action["arguments"])
    return world


def gold_end_state(task: dict[str, Any]) -> dict[str, Any]:
    return replay(task, task["gold_actions"]).end_state()


def answer_contains(answer: str, expected: str) -> bool:
    """`expected` occurs in the answer as a whole token: "$50" is not in "$500"."""
    pattern = r"(?<![A-Za-z0-9])" + re.escape(str(expected)) + r"(?![A-Za-z0-9])"
    return re.search(pattern, answer, flags=re.IGNORECASE) is not None


def names_nothing(task: dict[str, Any]) -> bool:
    """Whether the task only reads and its answer must name nothing ("no invoices found"): the end
    state and the outputs cannot tell a right attempt from one that answered without looking."""
    writes = any(not TOOLS_BY_NAME[a["name"]]["annotations"]["readOnlyHint"] for a in task["gold_actions"])
    return not writes and not task["outputs"]


def missed_lookup(task: dict[str, Any], steps: list[StepLike]) -> Grade | None:
    """Why a read-only request with nothing to name fails although it finished: the first gold
    lookup the attempt did not make (None when it made them all, or the task writes or names
    something, where the end state and the outputs already decide)."""
    if not names_nothing(task):
        return None
    gold = [a for a in task["gold_actions"] if a["name"] != FINISH]
    calls = [s.call for s in steps if s.call and isinstance(s.call.get("arguments"), dict)]
    for action in gold:
        same_tool = [c for c in calls if c["name"] == action["name"]]
        wanted = ", ".join(f"{k}={v!r}" for k, v in action["arguments"].items())
        if not same_tool:
            return Grade(False, "wrong_tool", f"Answered without looking: {action['name']}({wanted}) was never called.")
        if not any(_looks_as(call, action) for call in same_tool):
            return Grade(False, "wrong_value", f"Looked in the wrong place: no call {action['name']}({wanted}).")
    return None


def _looks_as(call: dict[str, Any], action: dict[str, Any]) -> bool:
    """`call` sees what the gold `action` sees: its required arguments are the gold's, exactly (the
    tools read ids as written: "c303" is an unknown customer), and an optional one is the gold's
    or left out (no filter sees all the rows, the gold's among them)."""
    required = TOOLS_BY_NAME[action["name"]]["inputSchema"]["required"]
    args, gold = call["arguments"], action["arguments"]
    return (all(args.get(k) == gold[k] for k in required)
            and all(k in required or (k in gold and v == gold[k]) for k, v in args.items()))


def grade(task: dict[str, Any], world: World, final_answer: str | None, steps: list[StepLike]) -> Grade:
    """Grade one agent attempt: `world` is its end state, `steps` every reply in order. A task
    marked `no_tools` (a request outside the world) also fails on any call but finish: a
    read-only call with made-up arguments leaves the world as it was, but is no honest answer."""
    finished = final_answer is not None
    if task.get("no_tools"):
        called = [s.call["name"] for s in steps if s.call and s.call["name"] != FINISH]
        if called:
            return Grade(False, "wrong_tool", f"Called {', '.join(called)} on a request that needs no tool.")
    if finished and world.end_state() == gold_end_state(task):
        missing = [o for o in task["outputs"] if not answer_contains(final_answer, o)]
        if not missing:
            return missed_lookup(task, steps) or Grade(True, None, "The end state and the answer are right.")
    for i, step in enumerate(steps):
        if step.error:
            kind = step.error.get("kind", "malformed_json")
            return Grade(False, ERROR_OF_KIND.get(kind, "parse_error"),
                         f"Step {i + 1}: {step.error.get('message', kind)}")
    if not finished:
        return Grade(False, "step_limit", f"No finish within {len(steps)} steps.")
    used = {s.call["name"] for s in steps if s.call}
    gold = {a["name"] for a in task["gold_actions"]}
    if used != gold:
        return Grade(False, "wrong_tool", f"Used {', '.join(sorted(used))}; expected {', '.join(sorted(gold))}.")
    if world.end_state() != gold_end_state(task):
        return Grade(False, "wrong_value", "The right tools, but the end state differs from the gold one.")
    return Grade(False, "wrong_value", f"The answer lacks one of {', '.join(map(repr, task['outputs']))}.")


def grade_document(task: dict[str, Any], text: str | None, compile_pdf: bool = True) -> Grade:
    """A document task passes when its checker finds no problem."""
    if not text:
        return Grade(False, "parse_error", "No document was written.")
    problems = check_document(task, text, compile_pdf)
    if not problems:
        return Grade(True, None, "The document has every required part.")
    structural = any(p.startswith(("missing <", "missing \\", "unbalanced", "the HTML does not", "the LaTeX does"))
                     for p in problems)
    return Grade(False, "parse_error" if structural else "wrong_value", "; ".join(problems[:3]) + ".")
