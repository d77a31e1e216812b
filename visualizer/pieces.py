"""How a token's text shows in a grid cell: whitespace made visible (shared by visualizer/grid.py
and visualizer/noise_grid.py)."""

from __future__ import annotations

# Whitespace is invisible in a cell, so a token that is only " " or "\n" would look empty.
# Each is mapped to a visible glyph; a newline also breaks the grid's line so the grid reads
# like the text it spells.
VISIBLE_WHITESPACE = {" ": "\u2423", "\n": "\u23ce", "\t": "\u21e5", "\r": "\u240d"}


def visible_piece(text: str) -> str:
    """Token text with whitespace replaced by visible glyphs; an empty piece shows as an empty-set sign."""
    if text == "":
        return "\u2205"
    return "".join(VISIBLE_WHITESPACE.get(ch, ch) for ch in text)
