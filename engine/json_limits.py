"""The one reader of untrusted JSON: API bodies, tool messages, schemas, imports, stored rows.

`json.loads` recurses once per level of nesting, so a document of 100,000 `[` raises
RecursionError (not ValueError) and a schema nested 900 deep passes the parser only to blow the
stack of whatever walks it next. Here the nesting is counted first, iteratively, in one pass over
the text (brackets inside strings skipped), and the size is checked before anything is parsed:
every refusal is a JsonLimitError whose message is one sentence naming what was too deep or too big.

The count is linear in the text, whatever the text: a string that never ends (thousands of `\\"`
pairs and no closing quote) once made a regex retry from every quote, which took 10 s for 40 KB on
the event loop. Now the text is read in windows of WINDOW characters; each window's strings are
collapsed by one regex whose repeats are possessive (they never give characters back, so a match
never fails and is never retried), and its brackets are summed in C (`bytes.translate` and
`itertools.accumulate`). A string cut by a window's end is finished by another possessive match
from where the window ended. Every character is handed to C a fixed number of times, and no single
C call (which holds the GIL) sees more than a window: a scan in a worker thread lets the event loop
run. `nesting_depth_reference` is the same count one character at a time, for the tests.
"""

from __future__ import annotations

import json
import operator
import re
from itertools import accumulate, count
from typing import Any

MAX_DEPTH = 64                  # objects / arrays inside each other: far past any real request or export
MAX_BYTES = 32 * 1024 * 1024    # a default ceiling; callers with a stated limit pass their own
STORED_BYTES = 1 << 30          # a stored row is the app's own writing: only the depth is in doubt
WINDOW = 1 << 18                # characters handed to one C call: ~10 ms of holding the GIL

# A string literal, whole, or cut short by the end of the window (a lone backslash there included).
# `++` and `*+` are possessive: a match never backtracks, and it cannot fail once it has its quote.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)   # a string's body, up to its closing quote
# Each window is read with one space after it: a string still open at the window's end swallows
# the space, a closed one leaves it last. (A literal replacement keeps `sub` in C: a template with
# group references calls back into Python for every match.)
_END = " "
# brackets as steps of the depth, shifted by one to fit a byte: [ { -> 2 (+1), ] } -> 0 (-1)
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class JsonLimitError(ValueError):
    """Untrusted JSON that is not read: too deep, too big, or not JSON; the message is a sentence."""


def nesting_depth(text: str, stop_past: int | None = None) -> int:
    """The deepest nesting of objects and arrays in `text` (0 for a bare value), counted without
    recursion in time linear in len(text); stops at the end of the window where it passes
    `stop_past` (the number returned is then past `stop_past`, not necessarily the deepest)."""
    return scan(text, stop_past)[0]


def scan(text: str, stop_past: int | None = None) -> tuple[int, int]:
    """(nesting_depth, work): work is the number of characters handed to C calls (slices, the
    string regex, the bracket sums), at most about 4 per character of `text`, so the tests and the
    bench can show the scan is linear without a clock."""
    depth = deepest = work = 0
    pos, size = 0, len(text)
    while pos < size:
        stop = min(size, pos + WINDOW)
        window = text[pos:stop]
        skeleton = _STRING.sub('""', window + _END)
        steps = skeleton.encode("utf-8", "surrogatepass").translate(_STEPS, _NOT_BRACKETS)
        work += 3 * len(window) + 2 * len(skeleton)      # the slice, the copy with _END, sub; encode, translate
        if steps:
            # depth after each bracket: depth + (sum of steps so far) - (brackets so far)
            deepest = max(deepest, depth + max(map(operator.sub, accumulate(steps), count(1))))
            depth += sum(steps) - len(steps)
            work += 3 * len(steps)
        if stop_past is not None and deepest > stop_past:
            return deepest, work
        pos = stop
        if not skeleton.endswith(_END):                   # the window ends inside a string
            run = len(window) - len(window.rstrip("\\"))
            work += run
            # an odd run of backslashes at the end of a string's body escapes the next character
            end, spent = _string_end(text, stop + run % 2)
            work += spent
            if end is None:
                break                    # the text ends inside a string: nothing after it counts
            pos = end
    return deepest, work


def _string_end(text: str, pos: int) -> tuple[int | None, int]:
    """(index after the closing quote of the string whose body goes on at `pos`, or None when the
    text ends first; characters examined), one window at a time."""
    size, spent = len(text), 0
    while pos < size:
        stop = min(size, pos + WINDOW)
        end = _STRING_REST.match(text, pos, stop).end()
        spent += end - pos + 1
        if end < stop:
            if text[end] == '"':
                return end + 1, spent
            pos = end + 2                # a backslash at the window's edge: it escapes the next character
        else:
            pos = stop
    return None, spent


def nesting_depth_reference(text: str) -> int:
    """The slow reference of `nesting_depth`: one character at a time, a string state and an
    escape state (JSON's grammar for strings), brackets counted outside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
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
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise JsonLimitError(f"{what} is not valid JSON ({exc.msg.lower()} at line {exc.lineno}, "
                             f"column {exc.colno}).") from None
    except (ValueError, RecursionError):      # a huge integer literal; recursion as the last guard
        raise JsonLimitError(f"{what} is not JSON this app can read.") from None
    if has_lone_surrogate(value):
        raise JsonLimitError(f"{what} holds a lone surrogate escape (such as \\ud800), which is not text; "
                             "send each character whole.")
    return value


def has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed value holds a string (or key) with half of a UTF-16 pair: json.loads keeps
    `"\\ud800"` as such a string, which cannot be encoded, stored or tokenized."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def read_stored(text: str | bytes) -> Any:
    """A JSON column read back from the session store: bounded like any input, since the file may
    have been edited or imported."""
    return loads(text, "A stored value in the session database", max_bytes=STORED_BYTES)
