"""Ids in an answer, named from the world: "Added 1 x P5K7 in size L." reads "Added 1 x P5K7 (blue
dress) in size L.".

The model writes ids because its training transcripts do, and its words cannot change without
retraining; what a person reads can. Only ids the world holds are named (product: colour and
style; customer: name), each at its first mention, and the rest of the text is left as written.
"""

from __future__ import annotations

import re
from typing import Any


def id_names(world: Any) -> dict[str, str]:
    """id -> the words that name it, for every product and customer of `world`."""
    names = {pid: f"{p['color']} {p['style']}" for pid, p in getattr(world, "products", {}).items()}
    names.update({cid: c["name"] for cid, c in getattr(world, "customers", {}).items() if c.get("name")})
    return names


def with_names(text: str, world: Any) -> str:
    """`text` with "(name)" after the first mention of each id the world knows, unless the name
    is already written right beside it."""
    names = id_names(world) if world is not None else {}
    if not names or not text:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(i) for i in sorted(names, key=len, reverse=True)) + r")\b")
    seen: set[str] = set()

    def name(match: re.Match[str]) -> str:
        found = match.group(1)
        after = text[match.end():match.end() + len(names[found]) + 3].lower()
        named = found in seen or names[found].lower() in after
        seen.add(found)
        return found if named else f"{found} ({names[found]})"

    return pattern.sub(name, text)
