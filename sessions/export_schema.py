"""What a conversation export (app/exports.py) may hold, as a JSON Schema with stated maxima.

An import is read through the bounded JSON reader (engine/json_limits.py) and checked against
EXPORT_SCHEMA before anything is written, so a hostile or careless file is refused with one
sentence (ConversationImportError) and the store stays untouched. Keywords that bound a size come
before `items` / `properties` in each schema: jsonschema yields errors in keyword order, and the
first one is all a refusal needs, so 100,000 turns are refused without walking them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from engine.json_limits import JsonLimitError, loads

from .store import KINDS

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_TITLE_CHARS = 1_000
MAX_TURNS = 5_000
MAX_TURN_CHARS = 1_000_000
MAX_FRAMES = 20_000              # frames per generation: one per forward
MAX_CANVAS = 65_536              # tokens in one generation's canvas
MAX_TOOL_CALLS = 1_000
MAX_NAME_CHARS = 200

_INT = {"type": "integer"}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
# "integerItems" (a keyword of this file's validator): every item a whole number, checked in one
# Python loop; `"items": {"type": "integer"}` costs ~10 us per item, and canvases are most of a file
_IDS = {"type": "array", "maxItems": MAX_CANVAS, "integerItems": True}
# A uniform-noise step (engine.trace.NoiseStep): what one DiffusionGemma step drew, accepted and renoised.
_NOISE_STEP = {
    "type": ["object", "null"],
    "required": ["start", "draft", "noisy", "accepted", "changed", "temperature", "mean_entropy"],
    "additionalProperties": False,
    "properties": {"start": _INT, "draft": _IDS, "noisy": _IDS, "accepted": _IDS, "changed": _IDS,
                   "temperature": _NUMBER_OR_NULL, "mean_entropy": _NUMBER_OR_NULL,
                   "stop_rule": {"enum": ["", "max_steps", "stable_confident"]}},
}
_FRAME = {
    "type": "object", "required": ["nfe", "block", "round", "committed", "canvas", "elapsed_s"],
    "properties": {
        "nfe": _INT, "block": _INT, "round": _INT, "elapsed_s": _NUMBER_OR_NULL, "canvas": _IDS, "prefilled": _IDS,
        "remasked": _IDS, "noise": _NOISE_STEP,
        "edits": {"type": "array", "maxItems": MAX_CANVAS,
                  "items": {"type": "array", "minItems": 3, "maxItems": 3, "prefixItems": [_INT, _INT, _INT]}},
        "committed": {"type": "array", "maxItems": MAX_CANVAS,
                      "items": {"type": "array", "minItems": 3, "maxItems": 3,
                                "prefixItems": [_INT, _INT, _NUMBER_OR_NULL]}},
    },
}
_STATS = {
    "type": "object", "required": ["nfe", "new_tokens", "tokens_per_forward", "seconds", "tokens_per_s",
                                   "first_token_s", "stop_reason"],
    "additionalProperties": False,
    "properties": {"nfe": _INT, "new_tokens": _INT, "tokens_per_forward": _NUMBER_OR_NULL,
                   "seconds": _NUMBER_OR_NULL, "tokens_per_s": _NUMBER_OR_NULL, "first_token_s": _NUMBER_OR_NULL,
                   "stop_reason": {"enum": ["length", "eos", "cancelled"]}, "wall_s": _NUMBER_OR_NULL,
                   "edits": _INT, "upstream_tokens_per_forward": _NUMBER_OR_NULL},
}
_GENERATION = {
    "type": ["object", "null"], "required": ["token_ids", "text", "frames", "stats"],
    "properties": {
        "token_ids": _IDS, "text": {"type": "string", "maxLength": MAX_TURN_CHARS},
        "frames": {"type": "array", "maxItems": MAX_FRAMES, "items": _FRAME}, "stats": _STATS,
        "mask_id": {"type": ["integer", "null"]}, "pad_id": {"type": ["integer", "null"]}, "eos_ids": _IDS,
        "pieces": {"type": "object", "additionalProperties": {"type": "string", "maxLength": MAX_NAME_CHARS}},
        "schema_error": {"type": ["string", "null"], "maxLength": MAX_TURN_CHARS},
        "uniform_noise": {"type": "boolean"},
    },
}
_TOOL_CALL = {
    "type": "object", "required": ["name"],
    "properties": {"step": _INT, "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                   "observation": {"type": ["string", "null"], "maxLength": MAX_TURN_CHARS},
                   "error_type": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS}},
}
_TURN = {
    "type": "object", "required": ["role", "content"],
    "properties": {
        "role": {"enum": ["system", "user", "assistant", "tool"]},
        "content": {"type": "string", "maxLength": MAX_TURN_CHARS},
        "model": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "config": {"type": ["object", "null"]},
        "generation": _GENERATION,
        "tool_calls": {"type": ["array", "null"], "maxItems": MAX_TOOL_CALLS, "items": _TOOL_CALL},
    },
}
EXPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["kind", "title", "turns"],
    "properties": {
        "kind": {"enum": list(KINDS)},
        "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
        "model": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "meta": {"type": ["object", "null"]},
        "turns": {"type": "array", "maxItems": MAX_TURNS, "items": _TURN},
    },
}


def _integer_items(_validator: Any, wanted: bool, instance: Any, _schema: Any) -> Any:
    if wanted and isinstance(instance, list):
        for index, item in enumerate(instance):
            if type(item) is not int:
                error = ValidationError("not a whole number", validator="type", validator_value="integer",
                                        instance=item, path=[index])
                yield error
                return


_Validator = validators.extend(Draft202012Validator, {"integerItems": _integer_items})
_VALIDATOR = _Validator(EXPORT_SCHEMA)


class ConversationImportError(ValueError):
    """A file that is not a conversation this app exported; the message is one sentence."""


_TYPE_WORDS = {"object": "an object", "array": "a list", "string": "text", "integer": "a whole number",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    text = "the file" if not parts else "".join(parts).lstrip(".")
    return text if len(text) <= 80 else text[:79] + "…"


def _reason(rule: str, value: Any, instance: Any) -> str:
    if rule == "type":
        kinds = value if isinstance(value, list) else [value]
        return "must be " + " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
    if rule in ("maxLength", "maxItems"):
        return f"is longer than {value:,} characters" if rule == "maxLength" else f"has more than {value:,} items"
    if rule == "minLength":
        return "is empty"
    if rule == "minItems":
        return f"has fewer than {value} items"
    if rule == "required":
        missing = [k for k in value if isinstance(instance, dict) and k not in instance]
        return f"lacks the field '{missing[0] if missing else value[0]}'"
    if rule == "enum":
        return f"must be one of {', '.join(map(str, value))}"[:120]
    if rule == "additionalProperties":
        return "has a field an export does not have"
    return "is not what an export holds"


def _sentence(error: Any) -> str:
    reason = _reason(error.validator, error.validator_value, error.instance)
    return f"This file is not a conversation export: {_where(error.absolute_path)} {reason}; nothing was imported."


def read_export(path: str | Path) -> dict[str, Any]:
    """The export at `path`, checked whole against EXPORT_SCHEMA; ConversationImportError otherwise."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConversationImportError(f"This file is {size / 1e6:.1f} MB; an import may be at most "
                                          f"{MAX_FILE_BYTES // (1024 * 1024)} MiB, so nothing was imported.")
        data = loads(Path(path).read_bytes(), "This file", max_bytes=MAX_FILE_BYTES)
    except OSError as exc:
        raise ConversationImportError(f"This file cannot be read ({exc.strerror or 'unreadable'}); "
                                      "nothing was imported.") from None
    except JsonLimitError as exc:
        raise ConversationImportError(f"{str(exc)[:220]} Nothing was imported.") from None
    error = next(_VALIDATOR.iter_errors(data), None)
    if error is not None:
        raise ConversationImportError(_sentence(error))
    return data
