"""How a token and a position show in a grid cell: the one glyph table of the cells every grid
draws (visualizer/cells.py: the live grid, the noise canvas and the exported replay, whose player
is sent the cells already drawn) and of the plots' labels."""

from __future__ import annotations

from functools import lru_cache

# Whitespace is invisible in a cell, so a token that is only " " or "\n" would look empty.
# Each is mapped to a visible glyph; a newline also breaks the grid's line so the grid reads
# like the text it spells.
VISIBLE_WHITESPACE = {" ": "\u2423", "\n": "\u23ce", "\t": "\u21e5", "\r": "\u240d"}
EMPTY_PIECE = "\u2205"     # a token whose text is empty
MASK_GLYPH = "\u00b7"      # an undecided position
REMASK_GLYPH = "\u21ba"    # a position put back to the mask, to be decoded again (engine/remask.py)
END_GLYPH = "\u2205"       # a position after the answer's end (EOS, its fill, pad): never answer text
UNKNOWN_PIECE = ("\u27e8", "\u27e9")   # around the id of a token the trace has no text for


@lru_cache(maxsize=8192)      # a vocabulary's pieces recur: every cell of every step asks again
def visible_piece(text: str) -> str:
    """Token text with whitespace replaced by visible glyphs; an empty piece shows as EMPTY_PIECE."""
    if text == "":
        return EMPTY_PIECE
    return "".join(VISIBLE_WHITESPACE.get(ch, ch) for ch in text)


def piece_of(pieces: dict[int, str], token: int) -> str:
    """The token's text, or its id between UNKNOWN_PIECE's brackets when the trace has none."""
    return pieces.get(token, f"{UNKNOWN_PIECE[0]}{token}{UNKNOWN_PIECE[1]}")
