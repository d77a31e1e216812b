"""The text format of the agent world: the chat template Sprout trains on (defined with the
model, sprout/chat.py), the one canonical rendering of a tool call, and a parser that
never raises.

    <|system|>{text}\\n                                   (optional)
    <|user|>{text}\\n
    <|assistant|><tool_call>{"name":..,"arguments":{..}}</tool_call><|eos|>\\n
    <|tool|><tool_response>{json}</tool_response>\\n

Every assistant turn of an agent task is exactly one tool call; the final answer is the call
`finish(answer)`. Document tasks (documents.py) answer with plain text instead. Messages keep
the bare JSON of a tool response as content; the template adds the <tool_response> tags.
JSON is compact (separators "," and ":"), arguments in the order of the tool's schema.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from engine.tool_calls import ToolCalls

# The chat template and its tokens are Sprout's (sprout/chat.py); the world writes in it.
from sprout.chat import (  # noqa: F401  (re-exported: the world's callers read them here)
    CALL_CLOSE,
    CALL_OPEN,
    EOS,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    ROLE_MARKERS,
    SPECIAL_TOKENS,
    render_chat,
)
from world.tools import TOOLS, TOOLS_BY_NAME, argument_order

COMPACT_SYSTEM = "You are a shop and office agent. Reply with one <tool_call> per turn; end with finish."


def dumps(value: Any) -> str:
    """The one JSON rendering used everywhere: compact, key order as given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def canonical_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments in schema order (unknown keys last, in their own order)."""
    order = argument_order(name) if name in TOOLS_BY_NAME else []
    ordered = {k: arguments[k] for k in order if k in arguments}
    ordered.update((k, v) for k, v in arguments.items() if k not in ordered)
    return ordered


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """`<tool_call>{"name":..,"arguments":{..}}</tool_call>`, canonical key order."""
    return f'{CALL_OPEN}{dumps({"name": name, "arguments": canonical_arguments(name, arguments)})}{CALL_CLOSE}'


def render_response(observation: Any) -> str:
    """The content of a tool message (bare JSON; render_chat adds the tags)."""
    return dumps(observation)


def assistant_spans(text: str) -> list[tuple[int, int]]:
    """Char offsets [start, end) of each assistant turn's content, its trailing <|eos|>
    included: the positions that carry loss in training."""
    spans, marker = [], ROLE_MARKERS["assistant"]
    start = text.find(marker)
    while start != -1:
        begin = start + len(marker)
        stop = text.find(EOS, begin)
        end = len(text) if stop == -1 else stop + len(EOS)
        spans.append((begin, end))
        start = text.find(marker, end)
    return spans


def full_system_prompt() -> str:
    """Hermes-style system prompt with every tool schema, for models that do not know the tools."""
    tools = "\n".join(dumps({"type": "function", "function": {
        "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}}) for t in TOOLS)
    return ("You are a shop and office agent. You may call the functions below, one per turn.\n"
            f"<tools>\n{tools}\n</tools>\n"
            'For each call return <tool_call>{"name": <function-name>, "arguments": <args-json-object>}'
            "</tool_call>. Use only values from the user or from tool responses. "
            "When done, or when information is missing, call finish with your answer.")


def system_prompt(kind: str | None) -> str | None:
    if kind is None:
        return None
    if kind == "compact":
        return COMPACT_SYSTEM
    if kind == "full":
        return full_system_prompt()
    raise ValueError(f"Unknown system prompt {kind!r}; choose compact, full or None.")


# -- parsing ---------------------------------------------------------------------------------
PARSE_ERRORS = ("malformed_json", "no_call", "unknown_tool", "missing_arg", "bad_arg_type", "extra_arg")


@dataclass
class ParsedCall:
    name: str
    arguments: dict[str, Any]           # canonical order
    raw: str = ""

    def render(self) -> str:
        return render_call(self.name, self.arguments)

    def key(self) -> str:
        """Identity of a call, for vetoing exact repeats."""
        return dumps({"name": self.name, "arguments": self.arguments})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass
class ParseError:
    kind: str                           # one of PARSE_ERRORS
    message: str                        # a sentence for a person
    name: str | None = None             # the tool, when it was recognised
    detail: list[str] = field(default_factory=list)  # argument names involved
    raw: str = ""

    def observation(self) -> dict[str, Any]:
        """What the model reads back: the error kind, and the arguments involved if any."""
        out: dict[str, Any] = {"error": self.kind}
        if self.detail:
            out["args"] = self.detail
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "name": self.name, "detail": self.detail}


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("JSON numbers must be finite")
    return value


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Strict JSON: NaN / Infinity / 1e999 are not numbers a tool can take.
_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constants)
_VALIDATORS = {t["name"]: jsonschema.Draft202012Validator(t["inputSchema"]) for t in TOOLS}


def _call_body(text: str) -> tuple[str | None, bool]:
    """The JSON text of the first call, and whether it was tagged. Tolerates a missing
    closing tag, trailing junk and special tokens (a decoder may have stripped the tags)."""
    open_at = text.find(CALL_OPEN)
    if open_at == -1:
        brace = text.find("{")
        return (None, False) if brace == -1 else (text[brace:], False)
    body = text[open_at + len(CALL_OPEN):]
    close_at = body.find(CALL_CLOSE)
    return (body if close_at == -1 else body[:close_at]), True


def _normalise(value: Any, schema: dict[str, Any]) -> Any:
    """2.0 -> 2 where the schema wants an integer (JSON Schema accepts it as one)."""
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _parse(text: str) -> ParsedCall | ParseError:
    body, tagged = _call_body(text)
    if body is None:
        return ParseError("no_call", "The reply contains no <tool_call>.", raw=text)
    body = body.replace(EOS, "").strip()
    try:
        obj, _ = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        kind = "malformed_json" if tagged else "no_call"
        return ParseError(kind, "The tool call is not valid JSON.", raw=text)
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        kind = "malformed_json" if tagged else "no_call"
        return ParseError(kind, 'A tool call must be a JSON object with a "name" string.', raw=text)
    name = obj["name"]
    arguments = obj.get("arguments", {})
    if isinstance(arguments, str):  # some models send arguments as a JSON string
        try:
            arguments = _DECODER.decode(arguments)
        except (ValueError, RecursionError):
            pass
    if not isinstance(arguments, dict):
        return ParseError("malformed_json", '"arguments" must be a JSON object.', name=name, raw=text)
    if name not in TOOLS_BY_NAME:
        return ParseError("unknown_tool", f"There is no tool called {name[:40]!r}.", name=name, raw=text)
    properties = TOOLS_BY_NAME[name]["inputSchema"]["properties"]
    arguments = {k: _normalise(v, properties.get(k, {})) for k, v in arguments.items()}
    errors = list(_VALIDATORS[name].iter_errors(arguments))
    missing = sorted({m for e in errors if e.validator == "required" for m in e.validator_value if m not in arguments})
    if missing:
        return ParseError("missing_arg", f"{name} needs {', '.join(missing)}.", name=name, detail=missing, raw=text)
    extra = sorted(k for k in arguments if k not in properties)
    if extra:
        return ParseError("extra_arg", f"{name} takes no argument {', '.join(extra)}.", name=name,
                          detail=extra, raw=text)
    if errors:
        bad = sorted({str(e.path[0]) for e in errors if e.path})
        return ParseError("bad_arg_type", f"{name}: {errors[0].message[:120]}.", name=name, detail=bad, raw=text)
    return ParsedCall(name, canonical_arguments(name, arguments), raw=text)


def parse_call(text: str) -> ParsedCall | ParseError:
    """The first tool call in a reply, validated against its tool's inputSchema. Never
    raises: anything wrong becomes a typed ParseError."""
    try:
        if not isinstance(text, str):
            return ParseError("no_call", "The reply is not text.", raw=repr(text))
        return _parse(text)
    except Exception as error:  # noqa: BLE001 - the contract is "never raises"
        return ParseError("malformed_json", f"The tool call could not be read ({type(error).__name__}).", raw=str(text))


def call_problem(text: str) -> str:
    """Why the first tool call in a reply does not follow its tool's schema, in a sentence; "" if it does."""
    parsed = parse_call(text)
    return parsed.message if isinstance(parsed, ParseError) else ""


# The registry as the engine takes it (engine/tool_calls.py): scaffolded decoding and served models
# read the tools from here, passed in by the agent loop and the app, never by importing the world.
TOOL_CALLS = ToolCalls(tools=tuple(TOOLS), open=CALL_OPEN, close=CALL_CLOSE, problem=call_problem,
                       render=render_call)
