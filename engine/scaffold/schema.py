"""A JSON schema compiled into the shapes the scaffold can write: fixed text (`Lit`), choices
(`Alt`), sequences (`Seq`) and value slots (`Str`, `Int`, `Num`), plus objects and arrays whose
keys and items are laid out lazily by engine/scaffold/machine.py.

The subset: `type` object / string / integer / number / boolean / null / array, `enum`, `const`,
`anyOf` / `oneOf`, `properties` + `required`, `minLength` / `maxLength` / `pattern`, `minimum` /
`maximum` / `exclusiveMinimum` / `exclusiveMaximum`, `items` / `minItems` / `maxItems`.
Annotations (`title`, `description`, `default`, `examples`, `format`, `$schema`,
`additionalProperties`) are read past: the scaffold never writes a key the schema does not name,
and writes JSON compactly, keys in the schema's order. Anything else is refused with a sentence.

Every slot has a budget in characters, which bounds its tokens (a token writes at least one
character): enum and const members are fixed text; strings `maxLength` (else STRING_CHARS);
integers the digits of their bounds (else INTEGER_DIGITS); numbers NUMBER_CHARS; arrays
`maxItems` (else ARRAY_ITEMS).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# an unbounded string slot's budget: room for a sentence (finish's answer, e.g. the ~90-character
# honest reply to a request outside the world); the canvas left bounds it further
STRING_CHARS = 160
INTEGER_DIGITS = 9         # an unbounded integer's digits
NUMBER_CHARS = 12          # a number's characters: sign, digits, point
ARRAY_ITEMS = 8            # an unbounded array's items
FREE_DEPTH = 1             # a free value ({"type": "object"} with no properties) nests this deep,
FREE_ITEMS = 4             # has at most this many keys or items,
FREE_CHARS = 24            # and strings and keys of at most this many characters
MAX_DEPTH = 8              # nesting of objects / arrays / choices
MAX_NODES = 400            # schemas past this size are not something the scaffold should lay out
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "format", "$schema", "$id", "$comment",
                         "additionalProperties", "deprecated", "readOnly", "writeOnly", "strict", "name"})
REFUSED = ("$ref", "$defs", "definitions", "allOf", "not", "if", "then", "else", "dependentSchemas",
           "dependentRequired", "patternProperties", "propertyNames", "prefixItems", "contains",
           "unevaluatedProperties", "unevaluatedItems")
KEYWORDS = {
    "object": {"type", "properties", "required"},
    "string": {"type", "minLength", "maxLength", "pattern", "enum", "const"},
    "integer": {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const"},
    "number": {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const"},
    "boolean": {"type", "enum", "const"},
    "null": {"type", "enum", "const"},
    "array": {"type", "items", "minItems", "maxItems"},
}


class SchemaError(ValueError):
    """A schema the scaffold cannot lay out; the message is a sentence for a person."""


@dataclass(frozen=True, eq=False)   # compared by identity: hashing a deep shape each step is slow
class Lit:
    text: str                                   # fixed text


@dataclass(frozen=True, eq=False)
class Alt:
    options: tuple[Any, ...]                    # exactly one is written


@dataclass(frozen=True, eq=False)
class Seq:
    items: tuple[Any, ...]


@dataclass(frozen=True, eq=False)
class Str:
    min_chars: int
    max_chars: int                              # the slot's budget
    pattern: str | None                         # JSON Schema pattern (a search, not anchored)


@dataclass(frozen=True, eq=False)
class Int:
    low: int                                    # inclusive bounds
    high: int

    @property
    def max_chars(self) -> int:
        return max(len(str(self.low)), len(str(self.high)))


@dataclass(frozen=True, eq=False)
class Num:
    low: float | None
    high: float | None
    low_open: bool                              # exclusive bounds
    high_open: bool
    max_chars: int = NUMBER_CHARS


@dataclass(frozen=True, eq=False)
class Obj:
    keys: tuple[tuple[str, Any, bool], ...]     # (key, value shape, required), in schema order


@dataclass(frozen=True, eq=False)
class Arr:
    item: Any
    min_items: int
    max_items: int
    brackets: str = "[]"                        # "{}" with `"key":value` items: an object of free keys


def dumps(value: Any) -> str:
    """Compact JSON, as the world writes it (world/format.py)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _range(schema: dict[str, Any], keys: tuple[str, str], default: int, path: str) -> tuple[int, int]:
    """(lowest, highest) of minLength / maxLength or minItems / maxItems: the highest is `default`
    when not given, and at most 4 x `default` (a budget, not the schema's limit) unless the lowest
    needs more."""
    low_key, high_key = keys
    low = schema.get(low_key, 0)
    high = schema.get(high_key, max(default, low) if _whole(low) else default)
    if not (_whole(low) and _whole(high) and 0 <= low <= high):
        raise SchemaError(f"The {low_key} and {high_key} {_where(path)} must be whole numbers with "
                          f"{low_key} <= {high_key}.")
    return low, min(high, max(low, 4 * default))


