"""The one reader of untrusted JSON: API bodies, tool messages, schemas, imports, stored rows.

`json.loads` recurses once per level of nesting, so a document of 100,000 `[` raises
RecursionError (not ValueError) and a schema nested 900 deep passes the parser only to blow the
stack of whatever walks it next. Here the nesting is counted first, iteratively, in one pass over
the text (brackets inside strings skipped), and the size is checked before anything is parsed:
every refusal is a JsonLimitError whose message is one sentence naming what was too deep or too big.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64                  # objects / arrays inside each other: far past any real request or export
MAX_BYTES = 32 * 1024 * 1024    # a default ceiling; callers with a stated limit pass their own
STORED_BYTES = 1 << 30          # a stored row is the app's own writing: only the depth is in doubt

# a string literal, or one bracket: the scan jumps over strings in one regex step each
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonLimitError(ValueError):
    """Untrusted JSON that is not read: too deep, too big, or not JSON; the message is a sentence."""


def nesting_depth(text: str, stop_past: int | None = None) -> int:
    """The deepest nesting of objects and arrays in `text` (0 for a bare value), counted without
    recursion; stops early once it passes `stop_past`."""
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_past is not None and deepest > stop_past:
                    return deepest
        elif token in "]}":
            depth -= 1
    return deepest


def too_deep(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `text` nests past `max_depth`: the question to ask before parsing it any other way."""
    return nesting_depth(text, stop_past=max_depth) > max_depth


def value_depth(value: Any, stop_past: int | None = None) -> int:
    """The same count for a value already parsed (a dict given in code), with an explicit stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple)) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if stop_past is not None and deepest > stop_past:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1_000_000 else f"{count:,} bytes"


def _too_deep(what: str, max_depth: int) -> JsonLimitError:
    return JsonLimitError(f"{what} nests objects or arrays more than {max_depth} levels deep; "
                          f"keep it to {max_depth} levels or fewer.")


def check_depth(value: Any, what: str, max_depth: int = MAX_DEPTH) -> None:
    if value_depth(value, stop_past=max_depth) > max_depth:
        raise _too_deep(what, max_depth)


def loads(data: str | bytes | bytearray, what: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """`data` parsed, or JsonLimitError naming `what` (e.g. "The request body") and the limit it broke."""
    if len(data) > max_bytes:
        raise JsonLimitError(f"{what} is {_size(len(data))}, more than the {_size(max_bytes)} allowed; "
                             "send something smaller.")
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise JsonLimitError(f"{what} is not UTF-8 text, so it is not JSON.") from None
    if too_deep(data, max_depth):
        raise _too_deep(what, max_depth)
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise JsonLimitError(f"{what} is not valid JSON ({exc.msg.lower()} at line {exc.lineno}, "
                             f"column {exc.colno}).") from None
    except (ValueError, RecursionError):      # a huge integer literal; recursion as the last guard
        raise JsonLimitError(f"{what} is not JSON this app can read.") from None


def read_stored(text: str | bytes) -> Any:
    """A JSON column read back from the session store: bounded like any input, since the file may
    have been edited or imported."""
    return loads(text, "A stored value in the session database", max_bytes=STORED_BYTES)
