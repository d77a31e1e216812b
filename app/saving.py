"""What one run adds to the session store, and how it is saved: one transaction, a warning toast
(never a traceback) when the store is missing or refuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sessions import StoreError, TurnRecord

from .messages import warn


@dataclass
class Exchange:
    """What one run adds to the store: a new conversation (conversation_id None: kind, title,
    model and meta say what it is) or turns appended to an existing one."""

    kind: str
    title: str
    model: str
    turns: list[TurnRecord] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    conversation_id: int | None = None


def save(ctx: Any, exchange: Exchange, what: str = "This answer") -> int | None:
    """Store the exchange in one transaction; its conversation id, or None (and a warning toast)
    when there is no store or the write failed. An exchange with no turns writes nothing."""
    store = ctx.store
    if not exchange.turns:
        return exchange.conversation_id
    if store is None:
        warn(f"{what} was not saved: {ctx.store_problem}")
        return None
    try:
        return store.save_exchange(exchange.conversation_id, exchange.turns, kind=exchange.kind, title=exchange.title,
                                   model=exchange.model, meta=exchange.meta)
    except StoreError as exc:
        warn(f"{what} was not saved: {exc}")
        return None


def title_of(text: str, limit: int = 80) -> str:
    return " ".join(text.split())[:limit]
