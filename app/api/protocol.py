"""The OpenAI chat-completions wire format, read and written: a request body becomes a
`ChatRequest` (the engine's messages, tools and GenerationConfig) or an `ApiError`; a Result
becomes a completion object or the last chunk of a stream.

Diffusion settings travel as extra body fields named as GenerationConfig fields (`block_size`,
`steps`, `sampler`, `threshold`, ...). `max_tokens` / `max_completion_tokens` set `gen_length`.
`response_format` json_schema puts the schema on the config (`GenerationConfig.schema`): the
answer is written on its scaffold (engine/scaffold/) and its content follows the schema.
Tool calls go in as `tools` and as assistant `tool_calls`, and come out as `tool_calls` with
the arguments as a JSON string: inside the model's text they are Hermes calls,
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (world/format.py).

A model that writes its world's agent format (Sprout) ends every answer with the call
`finish(answer)`: unless the client offered a tool named finish, that answer is the `content`
(finish_reason "stop"), never a tool call and never markup. Without client tools such a model
acts in its own world on the server (app/api/world.py).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from engine import json_limits
from engine.trace import ConfigError, GenerationConfig, Result, Stats
from world.format import CALL_CLOSE, CALL_OPEN, EOS, dumps, render_call
from world.tools import FINISH

CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(GenerationConfig))
# Standard fields this server reads; the others below are accepted and ignored when they ask for
# nothing (null, false, the default), and refused with a sentence when they ask for something.
READ_FIELDS = ("model", "messages", "stream", "stream_options", "tools", "tool_choice", "max_tokens",
               "max_completion_tokens", "temperature", "top_p", "seed", "diffusing", "n", "parallel_tool_calls",
               "response_format")
IGNORED_WHEN_EMPTY = ("stop", "logprobs", "top_logprobs", "logit_bias", "frequency_penalty", "presence_penalty",
                      "user", "metadata", "store", "service_tier", "modalities",
                      "reasoning_effort", "prediction", "audio", "web_search_options", "functions", "function_call")
ROLES = ("system", "developer", "user", "assistant", "tool")


class ApiError(Exception):
    """An answer other than 200, as OpenAI's error object: status, a sentence, a type and a code."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, str]]          # role/content, as world.agent.prompt_ids_for reads them
    config: GenerationConfig
    stream: bool = False
    include_usage: bool = False
    diffusing: bool = False
    tools: list[dict[str, Any]] = field(default_factory=list)
    parse_tools: bool = False               # tools given and tool_choice is not "none"


# -- reading a request -----------------------------------------------------------------------

def _text(content: Any, where: str) -> str:
    """A message's content: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise bad_request(f"{where}: only text content parts are supported "
                                  '(each like {"type": "text", "text": "..."}).', "messages")
            parts.append(part["text"])
        return "".join(parts)
    raise bad_request(f"{where}: content must be a string or a list of text parts.", "messages")


def _call_text(call: Any, where: str) -> str:
    """An assistant tool_call back as the Hermes text the model wrote."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
        raise bad_request(f'{where}: each tool call needs {{"function": {{"name": ..., "arguments": "..."}}}}.',
                          "messages")
    arguments = function.get("arguments") or "{}"
    if isinstance(arguments, str):
        try:
            arguments = json_limits.loads(arguments, f"{where}: the arguments of {function['name'][:40]!r}")
        except json_limits.JsonLimitError as error:
            raise bad_request(str(error), "messages") from None
    if not isinstance(arguments, dict):
        raise bad_request(f"{where}: the arguments of {function['name'][:40]!r} must be a JSON object.", "messages")
    return render_call(function["name"], arguments)


