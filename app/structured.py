"""Structured output in Chat: the "JSON schema" box's text read as a schema (or a sentence saying
why it cannot be one), its example, and a JSON answer shown formatted.

The schema goes to the engine's scaffold (engine/scaffold), which writes the schema's fixed text
(braces, keys, quotes, commas) into the canvas and leaves only the values for the model to decide.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from engine.generate import run
from engine.trace import ConfigError, Frame, GenerationConfig
from world.agent import STOPPED, Step, cancelled, prompt_ids_for

from .steps import answer_of

SCHEMA_CHARS = 20_000             # a schema longer than this is not something a person typed
EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "product": {"type": "string", "maxLength": 24},
        "colour": {"enum": ["red", "blue", "green", "black"]},
        "size": {"enum": ["S", "M", "L", "XL"]},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 9},
        "gift": {"type": "boolean"},
    },
    "required": ["product", "colour", "size", "quantity", "gift"],
}
# one property a line: the whole example fits the box without scrolling
EXAMPLE_TEXT = "{\n  \"type\": \"object\",\n  \"properties\": {\n" + ",\n".join(
    f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in EXAMPLE_SCHEMA["properties"].items()
) + f"\n  }},\n  \"required\": {json.dumps(EXAMPLE_SCHEMA['required'])}\n}}"
EXAMPLE_PROMPT = "I'd like two blue rain jackets in size M, not a gift."
# The example's answer is about 80 characters of JSON: loading it raises the generation length to
# at least this many tokens, so that even a character-level model has room to close the JSON.
EXAMPLE_LENGTH = 128
INFO = ("Leave empty for a free answer. Filled: the answer is JSON that matches this schema; the schema's fixed "
        "text (braces, keys, quotes) is written into the canvas first and drawn as pre-filled, and the model "
        "decides only the values. Tool calls are off while a schema is set.")


def load_example(gen_length: Any, block_size: Any = 1) -> tuple[str, str, int]:
    """The example button: (schema text, prompt, generation length): the length is kept when it is
    at least EXAMPLE_LENGTH, else raised to the first multiple of the block size from there."""
    current, block = (_whole(gen_length, 0), max(1, _whole(block_size, 1)))
    if current >= EXAMPLE_LENGTH:
        return EXAMPLE_TEXT, EXAMPLE_PROMPT, current
    return EXAMPLE_TEXT, EXAMPLE_PROMPT, -(-EXAMPLE_LENGTH // block) * block


def _whole(value: Any, fallback: int) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        return fallback


def parse_schema(text: Any) -> dict[str, Any] | None:
    """The box's text as a JSON schema; None when it is empty. ConfigError (a sentence naming
    where it went wrong) when it is not JSON, not an object, or not a schema."""
    text = "" if text is None else str(text)
    if not text.strip():
        return None
    if len(text) > SCHEMA_CHARS:
        raise ConfigError(f"The JSON schema is {len(text):,} characters long; keep it under {SCHEMA_CHARS:,}.")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"The JSON schema is not valid JSON: {exc.msg.lower()} at line {exc.lineno}, column "
                          f"{exc.colno}. Fix it, load the example, or empty the box for a free answer.") from None
    except RecursionError:
        raise ConfigError("The JSON schema is nested too deeply to read; a schema the scaffold can follow "
                          "nests a few levels.") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"The JSON schema must be a JSON object such as {{\"type\": \"object\", ...}}, got "
                          f"{_kind(schema)}.")
    if not ({"type", "properties", "enum", "const", "anyOf", "oneOf", "items", "$ref"} & set(schema)):
        raise ConfigError("The JSON schema says nothing about the answer: give it a \"type\" (for example "
                          "\"object\" with \"properties\") or an \"enum\".")
    return schema


def _kind(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "true or false", type(None): "null", int: "a number",
             float: "a number"}
    return names.get(type(value), "another value")


def shown_json(text: str) -> str:
    """A structured answer for the Chatbot: formatted JSON in a fenced block when it parses, else
    the text as it came with a note (the engine's report says why)."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return f"{text}\n\n(This answer is not valid JSON.)"
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def structured_answer(backend: Any, messages: list[dict[str, str]], config: GenerationConfig, *,
                      on_step: Callable[[Step], None], on_frame: Callable[[Frame], None],
                      should_stop: Callable[[], bool] | None = None) -> tuple[str | None, str]:
    """One generation under the schema's scaffold (the schema is on `config`); returns what
    `world.agent.act` returns: (the answer or None, why there is none or "")."""
    started = time.perf_counter()
    try:
        result = run(backend, prompt_ids_for(backend, messages), config, on_frame=on_frame, should_stop=should_stop)
    except ConfigError as exc:              # the context is full, or the engine cannot scaffold this schema
        return None, str(exc)
    step = Step(result.text, None, None, None, result, time.perf_counter() - started)
    on_step(step)
    if cancelled(result):
        return None, STOPPED
    return answer_of(step), ""