class _Compiler:
    def __init__(self) -> None:
        self.nodes = 0

    def shape(self, schema: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SchemaError(f"The schema is too large to scaffold (over {MAX_NODES} parts); make it smaller.")
        if depth > MAX_DEPTH:
            raise SchemaError(f"The schema nests deeper than {MAX_DEPTH} levels {_where(path)}; flatten it.")
        if schema is True or schema == {}:
            raise SchemaError(f"The schema allows any value {_where(path)}; give it a type so the scaffold "
                              "knows what to write.")
        if not isinstance(schema, dict):
            raise SchemaError(f"The schema {_where(path)} must be a JSON object, got {type(schema).__name__}.")
        refused = [k for k in REFUSED if k in schema]
        if refused:
            raise SchemaError(f"The scaffold cannot follow {refused[0]} {_where(path)}; write that part of the "
                              "schema out in full (type, properties, enum).")
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.choice(schema, key, path, depth)
        if "const" in schema:
            return Lit(self.scalar(schema["const"], path))
        if "enum" in schema:
            members = schema["enum"]
            if not isinstance(members, list) or not members:
                raise SchemaError(f"The enum {_where(path)} must be a non-empty list of values.")
            texts = list(dict.fromkeys(self.scalar(m, path) for m in members))
            return Lit(texts[0]) if len(texts) == 1 else Alt(tuple(Lit(t) for t in texts))
        kind = schema.get("type")
        if isinstance(kind, list):
            if not kind or not all(isinstance(k, str) for k in kind):
                raise SchemaError(f"The type list {_where(path)} must name at least one type.")
            return Alt(tuple(self.shape({**schema, "type": k}, path, depth + 1) for k in dict.fromkeys(kind)))
        if kind not in KEYWORDS:
            raise SchemaError(f"The schema {_where(path)} has no type the scaffold can write; use one of "
                              f"{', '.join(KEYWORDS)}, an enum or a const.")
        unknown = sorted(k for k in schema if k not in KEYWORDS[kind] and k not in ANNOTATIONS)
        if unknown:
            usable = ", ".join(sorted(KEYWORDS[kind] - {"type"}))
            raise SchemaError(f"The scaffold cannot follow {', '.join(map(str, unknown[:3]))} in the {kind} "
                              f"schema {_where(path)}; remove it or use {usable}.")
        return getattr(self, f"_{kind}")(schema, path, depth)

    def choice(self, schema: dict[str, Any], key: str, path: str, depth: int) -> Any:
        options = schema[key]
        if not isinstance(options, list) or not options:
            raise SchemaError(f"The {key} {_where(path)} must be a non-empty list of schemas.")
        return Alt(tuple(self.shape(o, f"{path}/{key}/{i}", depth + 1) for i, o in enumerate(options)))

    def scalar(self, value: Any, path: str) -> str:
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"The value {value} {_where(path)} is not JSON.")
        if isinstance(value, dict | list):
            return dumps(value)
        if value is None or isinstance(value, str | bool | int | float):
            return dumps(value)
        raise SchemaError(f"The value {_where(path)} is not JSON.")

    def _object(self, schema: dict[str, Any], path: str, depth: int) -> Obj:
        if not schema.get("properties") and not schema.get("required") and schema.get("additionalProperties",
                                                                                        True) is not False:
            return free_object(FREE_DEPTH)                                     # {"type": "object"}: any object
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, dict):
            raise SchemaError(f"The properties {_where(path)} must be an object of key -> schema.")
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(f"The required list {_where(path)} must be a list of key names.")
        missing = [r for r in required if r not in properties]
        if missing:
            raise SchemaError(f"The required list {_where(path)} names {missing[0]!r}, which is not in properties.")
        keys = tuple((str(k), self.shape(v, f"{path}/{k}", depth + 1), k in required) for k, v in properties.items())
        return Obj(keys)

    def _string(self, schema: dict[str, Any], path: str, depth: int) -> Str:
        low, high = _range(schema, ("minLength", "maxLength"), STRING_CHARS, path)
        pattern = schema.get("pattern")
        if pattern is not None:
            import regex

            try:
                regex.compile(pattern)
            except (regex.error, TypeError) as exc:
                raise SchemaError(f"The pattern {_where(path)} is not a regular expression ({exc}).") from None
        return Str(low, high, pattern)

    def _bounds(self, schema: dict[str, Any], path: str) -> tuple[Any, Any, bool, bool]:
        values = {k: schema.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")}
        for key, value in values.items():
            if value is not None and not _real(value):
                raise SchemaError(f"The {key} {_where(path)} must be a number.")
        low, high = values["minimum"], values["maximum"]
        low_open = high_open = False
        if values["exclusiveMinimum"] is not None and (low is None or values["exclusiveMinimum"] >= low):
            low, low_open = values["exclusiveMinimum"], True
        if values["exclusiveMaximum"] is not None and (high is None or values["exclusiveMaximum"] <= high):
            high, high_open = values["exclusiveMaximum"], True
        return low, high, low_open, high_open

    def _integer(self, schema: dict[str, Any], path: str, depth: int) -> Int:
        low, high, low_open, high_open = self._bounds(schema, path)
        limit = 10 ** INTEGER_DIGITS - 1
        low = -limit if low is None else (math.floor(low) + 1 if low_open else math.ceil(low))
        high = limit if high is None else (math.ceil(high) - 1 if high_open else math.floor(high))
        if low > high:
            raise SchemaError(f"No whole number fits the bounds {_where(path)}.")
        return Int(max(low, -limit * 10), min(high, limit * 10))

    def _number(self, schema: dict[str, Any], path: str, depth: int) -> Num:
        low, high, low_open, high_open = self._bounds(schema, path)
        if low is not None and high is not None and (low > high or (low == high and (low_open or high_open))):
            raise SchemaError(f"No number fits the bounds {_where(path)}.")
        return Num(low, high, low_open, high_open)

    def _boolean(self, schema: dict[str, Any], path: str, depth: int) -> Alt:
        return Alt((Lit("true"), Lit("false")))

    def _null(self, schema: dict[str, Any], path: str, depth: int) -> Lit:
        return Lit("null")

    def _array(self, schema: dict[str, Any], path: str, depth: int) -> Arr:
        low, high = _range(schema, ("minItems", "maxItems"), ARRAY_ITEMS, path)
        item = self.shape(schema["items"], f"{path}/items", depth + 1) if "items" in schema else free_value(FREE_DEPTH)
        return Arr(item, low, high)


def free_value(depth: int) -> Alt:
    """Any JSON value, nested at most `depth` levels: what {"type": "object"} leaves open."""
    scalars = (Str(0, FREE_CHARS, None), Num(None, None, False, False), Lit("true"), Lit("false"), Lit("null"))
    if depth <= 0:
        return Alt(scalars)
    return Alt((*scalars, free_object(depth - 1), Arr(free_value(depth - 1), 0, FREE_ITEMS)))


def free_object(depth: int) -> Arr:
    """An object with free keys (a key may repeat, as JSON allows)."""
    entry = Seq((Str(1, FREE_CHARS, None), Lit(":"), free_value(depth)))
    return Arr(entry, 0, FREE_ITEMS, "{}")


def compile_schema(schema: Any) -> Any:
    """The shape of a JSON schema; SchemaError (a sentence) when the scaffold cannot write it."""
    if not isinstance(schema, dict):
        raise SchemaError("A JSON schema must be a JSON object such as {\"type\": \"object\", \"properties\": ...}.")
    try:
        return _Compiler().shape(schema, "", 0)
    except RecursionError:
        raise SchemaError("The schema nests too deeply to scaffold; flatten it.") from None


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be scaffolded, as a short sentence; None when it can."""
    try:
        compile_schema(schema)
    except SchemaError as error:
        message = str(error)
        return message if len(message) <= 240 else message[:236] + "...."
    except Exception:  # noqa: BLE001 - any odd value is a sentence, never a traceback
        return "The JSON schema could not be read; give a JSON object with a type."
    return None


def longest(shape: Any) -> int:
    """The most characters a value of `shape` can take (budgets included): a canvas this long in
    tokens always has room, since a token writes at least one character."""
    if isinstance(shape, Lit):
        return len(shape.text)
    if isinstance(shape, Alt):
        return max(longest(o) for o in shape.options)
    if isinstance(shape, Seq):
        return sum(longest(i) for i in shape.items)
    if isinstance(shape, Str):
        return shape.max_chars + 2
    if isinstance(shape, Int | Num):
        return shape.max_chars
    if isinstance(shape, Obj):
        return 2 + sum(len(dumps(k)) + 2 + longest(v) for k, v, _ in shape.keys)
    if isinstance(shape, Arr):
        return 2 + shape.max_items * (longest(shape.item) + 1)
    raise TypeError(f"unknown scaffold shape {type(shape).__name__}")