def read_messages(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise bad_request("messages must be a non-empty list of {role, content} objects.", "messages")
    out = []
    for i, message in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise bad_request(f"{where}: role must be one of {', '.join(ROLES)}.", "messages")
        role = "system" if message["role"] == "developer" else message["role"]
        content = _text(message.get("content"), where)
        if role == "assistant" and message.get("tool_calls"):
            if not isinstance(message["tool_calls"], list):
                raise bad_request(f"{where}: tool_calls must be a list.", "messages")
            content += "".join(_call_text(c, where) for c in message["tool_calls"])
        elif role == "tool":
            try:  # the one JSON rendering the models read tool responses in
                content = dumps(json_limits.loads(content, f"{where}: the tool response"))
            except json_limits.JsonLimitError as error:
                if json_limits.too_deep(content):
                    raise bad_request(str(error), "messages") from None   # plain text stays text
        out.append({"role": role, "content": content})
    return out


def read_tools(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("tools must be a list of function tools.", "tools")
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict) or \
                not isinstance(function.get("name"), str):
            raise bad_request(f'tools[{i}] must look like {{"type": "function", "function": {{"name": ...}}}}.',
                              "tools")
    return raw


def _tool_choice(raw: Any, tools: list[dict[str, Any]]) -> bool:
    """Whether replies are read for tool calls."""
    if raw is None or raw in ("auto", "required"):
        return bool(tools)
    if raw == "none":
        return False
    if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
        return bool(tools)
    raise bad_request('tool_choice must be "none", "auto", "required" or {"type": "function", ...}.', "tool_choice")


def read_response_format(raw: Any) -> dict[str, Any] | None:
    """The JSON schema a `response_format` asks for (engine/scaffold/ writes the answer on it), or
    None for free text. `json_object` is the schema {"type": "object"}: any object, its keys and
    values the model's."""
    if raw is None or raw == {"type": "text"}:
        return None
    if not isinstance(raw, dict) or raw.get("type") not in ("text", "json_schema", "json_object"):
        raise bad_request('response_format must be {"type": "text"}, {"type": "json_object"} or {"type": '
                          '"json_schema", "json_schema": {"name": ..., "schema": {...}}}.', "response_format")
    if raw["type"] == "json_object":
        return {"type": "object"}
    if raw["type"] == "text":
        return None
    spec = raw.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise bad_request('response_format json_schema needs {"json_schema": {"name": ..., "schema": {...}}} with '
                          "the schema as a JSON object.", "response_format")
    return spec["schema"]


def read_config(body: dict[str, Any], defaults: dict[str, Any]) -> GenerationConfig:
    values = dict(defaults)
    for key in CONFIG_FIELDS:
        if key in body and body[key] is not None:
            values[key] = body[key]
    limits = {k: body[k] for k in ("max_tokens", "max_completion_tokens") if body.get(k) is not None}
    if len(set(map(repr, limits.values()))) > 1:
        raise bad_request("max_tokens and max_completion_tokens differ; give one.", "max_tokens")
    if limits:
        length = next(iter(limits.values()))
        if "gen_length" in body and body["gen_length"] is not None and body["gen_length"] != length:
            raise bad_request("max_tokens and gen_length differ; give one.", "max_tokens")
        values["gen_length"] = length
    try:
        return GenerationConfig(**values)
    except ConfigError as error:
        raise bad_request(str(error)) from None
    except (TypeError, ValueError) as error:   # a string where a number belongs, and the like
        raise bad_request(f"A generation setting has the wrong type ({error}).") from None


def read_request(body: Any, defaults_for: Any) -> ChatRequest:
    """The request, or ApiError(400). `defaults_for(model)` gives the model's own decoding defaults
    (or raises ApiError 404 for a model that is not here)."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.")
    unknown = sorted(set(body) - set(READ_FIELDS) - set(IGNORED_WHEN_EMPTY) - set(CONFIG_FIELDS))
    if unknown:
        raise bad_request(f"Unknown field(s) {', '.join(unknown)}. Diffusion settings are "
                          f"{', '.join(CONFIG_FIELDS)}.", unknown[0])
    asked = sorted(k for k in IGNORED_WHEN_EMPTY if body.get(k) not in (None, False, [], {}, "", {"type": "text"})
                   and not (k in ("frequency_penalty", "presence_penalty") and body.get(k) == 0))
    if asked:
        raise bad_request(f"This server does not support {', '.join(asked)}.", asked[0])
    n = body.get("n")
    if n is not None and (type(n) is not int or n != 1):     # true == 1 in Python, but it is not a count
        raise bad_request(f"n must be the number 1 (only one answer per call is supported), not {json.dumps(n)[:20]}.",
                          "n")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise bad_request("model must name a model (see GET /v1/models).", "model")
    messages = read_messages(body.get("messages"))
    tools = read_tools(body.get("tools"))
    parse_tools = _tool_choice(body.get("tool_choice"), tools)
    config = read_config(body, defaults_for(model.strip()))
    schema = read_response_format(body.get("response_format"))
    if schema is not None:
        if tools and parse_tools:
            raise bad_request("Give either tools or a response_format json_schema, not both: the answer is "
                              "written on one scaffold.", "response_format")
        try:
            config = config.replace(schema=schema)
        except ConfigError as error:
            raise bad_request(f"response_format: {error}", "response_format") from None
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad_request("stream_options must be an object.", "stream_options")
    for flag in ("stream", "diffusing"):
        if not isinstance(body.get(flag, False), bool):
            raise bad_request(f"{flag} must be true or false.", flag)
    if not isinstance(options.get("include_usage", False), bool):
        raise bad_request("stream_options.include_usage must be true or false.", "stream_options")
    return ChatRequest(model=model.strip(), messages=messages, config=config, stream=bool(body.get("stream")),
                       include_usage=bool(options.get("include_usage")), diffusing=bool(body.get("diffusing")),
                       tools=tools, parse_tools=parse_tools)


def tools_system_text(tools: list[dict[str, Any]]) -> str:
    """The Hermes tool prompt for a model that has not learned the tools (not Sprout)."""
    listing = "\n".join(dumps(t) for t in tools)
    return (f"You may call the functions below.\n<tools>\n{listing}\n</tools>\n"
            f'For each call return {CALL_OPEN}{{"name": <function-name>, "arguments": <args-json-object>}}'
            f"{CALL_CLOSE}.")


# -- reading a reply ---------------------------------------------------------------------------

def split_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content outside the calls, [{"name", "arguments"}]) of a reply. A call that is not a JSON
    object with a name stays in the content as text."""
    decoder = json.JSONDecoder()
    content, calls, rest = [], [], text.replace(EOS, "")
    while True:
        at = rest.find(CALL_OPEN)
        if at == -1:
            content.append(rest)
            break
        content.append(rest[:at])
        body = rest[at + len(CALL_OPEN):]
        end = body.find(CALL_CLOSE)
        inner, rest = (body, "") if end == -1 else (body[:end], body[end + len(CALL_CLOSE):])
        try:
            obj = None if json_limits.too_deep(inner) else decoder.raw_decode(inner.strip())[0]
        except ValueError:
            obj = None
        arguments = obj.get("arguments", {}) if isinstance(obj, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json_limits.loads(arguments, "A tool call's arguments")
            except json_limits.JsonLimitError:
                arguments = None
        if isinstance(obj, dict) and isinstance(obj.get("name"), str) and isinstance(arguments, dict):
            calls.append({"name": obj["name"], "arguments": arguments})
        else:
            content.append(CALL_OPEN + inner + ("" if end == -1 else CALL_CLOSE))
    return "".join(content).strip(), calls


def lift_finish(text: str, calls: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], bool]:
    """(content, calls, lifted) with a world-format model's `finish` calls read as its answer:
    finish is the world's way to reply to the person, so unless the client offered a tool of that
    name, its answer joins the content and the call is dropped."""
    if any(t["function"]["name"] == FINISH for t in tools):
        return text, calls, False
    answers = [str(c["arguments"].get("answer", "")) for c in calls if c["name"] == FINISH]
    if not answers:
        return text, calls, False
    content = "\n\n".join(part for part in [text, *answers] if part)
    return content, [c for c in calls if c["name"] != FINISH], True


def wire_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
            for c in calls]


