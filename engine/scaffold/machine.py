"""The shapes of engine/scaffold/schema.py as a character automaton: which characters may come
next, which text is forced, and when the value is complete.

A state is a tuple of stacks, one per way the text so far can still be read (a choice keeps
one stack per live option, as an NFA). A stack is the continuation: the shapes still to write,
innermost first. Its head is always something that reads characters: fixed text with an
offset (`At`), or the inside of a value slot (`InStr`, `InNum`); an empty stack means the value
is complete. Objects and arrays unfold lazily, so a schema with many optional keys or long
arrays never builds its alternatives up front.

Optional keys: after each value, the next key may be any later key up to and including the
first required one (keys keep the schema's order), or the closing brace once no required key
is left. The model decides, as it decides any other token: the first characters of the keys
it may write are its candidates (`,"colo` or `}`), and once its token leaves one key possible
the rest of that key is forced text. So an optional key is present exactly when the model
writes it at the place the schema's order allows, and the scaffold never invents one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from engine.scaffold.schema import Alt, Arr, Int, Lit, Num, Obj, Seq, Str, dumps

DIGITS = "0123456789"
FORCED_CHARS = 4096        # a forced run longer than this is a schema bug, not text
SEARCH_NODES = 4000        # strings tried when searching for a pattern's completion
CACHED_STATES = 1 << 16    # states are immutable: a call's skeleton recurs across turns and episodes


@dataclass(frozen=True)
class At:
    text: str
    offset: int


@dataclass(frozen=True)
class InStr:
    shape: Str
    content: str


@dataclass(frozen=True)
class InNum:
    shape: Int | Num
    text: str


@dataclass(frozen=True)
class ObjRest:
    shape: Obj
    index: int                                  # the next key that may be written
    first: bool                                 # no key written yet


@dataclass(frozen=True)
class ArrRest:
    shape: Arr
    count: int                                  # items written


Stack = tuple[Any, ...]
State = tuple[Stack, ...]


@lru_cache(maxsize=512)
def _search(pattern: str):
    import regex

    # JSON Schema patterns search; wrapped so a prefix can be tested for a possible match
    return regex.compile(pattern), regex.compile(f"(?s:.*?)(?:{pattern})(?s:.*)")


def _string_ok(shape: Str, content: str, closing: bool) -> bool:
    if len(content) > shape.max_chars:
        return False
    if shape.pattern is None:
        return len(content) >= shape.min_chars if closing else True
    full, prefix = _search(shape.pattern)
    if closing:
        return len(content) >= shape.min_chars and full.search(content) is not None
    return prefix.fullmatch(content, partial=True) is not None and _closable(shape, content)


@lru_cache(maxsize=4096)
def _closable(shape: Str, content: str) -> bool:
    """Whether the content can still be closed within the slot's budget: a breadth-first search
    for the shortest completion that matches, over the characters the pattern names (digits,
    letters, its literals). Without it a model could fill the budget with text the pattern
    cannot end in. Past SEARCH_NODES it gives up and says yes (best effort)."""
    full, prefix = _search(shape.pattern)
    alphabet = sorted(set("0aA") | {c for c in shape.pattern if c.isalnum() or c in "@.-_ :/"})
    level, seen = [content], 0
    for _ in range(shape.max_chars - len(content) + 1):
        if any(len(t) >= shape.min_chars and full.search(t) for t in level):
            return True
        level = [t + c for t in level for c in alphabet if prefix.fullmatch(t + c, partial=True)]
        seen += len(level)
        if not level:
            return False
        if seen > SEARCH_NODES:
            return True
    return False


def _number_complete(shape: Int | Num, text: str) -> bool:
    if not text or text[-1] in "-." or text in ("-",):
        return False
    value = float(text)
    if isinstance(shape, Int):
        return shape.low <= int(text) <= shape.high
    if shape.low is not None and (value < shape.low or (shape.low_open and value == shape.low)):
        return False
    return not (shape.high is not None and (value > shape.high or (shape.high_open and value == shape.high)))


def _number_prefix_ok(shape: Int | Num, text: str) -> bool:
    """Whether `text` can still grow into a number of the shape within its budget (JSON's
    grammar, then the bounds: some value the prefix can reach within the characters left lies
    in them, so a model can never write itself into a dead end such as "0.000" with no room for
    the digit > 0 that exclusiveMinimum 0 needs)."""
    room = shape.max_chars - len(text)
    if room < 0:
        return False
    negative = text.startswith("-")
    body = text[1:] if negative else text
    if "-" in body or body.count(".") > (0 if isinstance(shape, Int) else 1) or body.startswith("."):
        return False
    whole = body.split(".")[0]
    if len(whole) > 1 and whole[0] == "0":
        return False                                                          # JSON: no leading zeros
    if not body:                                                              # "" or "-": a digit must follow
        return room >= 1 and (not negative or shape.low is None or shape.low < 0)
    return any(_meets(shape, -b if negative else a, -a if negative else b) for a, b in _reachable(shape, body, room))


def _reachable(shape: Int | Num, body: str, room: int) -> list[tuple[float, float]]:
    """Closed ranges [a, b] holding values an unsigned prefix can still become (each value in
    them reachable up to the decimals the room allows)."""
    if "." in body:
        whole, fraction = body.split(".")
        if not fraction and room == 0:
            return []
        value = float(f"{whole}.{fraction or '0'}")
        step = 10.0 ** -len(fraction) if room else 0.0
        return [(value, value + step - 10.0 ** -(len(fraction) + room) if room else value)]
    d = int(body)
    ranges = [(float(d), float(d))]
    if isinstance(shape, Num) and room >= 2:
        ranges.append((float(d), d + 1 - 10.0 ** -(room - 1)))
    if d:
        ranges += [(float(d * 10 ** j), float((d + 1) * 10 ** j - 1)) for j in range(1, room + 1)]
    return ranges


def _meets(shape: Int | Num, a: float, b: float) -> bool:
    """Whether [a, b] has a value inside the shape's bounds."""
    if isinstance(shape, Int):
        return a <= shape.high and b >= shape.low and math.floor(b) >= math.ceil(a) or (
            a == b and shape.low <= a <= shape.high)
    if shape.low is not None and (b < shape.low or (shape.low_open and b <= shape.low)):
        return False
    return not (shape.high is not None and (a > shape.high or (shape.high_open and a >= shape.high)))


