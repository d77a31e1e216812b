"""Fakes and a launcher for the app's tests: a tokenizer with one hostile token, a backend
wrapper that makes every forward slow enough to watch, an AppContext over fakes and a temporary
database, and a running server on a free port."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fakes import EOS, CharTokenizer, FakeARBackend, FakeDiffusionBackend

XSS = "<img src=x onerror=alert(1)>"
ANSWER_HEAD, ANSWER_TAIL = "Hi! ", " is just text here."
AR_ANSWER = "Hello from the AR twin."


class XssTokenizer(CharTokenizer):
    """The fakes' char tokenizer plus one extra id whose piece is the whole `<img onerror>` tag."""

    def __init__(self) -> None:
        super().__init__()
        self.xss_id = len(self.chars) + 3

    def __len__(self) -> int:
        return self.xss_id + 1

    vocab_size = property(__len__)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return "".join(XSS if int(i) == self.xss_id else super(XssTokenizer, self).decode([i], skip_special_tokens)
                       for i in ids)


def xss_answer_ids(tokenizer: XssTokenizer) -> list[int]:
    return tokenizer.encode(ANSWER_HEAD) + [tokenizer.xss_id] + tokenizer.encode(ANSWER_TAIL) + [EOS]


def xss_diffusion(**kwargs: Any) -> FakeDiffusionBackend:
    """A diffusion fake whose answer holds the single token `<img src=x onerror=alert(1)>`."""
    tokenizer = XssTokenizer()
    return FakeDiffusionBackend(xss_answer_ids(tokenizer), tokenizer=tokenizer, name="fake-bd", **kwargs)


class Slow:
    """Wraps a backend so every forward takes `delay_s` longer: a run then lasts long enough to be
    watched, stopped and streamed in several updates."""

    def __init__(self, inner: Any, delay_s: float) -> None:
        self._inner, self._delay_s = inner, delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def denoise(self, *args: Any) -> Any:
        time.sleep(self._delay_s)
        return self._inner.denoise(*args)

    def step(self, *args: Any) -> Any:
        time.sleep(self._delay_s)
        return self._inner.step(*args)


def fake_backends(delay_s: float = 0.0) -> dict[str, Any]:
    backends = {"fake-bd": xss_diffusion(), "fake-ar": FakeARBackend(AR_ANSWER, name="fake-ar")}
    return {name: Slow(b, delay_s) for name, b in backends.items()} if delay_s else backends


def fake_context(folder: Path, delay_s: float = 0.0, backends: dict[str, Any] | None = None):
    from app.state import AppContext

    return AppContext.create(folder / "sessions.db", model="fake-bd", baseline="fake-ar",
                             preloaded=backends or fake_backends(delay_s), watch=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(ctx: Any) -> Iterator[tuple[Any, str]]:
    """(demo, url) of the app over `ctx`, served on a free port until the block ends."""
    from app.ui import build_app
    from launch import serve

    demo = build_app(ctx)
    url = serve(demo, "127.0.0.1", free_port(), block=False, ctx=ctx)
    try:
        yield demo, url
    finally:
        demo.close()
