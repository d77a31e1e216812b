"""Full-text search over turn text: a person's query made literal for SQLite FTS5."""

from __future__ import annotations


def fts_literal_query(query: str) -> str:
    """An FTS5 query matching the words of `query` literally: each whitespace-separated chunk
    becomes a quoted string (so AND, NEAR, -, *, :, ^, parentheses mean nothing) with a prefix
    star, and chunks with no letters or digits are dropped. Empty when nothing is left."""
    parts = []
    for chunk in query.replace("\x00", " ").split():  # NUL ends an FTS5 string early
        if any(ch.isalnum() for ch in chunk):
            parts.append('"' + chunk.replace('"', '""') + '"*')
    return " ".join(parts)
