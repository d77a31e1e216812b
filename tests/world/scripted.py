"""Scripted stand-in models for the world's tests: each fails in one known way, plus
oracle-backed fake backends (tests/fakes.py) that speak the oracle's calls through the real
generation loop. The `oracle_*` factories are what `python -m bench agent --model
py:tests.world.scripted:oracle_diffusion` loads."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.fakes import FakeARBackend, FakeDiffusionBackend
from world.conversation_sets import load_conversations
from world.conversations import turn_task
from world.format import render_call, render_chat
from world.oracle import policy_for
from world.task_sets import PHRASING_PATH, load_heldout_tasks
from world.tools import TOOLS_BY_NAME

Model = Callable[[list[dict[str, str]]], str]


def _assistant_turns(messages: list[dict[str, str]]) -> int:
    return sum(m["role"] == "assistant" for m in messages)


def malformed_json(task: dict[str, Any]) -> Model:
    return lambda messages: '<tool_call>{"name": "finish", "arguments": {"answer": </tool_call>'


def unknown_tool(task: dict[str, Any]) -> Model:
    return lambda messages: render_call("delete_everything", {})


def wrong_tool(task: dict[str, Any]) -> Model:
    """A valid, read-only call the gold trajectory never makes, then a confident finish."""
    gold = {a["name"] for a in task["gold_actions"]}
    choices = [("view_cart", {}), ("get_activity_status", {"activity_id": "A100"}), ("sum_amounts", {"amounts": [1]})]
    name, args = next((n, a) for n, a in choices if n not in gold)
    return lambda messages: render_call(name, args) if _assistant_turns(messages) == 0 else render_call(
        "finish", {"answer": "Done."})


def missing_arg(task: dict[str, Any]) -> Model:
    """The gold calls, each with its last required argument left out (forever stuck)."""
    def model(messages: list[dict[str, str]]) -> str:
        actions = [a for a in task["gold_actions"] if TOOLS_BY_NAME[a["name"]]["inputSchema"]["required"]]
        action = actions[0]
        required = TOOLS_BY_NAME[action["name"]]["inputSchema"]["required"]
        return render_call(action["name"], {k: v for k, v in action["arguments"].items() if k != required[-1]})
    return model


def _corrupt(name: str, key: str, value: Any) -> Any:
    schema = TOOLS_BY_NAME[name]["inputSchema"]["properties"][key]
    if "enum" in schema:
        return next(v for v in schema["enum"] if v != value)
    if key == "answer":
        return "I could not find it."
    if isinstance(value, str):
        return value + "9"
    if isinstance(value, list):
        return value + [1]
    return value + 1 if key != "quantity" else value % 9 + 1


def wrong_value(task: dict[str, Any]) -> Model:
    """The gold tools in the gold order, every argument value wrong but well-typed."""
    def model(messages: list[dict[str, str]]) -> str:
        action = task["gold_actions"][min(_assistant_turns(messages), len(task["gold_actions"]) - 1)]
        return render_call(action["name"], {k: _corrupt(action["name"], k, v) for k, v in action["arguments"].items()})
    return model


def repeated_call(task: dict[str, Any]) -> Model:
    return lambda messages: render_call("get_activity_status", {"activity_id": "A100"})


def endless_loop(task: dict[str, Any]) -> Model:
    """Valid, never-repeated calls, never a finish."""
    return lambda messages: render_call("search_products", {"query": f"hat {_assistant_turns(messages)}"})


# stand-in -> the error_type it must get, every time
FAILURES: dict[str, tuple[Callable[[dict[str, Any]], Model], str]] = {
    "malformed_json": (malformed_json, "parse_error"),
    "unknown_tool": (unknown_tool, "wrong_tool"),
    "wrong_tool": (wrong_tool, "wrong_tool"),
    "missing_arg": (missing_arg, "missing_arg"),
    "wrong_value": (wrong_value, "wrong_value"),
    "repeated_call": (repeated_call, "loop"),
    "endless_loop": (endless_loop, "step_limit"),
}


# -- oracle-backed fake backends -------------------------------------------------------------
_USER = re.compile(r"(?:^|\n)(?:user: |<\|user\|>)(.*)\n")
_TOOL = re.compile(r"(?:^|\n)(?:tool: |<\|tool\|><tool_response>)(.*?)(?:</tool_response>)?(?=\n)")


def oracle_target(tasks: list[dict[str, Any]]) -> Callable[[str], str]:
    """prompt text -> the oracle's next reply, for FakeARBackend / FakeDiffusionBackend(target=...).
    Works with the fakes' own chat encoding and with the world template."""
    by_instruction = {t["instruction"]: t for t in tasks}

    def target(prompt: str) -> str:
        task = by_instruction[_USER.search(prompt).group(1)]
        if task["domain"] == "document":
            return task["gold_output"]
        policy = policy_for(task)
        call = next(policy)
        for observation in _TOOL.findall(prompt):
            call = policy.send(json.loads(observation))
        return render_call(call.name, call.arguments)
    return target


def oracle_diffusion(tasks: list[dict[str, Any]] | None = None) -> FakeDiffusionBackend:
    return FakeDiffusionBackend(oracle_target(tasks or load_heldout_tasks()), name="oracle-diffusion")


def oracle_ar(tasks: list[dict[str, Any]] | None = None) -> FakeARBackend:
    return FakeARBackend(oracle_target(tasks or load_heldout_tasks()), name="oracle-ar")


def oracle_ar_phrasing() -> FakeARBackend:
    """The oracle over the held-out phrasing benchmark (`--task-set phrasing`)."""
    return FakeARBackend(oracle_target(load_heldout_tasks(PHRASING_PATH)), name="oracle-ar-phrasing")


def babbling_ar() -> FakeARBackend:
    """A model that never makes a tool call."""
    return FakeARBackend("Happy to help!", name="babbling-ar")


def world_format(backend: Any) -> Any:
    """Make a fake speak the world template, as Sprout does (prompt = render_chat)."""
    backend.chat_format = "world"
    backend.encode_chat = lambda messages: list(backend.tokenizer.encode(
        render_chat(messages, add_generation_prompt=True)))
    return backend


def conversation_oracle_target(conversations: list[dict[str, Any]]) -> Callable[[str], str]:
    """prompt text -> the oracle's next reply inside a conversation. The request is the one whose
    conversation so far has exactly the prompt's user messages (a model that reads the latest
    request only finds no request: the target raises); its observations are the tool responses
    after the last user message."""
    by_users = {}
    for conversation in conversations:
        for k in range(len(conversation["turns"])):
            users = tuple(t["instruction"] for t in conversation["turns"][: k + 1])
            by_users.setdefault(users, turn_task(conversation, k))

    def target(prompt: str) -> str:
        users = list(_USER.finditer(prompt))
        policy = policy_for(by_users[tuple(m.group(1) for m in users)])
        call = next(policy)
        for observation in _TOOL.findall(prompt[users[-1].end() - 1:]):
            call = policy.send(json.loads(observation))
        return render_call(call.name, call.arguments)
    return target


def oracle_conversations() -> FakeDiffusionBackend:
    """The oracle over the conversation benchmark (`--task-set conversations`)."""
    return world_format(FakeDiffusionBackend(conversation_oracle_target(load_conversations()), max_length=8192,
                                             name="oracle-conversations"))


def oracle_office_six() -> FakeDiffusionBackend:
    """The oracle over the office-six chains (`--task-set office-six`)."""
    from world.office_six import load_office_six

    return world_format(FakeDiffusionBackend(conversation_oracle_target(load_office_six()), max_length=8192,
                                             name="oracle-office-six"))