def _expand(stack: Stack) -> list[Stack]:
    """The stacks `stack` stands for whose head reads characters (or that are empty)."""
    if not stack:
        return [stack]
    head, rest = stack[0], stack[1:]
    if isinstance(head, Lit):
        return _expand((At(head.text, 0), *rest)) if head.text else _expand(rest)
    if isinstance(head, At):
        return [stack] if head.offset < len(head.text) else _expand(rest)
    if isinstance(head, Seq):
        return _expand((*head.items, *rest))
    if isinstance(head, Alt):
        return [s for option in head.options for s in _expand((option, *rest))]
    if isinstance(head, Str):
        return [(At('"', 0), InStr(head, ""), *rest)]
    if isinstance(head, InStr):
        return [stack]
    if isinstance(head, Int | Num):
        return [(InNum(head, ""), *rest)]
    if isinstance(head, InNum):
        # a number has no closing character: it may end wherever it is complete
        return [stack, *(_expand(rest) if _number_complete(head.shape, head.text) else [])]
    if isinstance(head, Obj):
        return _expand((Lit("{"), ObjRest(head, 0, True), *rest))
    if isinstance(head, ObjRest):
        return [s for option in _object_options(head) for s in _expand((*option, *rest))]
    if isinstance(head, Arr):
        return _expand((Lit(head.brackets[0]), ArrRest(head, 0), *rest))
    if isinstance(head, ArrRest):
        return [s for option in _array_options(head) for s in _expand((*option, *rest))]
    raise TypeError(f"unknown scaffold shape {type(head).__name__}")


def _object_options(rest: ObjRest) -> list[tuple[Any, ...]]:
    keys = rest.shape.keys
    options: list[tuple[Any, ...]] = []
    for i in range(rest.index, len(keys)):
        key, value, required = keys[i]
        options.append((Lit(("" if rest.first else ",") + dumps(key) + ":"), value, ObjRest(rest.shape, i + 1, False)))
        if required:
            return options
    return [*options, (Lit("}"),)]


def _array_options(rest: ArrRest) -> list[tuple[Any, ...]]:
    shape, count = rest.shape, rest.count
    options: list[tuple[Any, ...]] = []
    if count < shape.max_items:
        options.append(((Lit(",") if count else Lit("")), shape.item, ArrRest(shape, count + 1)))
    if count >= shape.min_items:
        options.append((Lit(shape.brackets[1]),))
    return options


def _step(stack: Stack, char: str) -> list[Stack]:
    if not stack:
        return []
    head, rest = stack[0], stack[1:]
    if isinstance(head, At):
        if head.text[head.offset] != char:
            return []
        return _expand((At(head.text, head.offset + 1), *rest))
    if isinstance(head, InStr):
        if char == '"':
            return _expand(rest) if _string_ok(head.shape, head.content, closing=True) else []
        if char == "\\" or ord(char) < 0x20 or char == "\ufffd":
            return []                                                         # no escapes: values never need them here
        content = head.content + char
        return [(InStr(head.shape, content), *rest)] if _string_ok(head.shape, content, closing=False) else []
    if isinstance(head, InNum):
        if char not in DIGITS + "-.":
            return []
        text = head.text + char
        return _expand((InNum(head.shape, text), *rest)) if _number_prefix_ok(head.shape, text) else []
    raise TypeError(f"unexpanded scaffold head {type(head).__name__}")


