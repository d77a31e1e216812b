"""Which values of a tool call the model read nowhere: not in the conversation (the system text
and the person's messages) and not in an earlier tool response. A value that was copied appears
there; one that did not appear was made up or miscopied (`mia.exam@post.io` for
`mia@example.com`, an id no search returned), and the views mark it (Chat, the Agent tab's
steps, the Sessions transcript and the HTML replay all call `unseen_in_call`).

What "appears" means, per kind of value:

- text: after case folding and collapsing every run of whitespace to one space, the value
  occurs in a known text with no letter or digit glued to either end ("L" appears in "size L",
  not in "Please"). A value made of letters and spaces may also appear in its plural
  ("jacket" in "two navy jackets", "dress" in "dresses"); a value with other characters (an
  email, an id) must appear exactly.
- number: equal (to a relative 1e-9) to a number written in a known text ("$1,250.50",
  "923 and 984", "x3"; digits inside an id such as "P20" are not a number), to a number word
  ("two"), or to a number in a tool response. 1 always counts: "a dress" asks for one.
- a choice from a closed list of the tool's schema (a colour, a size, an invoice status): the
  model may choose it by meaning ("still owes" is status "unpaid"), so it is marked only when it
  does not appear and another member of the list does ("blue" when the person asked for navy).
- true, false, null and empty text carry nothing copied and are never marked.

Known values are texts (a message) or JSON values (a tool response, walked to its leaves).
Pure functions: no world, no model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from world.tools import FINISH, TOOLS_BY_NAME

NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
ALWAYS_KNOWN_NUMBERS = (1,)                 # "a" / "an" / "single": one of something
# A number stands alone: no letter, digit or "." glued before it (an "x" may be: "x3"), no
# letter or digit after it. One pattern reads "1,250.50" whole, the other reads "923,984" as two.
_BEFORE = r"(?<!\.)(?<![^\Wx])"
_PLAIN_NUMBER = re.compile(_BEFORE + r"\d+(?:\.\d+)?(?!\w)")
_GROUPED_NUMBER = re.compile(_BEFORE + r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b")
_WORDS_ONLY = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")
_ALNUM = r"[^\W_]"


@dataclass(frozen=True)
class Unseen:
    """One value of a call that appears nowhere the model could have read it."""
    path: str            # where it sits in the arguments: "email", "amounts[1]"
    value: Any


def normalise(text: str) -> str:
    """Case-folded, every run of whitespace one space, trimmed."""
    return " ".join(str(text).casefold().split())


def _leaves(value: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    """(path, leaf) for every leaf of a JSON value, depth first, without recursion."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
        else:
            yield where, item


@dataclass(frozen=True)
class Known:
    """Everything the model could have copied from: one text of all known texts, and the numbers."""
    text: str
    numbers: tuple[float, ...]

    @classmethod
    def of(cls, sources: Iterable[Any]) -> Known:
        """`sources`: message texts (str) and tool responses (any JSON value)."""
        texts: list[str] = []
        numbers: list[float] = list(ALWAYS_KNOWN_NUMBERS)
        for source in sources:
            for _, leaf in _leaves(source):
                if isinstance(leaf, bool) or leaf is None:
                    continue
                if isinstance(leaf, (int, float)):
                    numbers.append(float(leaf))
                texts.append(normalise(leaf))
        for text in texts:
            numbers += numbers_in(text)
        # joined by newlines, which normalised text never holds: no value matches across two texts
        return cls("\n".join(texts), tuple(numbers))

    def has_number(self, number: float) -> bool:
        return any(math.isclose(number, known, rel_tol=1e-9, abs_tol=1e-9) for known in self.numbers)

    def has_text(self, value: str) -> bool:
        wanted = normalise(value)
        if not wanted:
            return True
        pattern = re.escape(wanted)
        if _WORDS_ONLY.fullmatch(wanted):
            pattern += "(?:e?s)?"                 # a word may appear in its plural
        if re.match(_ALNUM, wanted):
            pattern = f"(?<!{_ALNUM})" + pattern
        if re.search(_ALNUM + "$", wanted):
            pattern += f"(?!{_ALNUM})"
        return re.search(pattern, self.text) is not None


def numbers_in(text: str) -> list[float]:
    """The numbers a text writes, in digits or in words ("two"); "1,250" also as 1 and 250."""
    found = [float(m.group(0)) for m in _PLAIN_NUMBER.finditer(text)]
    found += [float(m.group(0).replace(",", "")) for m in _GROUPED_NUMBER.finditer(text)]
    found += [float(NUMBER_WORDS[m.group(1)]) for m in _NUMBER_WORD.finditer(text.casefold())]
    return found


def _seen(value: Any, known: Known) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, (int, float)):
        return known.has_number(float(value))
    text = str(value)
    if known.has_text(text):
        return True
    try:                                          # a number written as text: "3"
        return known.has_number(float(text.replace(",", "")))
    except ValueError:
        return False


def _chosen_fairly(value: Any, members: list[Any], known: Known) -> bool:
    """A member of a closed list passes unless the known texts name another member instead."""
    return not any(member != value and _seen(member, known) for member in members)


def unseen_values(arguments: Any, known: Known, choices: dict[str, list[Any]] | None = None) -> list[Unseen]:
    """Every leaf of `arguments` that does not appear in `known`, in argument order. `choices`
    maps a leaf's path to the closed list its value comes from (see the module docstring)."""
    choices = choices or {}
    return [Unseen(path, value) for path, value in _leaves(arguments)
            if not _seen(value, known) and not (path in choices and _chosen_fairly(value, choices[path], known))]


def schema_choices(name: str, arguments: dict[str, Any]) -> dict[str, list[Any]]:
    """The closed lists (`enum`) of a registry tool's arguments, by leaf path; {} for other tools."""
    properties = TOOLS_BY_NAME.get(name, {}).get("inputSchema", {}).get("properties", {})
    out: dict[str, list[Any]] = {}
    for key, value in arguments.items():
        schema = properties.get(key) or {}
        if "enum" in schema:
            out[key] = list(schema["enum"])
        elif "enum" in (schema.get("items") or {}) and isinstance(value, list):
            out.update((f"{key}[{i}]", list(schema["items"]["enum"])) for i in range(len(value)))
    return out


def unseen_in_call(call: dict[str, Any] | None, sources: Iterable[Any]) -> list[Unseen]:
    """The values of a parsed tool call ({"name", "arguments"}) that appear nowhere in `sources`
    (the conversation's texts and the earlier tool responses). finish's answer is the model's
    own sentence, not a copy, so it is not checked; neither is a call that did not parse."""
    if not call or call.get("name") == FINISH or not isinstance(call.get("arguments"), dict):
        return []
    arguments = call["arguments"]
    return unseen_values(arguments, Known.of(sources), schema_choices(str(call.get("name")), arguments))


def label(unseen: list[Unseen]) -> str:
    """A few words for a title or a table cell: "not seen before: email = mia.exam@post.io"."""
    return "not seen before: " + ", ".join(f"{u.path} = {u.value}" for u in unseen)


def describe(unseen: list[Unseen]) -> str:
    """One sentence for a person: which values, and why they are marked."""
    values = ", ".join(f"{u.path} = {u.value}" for u in unseen)
    return (f"Not seen before: {values}. These values appear nowhere in the conversation or in an earlier tool "
            "response: the model may have made them up or miscopied them.")
