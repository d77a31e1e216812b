"""Word n-grams of transcripts: how the leak tests ask whether a value or a phrase occurs."""

from __future__ import annotations

import re

TOKEN = re.compile(r"[A-Za-z0-9@]+(?:[.\-][A-Za-z0-9@]+)*")  # an email or "2019-2023" is one token


def ngrams(texts, longest=3):
    grams = set()
    for text in texts:
        tokens = TOKEN.findall(text)
        for n in range(1, longest + 1):
            grams.update(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    return grams