def start(shape: Any) -> State:
    """The state before any character of a value of `shape`."""
    return tuple(dict.fromkeys(_expand((shape,))))


@lru_cache(maxsize=CACHED_STATES)
def advance(state: State, text: str) -> State:
    """The state after `text`; empty when `text` cannot come next."""
    for char in text:
        state = tuple(dict.fromkeys(s for stack in state for s in _step(stack, char)))
        if not state:
            return state
    return state


def complete(state: State) -> bool:
    """Whether the text so far is a whole value (it may still be able to go on)."""
    return any(not stack for stack in state)


def finished(state: State) -> bool:
    """Whether the value is complete and nothing more may follow."""
    return bool(state) and all(not stack for stack in state)


def _next_chars(stack: Stack) -> set[str] | None:
    """The characters that may come next on this stack; None when many may (a free slot)."""
    if not stack:
        return set()
    head = stack[0]
    if isinstance(head, At):
        return {head.text[head.offset]}
    if isinstance(head, InStr):
        if len(head.content) >= head.shape.max_chars:
            return {'"'}
        return None
    if isinstance(head, InNum):
        return {c for c in DIGITS + "-." if _step(stack, c)}       # its ending is the other stacks of the state
    return None


@lru_cache(maxsize=CACHED_STATES)
def forced(state: State) -> str:
    """The text that must come next whatever the model does: the characters up to the next
    place where a choice is open (or the end)."""
    out = []
    while len(out) < FORCED_CHARS:
        if complete(state):
            break
        chars: set[str] = set()
        for stack in state:
            options = _next_chars(stack)
            if options is None:
                return "".join(out)
            chars |= options
        if len(chars) != 1:
            break
        char = chars.pop()
        out.append(char)
        state = advance(state, char)
    return "".join(out)


@lru_cache(maxsize=CACHED_STATES)
def placeable(state: State) -> str:
    """The forced text the scaffold writes now: all of it, except a trailing run of punctuation
    when what may follow it starts with punctuation too. A byte-level BPE writes `","` or `"}}`
    as one piece; placing the `"` alone would hand the model a split it never saw (Sprout then
    closed the object instead of writing the next key), so that run is left for the model's
    token, which covers it and the choice after it."""
    text = forced(state)
    if not text or finished(advance(state, text)):
        return text
    after = advance(state, text)
    starts: set[str] = set()
    for stack in after:
        chars = _next_chars(stack)
        if chars:
            starts |= chars
    if not any(_punctuation(c) for c in starts):
        return text
    cut = len(text)
    while cut and _punctuation(text[cut - 1]):
        cut -= 1
    return text[:cut]


def _punctuation(char: str) -> bool:
    return not (char.isalnum() or char.isspace())


@lru_cache(maxsize=CACHED_STATES)
def shortest(state: State) -> int:
    """The fewest characters that can still finish the value (an upper bound on the tokens
    needed, a token writing at least one character): the decoder keeps this much room in the
    canvas, so a model that never closes its strings still ends with whole JSON."""
    return min((sum(_min_chars(item) for item in stack) for stack in state), default=0)


@lru_cache(maxsize=CACHED_STATES)
def _min_chars(item: Any) -> int:
    if isinstance(item, At):
        return len(item.text) - item.offset
    if isinstance(item, Lit):
        return len(item.text)
    if isinstance(item, Seq):
        return sum(_min_chars(i) for i in item.items)
    if isinstance(item, Alt):
        return min(_min_chars(o) for o in item.options)
    if isinstance(item, Str):
        return 2 + item.min_chars
    if isinstance(item, InStr):
        return 1 + max(0, item.shape.min_chars - len(item.content))
    if isinstance(item, Int | Num):
        return 1
    if isinstance(item, InNum):
        return 0 if _number_complete(item.shape, item.text) else 1
    if isinstance(item, Obj):
        return 1 + _min_chars(ObjRest(item, 0, True))
    if isinstance(item, ObjRest):
        keys = [(k, v) for k, v, required in item.shape.keys[item.index:] if required]
        return 1 + sum(len(dumps(k)) + 2 + _min_chars(v) for k, v in keys)
    if isinstance(item, Arr):
        return 1 + _min_chars(ArrRest(item, 0))
    if isinstance(item, ArrRest):
        return 1 + max(0, item.shape.min_items - item.count) * (_min_chars(item.shape.item) + 1)
    raise TypeError(f"unknown scaffold shape {type(item).__name__}")


def slot_of(state: State) -> Any:
    """The value slot being written (an InStr / InNum head), or None between slots: the test's
    view of where budgets apply."""
    heads = {stack[0] for stack in state if stack and isinstance(stack[0], InStr | InNum)}
    return next(iter(heads)) if len(heads) == 1 else None
