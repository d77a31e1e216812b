"""The Chat tab's recent chats, as chat apps list them beside the conversation: the last RECENT
stored chats, to open (and go on with), rename or delete without leaving the tab. The Sessions tab
lists everything stored, of every kind."""

from __future__ import annotations

from typing import Any

import gradio as gr

from sessions import StoreError

from .chat import STOP_WAIT_S
from .live import markdown_safe
from .messages import user_error
from .resume import resumed
from .sessions_tab import checked_title

RECENT = 20


def recent_label(row: dict[str, Any]) -> str:
    """`#12 · title · model · 2026-12-06 07:41` (the title folded to one line)."""
    when = str(row.get("updated_at") or "")[:16].replace("T", " ")
    return f"#{row['id']} · {' '.join(str(row['title']).split())[:60]} · {row.get('model') or '?'} · {when}"


class RecentChats:
    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def _store(self) -> Any:
        if self.ctx.store is None:
            raise user_error(f"There is no session store: {self.ctx.store_problem}")
        return self.ctx.store

    def listing(self, chosen: str | None = None) -> Any:
        """The picker with the newest chats (the choice kept while it is still stored)."""
        if self.ctx.store is None:
            return gr.Dropdown(choices=[], value=None)
        try:
            rows = self.ctx.store.list_conversations(kind="chat", limit=RECENT)
        except StoreError:
            return gr.skip()                          # an unreadable store: the picker stays as it was
        choices = [(recent_label(row), str(row["id"])) for row in rows]
        return gr.Dropdown(choices=choices, value=chosen if chosen in {c[1] for c in choices} else None)

    def _picked(self, choice: str | None, verb: str) -> int:
        if not choice:
            raise user_error(f"Pick a chat in Recent chats first, then {verb} it.")
        try:
            return int(choice)
        except (TypeError, ValueError):
            raise user_error(f"'{choice}' is not a chat number.") from None

    def open(self, choice: str | None, key: tuple | None = None) -> tuple:
        """The picked chat in the tab, to go on with (app/resume.py RESUME_OUTPUTS). An answer still
        being generated in the tab (`key`: its run) is stopped and saved first, as New chat does."""
        cid = self._picked(choice, "open")
        if key is not None:
            self.ctx.runs.stop(key, discard=True, wait_s=STOP_WAIT_S)
        try:
            conversation = self._store().get_conversation(cid)
        except StoreError as exc:
            raise user_error(str(exc)) from None
        return resumed(conversation)

    def rename(self, choice: str | None, title: str) -> tuple[Any, str, str]:
        """(picker, title box, status): the picked chat under its new title."""
        cid = self._picked(choice, "rename")
        title = checked_title(title)
        try:
            self._store().rename(cid, title)
        except StoreError as exc:
            raise user_error(str(exc)) from None
        return self.listing(str(cid)), "", f"Renamed chat #{cid} to “{markdown_safe(title)}”."

    def delete(self, choice: str | None, current: int | None) -> tuple[Any, str, Any]:
        """(picker, status, conversation id): the picked chat deleted from the store. When it is the
        chat on screen, the chat stays in sight and its next message starts a new stored chat."""
        cid = self._picked(choice, "delete")
        try:
            gone = self._store().delete_conversation(cid)
        except StoreError as exc:
            raise user_error(str(exc)) from None
        if not gone:
            return self.listing(), f"Chat #{cid} was deleted already; the list is up to date now.", gr.skip()
        on_screen = current is not None and int(current) == cid
        status = f"Deleted chat #{cid}." + (" The chat on screen stays; its next message starts a new stored chat."
                                             if on_screen else "")
        return self.listing(), status, None if on_screen else gr.skip()
