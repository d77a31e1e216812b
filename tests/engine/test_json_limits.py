"""engine/json_limits.py: the nesting scan is exact (against a one-character-at-a-time reference,
fuzzed) and linear in its input whatever the input (counted in characters handed to C, never
timed), and loads refuses with one sentence."""

from __future__ import annotations

import random

import pytest

from engine import json_limits
from engine.json_limits import JsonLimitError, loads, nesting_depth, nesting_depth_reference, scan

API_LIMIT = 1_000_000          # app/api/service.py ApiOptions.max_body_bytes
ALPHABET = ['"', "\\", "[", "]", "{", "}", "a", ",", ":", " ", "ü", "\ud800", '\\"', '"]', "[\"", "\\\\"]


def _hostile(kind: str, size: int) -> str:
    """Texts of about `size` characters built to make a scanner work hard."""
    if kind == "escaped-quotes-unterminated":          # the red team's: `"` then `\"` pairs, no end
        return '"' + '\\"' * (size // 2)
    if kind == "escaped-quotes-lone-backslash":
        return '"' + '\\"' * (size // 2) + "\\"
    if kind == "quotes-only":
        return '"' * size
    if kind == "backslashes":
        return '"' + "\\" * size
    if kind == "empty-strings":
        return "[" + '"",' * (size // 3) + '""]'
    if kind == "brackets":
        return "[]" * (size // 2)
    if kind == "open-brackets-in-string":
        return '"' + "[{" * (size // 2)
    if kind == "nested-then-flat":
        return "[" * 60 + '1,"\\"",' * (size // 7) + "]" * 60
    raise ValueError(kind)


KINDS = ["escaped-quotes-unterminated", "escaped-quotes-lone-backslash", "quotes-only", "backslashes",
         "empty-strings", "brackets", "open-brackets-in-string", "nested-then-flat"]


@pytest.mark.parametrize("window", [3, 4, 7, 64], ids=lambda w: f"window-{w}")
def test_the_scan_equals_the_reference_on_fuzzed_text(monkeypatch, window):
    """Small windows put every kind of cut (inside a string, inside an escape, on a quote) at a
    window's edge; the count must not change."""
    monkeypatch.setattr(json_limits, "WINDOW", window)
    rng = random.Random(window)
    for _ in range(4000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 48)))
        assert nesting_depth(text) == nesting_depth_reference(text), text


@pytest.mark.parametrize("kind", KINDS)
def test_the_scan_equals_the_reference_on_hostile_text(monkeypatch, kind):
    monkeypatch.setattr(json_limits, "WINDOW", 1000)
    text = _hostile(kind, 20_000)
    assert nesting_depth(text) == nesting_depth_reference(text)


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_text_at_the_api_limit_is_scanned_in_linear_work(kind):
    """The regression for the quadratic scan, without a clock: the characters handed to C calls
    grow by at most 2x when the text doubles, up to the /v1 body limit, and stay under 9 per
    character. (The old scan retried its string pattern from every quote of an unterminated
    string: its work grew 4x per doubling.)"""
    sizes = [API_LIMIT // 8, API_LIMIT // 4, API_LIMIT // 2, API_LIMIT]
    works = [scan(_hostile(kind, n))[1] for n in sizes]
    for small, large, n in zip(works, works[1:], sizes[1:], strict=False):
        assert large <= 2.05 * small, (kind, works)
        assert large <= 9 * n, (kind, works)


def test_a_string_match_never_fails_once_it_has_its_quote():
    """Why the scan is linear: the string pattern matches from every quote, closed or not, so no
    quote is tried twice. The old pattern (`"(?:[^"\\\\]|\\\\.)*"`) returned None here, and
    finditer then tried again from the next quote, to the end of the text each time."""
    import re

    text = _hostile("escaped-quotes-unterminated", 2000) + _hostile("escaped-quotes-lone-backslash", 2000)
    quotes = [i for i, char in enumerate(text) if char == '"']
    assert all(json_limits._STRING.match(text, i) for i in quotes)
    old = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
    assert sum(old.match(text, i) is None for i in quotes) > 1000      # the pattern this replaced did fail


def test_a_window_in_the_middle_of_a_long_string(monkeypatch):
    monkeypatch.setattr(json_limits, "WINDOW", 16)
    text = '["' + "[" * 100 + '\\\\\\"' + "{" * 50 + '", [[1]]]'
    assert nesting_depth(text) == nesting_depth_reference(text) == 3


def test_too_deep_and_stop_past():
    assert json_limits.too_deep("[" * 65 + "]" * 65) and not json_limits.too_deep("[" * 64 + "]" * 64)
    assert nesting_depth("[" * 100_000, stop_past=64) > 64


@pytest.mark.parametrize("data, words", [
    ("[" * 100_000, "levels deep"),
    ('{"a": "' + '\\"' * 30_000, "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ('"x"' + " " * 2000, "more than"),
    ('["\\ud800"]', "lone surrogate"),
    ('{"\\udfff": 1}', "lone surrogate"),
])
def test_loads_refuses_with_one_sentence(data, words):
    with pytest.raises(JsonLimitError) as raised:
        loads(data, "The body", max_bytes=1000 if words == "more than" else json_limits.MAX_BYTES)
    message = str(raised.value)
    assert words in message and message.startswith("The body") and message.endswith(".")


def test_loads_keeps_a_paired_surrogate_and_plain_text():
    assert loads('["\\ud83d\\ude42", "caf\\u00e9"]', "x") == ["\U0001F642", "café"]