# -- writing a reply ---------------------------------------------------------------------------

def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage(numbers: Stats, prompt_tokens: int) -> dict[str, Any]:
    """The usage object: OpenAI's token counts plus forwards and tokens per forward."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": numbers.new_tokens,
            "total_tokens": prompt_tokens + numbers.new_tokens, "nfe": numbers.nfe,
            "tokens_per_forward": round(numbers.tokens_per_forward, 4)}


def finish_reason(result: Result, calls: list[dict[str, Any]]) -> str:
    if calls:
        return "tool_calls"
    return "length" if result.stats.stop_reason == "length" else "stop"


@dataclass
class Reply:
    """What one call answers, whatever ran to make it: the message and the usage."""
    content: str | None
    tool_calls: list[dict[str, Any]]        # wire form
    finish_reason: str
    usage: dict[str, Any]
    world_calls: list[dict[str, Any]] = field(default_factory=list)   # tools the server ran (app/api/world.py)


def reply(result: Result, request: ChatRequest, prompt_tokens: int, world_format: bool = False) -> Reply:
    """The Reply of one generation. `world_format`: the model writes its world's agent format,
    so a finish call is its answer (lift_finish)."""
    text, calls = (split_tool_calls(result.text) if request.parse_tools else (result.text, []))
    lifted = False
    if world_format and request.parse_tools:
        text, calls, lifted = lift_finish(text, calls, request.tools)
    reason = "stop" if lifted and not calls else finish_reason(result, calls)
    return Reply((text or None) if calls else text, wire_tool_calls(calls), reason, usage(result.stats, prompt_tokens))


def completion(completion_id: str, request: ChatRequest, answer: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = answer.tool_calls
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": answer.finish_reason}
    if answer.world_calls:
        choice["world_calls"] = answer.world_calls
    return {"id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": request.model,
            "choices": [choice], "usage": answer.usage}


def chunk(completion_id: str, model: str, delta: dict[str, Any], reason: str | None = None,
          **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": reason, **extra}
    return {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [choice]}


def usage_chunk(completion_id: str, model: str, numbers: dict[str, Any]) -> dict[str, Any]:
    """The last chunk of a stream with stream_options.include_usage: no choices, the usage."""
    return {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [], "usage": numbers}
