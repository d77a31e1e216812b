"""A chat as a tree of exchanges, as chat apps keep it: Regenerate adds another answer to a
message, editing any sent message adds another message (and its answer) in its place. Either way
the new version starts a branch: what followed the old version stays with it. Every exchange with
more than one version shows its arrows beside its answer, and browsing one shows that branch, its
world and its denoising trace.

    ChatTree.root: Fork            the versions of the first exchange
    Fork.items[i]: Version         one version: message, answer entries, worlds, trace, and
    Version.next: Fork | None      the versions of the exchange that followed it

The chat shown is the path that follows each fork's shown version (`Fork.at`). Depth d is the
d-th exchange on that path. Everything is frozen: an event gets a new tree, the page's gr.State
keeps the old one until the update lands.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from world.state import World

from .steps import chat_messages

# The arrows beside an answer are links the page script turns into a pick (app/page_script.py):
# a click writes "depth:delta" into the hidden #version-pick box and clicks #version-go.
VERSION_LINK = "#dp-version:{depth}:{delta}"


@dataclass(frozen=True)
class Version:
    user: dict[str, Any]               # the message, as the history holds it
    entries: tuple[dict[str, Any], ...]  # its answer's history entries (tool steps, then the reply)
    before: World | None               # the world the answer started from (None: not kept, a stored chat)
    after: World | None                # the world it left
    seed: int | None = None            # the sampling seed, when it sampled (temperature > 0)
    trace: Any = None                  # its answer's TraceView (app/live.py), for the scrubber and Replay
    panel: str = ""                    # the live panel as the answer ended ("" when nothing was drawn)
    answer: str = ""                   # the answer as the model wrote it (its page preview reads it)
    next: Fork | None = None           # the exchanges that followed this version

    def history(self) -> list[dict[str, Any]]:
        return [self.user, *self.entries]


@dataclass(frozen=True)
class Fork:
    items: tuple[Version, ...]
    at: int = 0

    @property
    def shown(self) -> Version:
        return self.items[self.at]

    def with_shown(self, version: Version) -> Fork:
        return dataclasses.replace(self, items=(*self.items[:self.at], version, *self.items[self.at + 1:]))


@dataclass(frozen=True)
class ChatTree:
    root: Fork | None = None

    @classmethod
    def linear(cls, history: list[dict[str, Any]], world: World | None) -> ChatTree:
        """A chat known only as its history (one continued from Sessions): one version per
        exchange, each left with the world as the chat ends (the worlds between are not stored)."""
        exchanges: list[list[dict[str, Any]]] = []
        for entry in history:
            if entry["role"] == "user" or not exchanges:
                exchanges.append([])
            exchanges[-1].append(entry)
        tail: Fork | None = None
        for exchange in reversed(exchanges):
            tail = Fork((Version(exchange[0], tuple(exchange[1:]), None, world, next=tail),))
        return cls(tail)

    # -- the path shown -------------------------------------------------------------------------
    def path(self) -> list[Fork]:
        forks, fork = [], self.root
        while fork is not None:
            forks.append(fork)
            fork = fork.shown.next
        return forks

    def history(self, depth: int | None = None) -> list[dict[str, Any]]:
        """The entries shown before exchange `depth` (all of them when None), in order."""
        return [entry for fork in self.path()[:depth] for entry in fork.shown.history()]

    def world(self) -> World | None:
        """The world the shown path leaves (None for an empty chat)."""
        path = self.path()
        return path[-1].shown.after if path else None

    def exchange_of(self, message_index: int) -> int:
        """The depth of the exchange holding the Chatbot's message `message_index`."""
        seen = 0
        for depth, fork in enumerate(self.path()):
            seen += len(chat_messages(fork.shown.history()))
            if message_index < seen:
                return depth
        raise IndexError(f"message {message_index} is not in this chat")

    # -- changes --------------------------------------------------------------------------------
    def answered(self, depth: int, version: Version) -> ChatTree:
        """This tree with `version` as a new version of exchange `depth` (a new exchange when
        `depth` is the path's length), shown; the branch it leaves keeps what followed it."""
        path = self.path()
        if not 0 <= depth <= len(path):
            raise IndexError(f"exchange {depth} is not in a chat of {len(path)}")
        fork = Fork((version,)) if depth == len(path) else Fork((*path[depth].items, version), len(path[depth].items))
        return self._replaced(depth, fork)

    def moved(self, depth: int, delta: int) -> ChatTree:
        """Exchange `depth` showing its previous (delta < 0) or next version, within those there are."""
        path = self.path()
        if not 0 <= depth < len(path):
            return self
        fork = path[depth]
        return self._replaced(depth, dataclasses.replace(fork, at=max(0, min(len(fork.items) - 1, fork.at + delta))))

    def _replaced(self, depth: int, fork: Fork) -> ChatTree:
        """This tree with the shown path's fork at `depth` replaced (depth = path length: appended)."""
        path = self.path()
        for parent in reversed(path[:depth]):
            fork = parent.with_shown(dataclasses.replace(parent.shown, next=fork))
        return ChatTree(fork)

    # -- what the Chatbot shows -----------------------------------------------------------------
    def messages(self, depth: int | None = None) -> list[dict[str, Any]]:
        """The Chatbot's messages for the shown path (its exchanges before `depth`, all when None):
        each exchange's messages (app/steps.py), and under the last message of an exchange with
        versions, its arrows and which one it is."""
        shown: list[dict[str, Any]] = []
        for at, fork in enumerate(self.path()[:depth]):
            exchange = chat_messages(fork.shown.history())
            if len(fork.items) > 1 and exchange[-1]["role"] == "assistant":
                last = exchange[-1]
                exchange[-1] = {**last, "content": f"{last['content']}\n\n{versions_line(at, fork)}"}
            shown += exchange
        return shown


def versions_line(depth: int, fork: Fork) -> str:
    """`◀ 2/3 ▶ · seed 7` as Markdown links (numbers and fixed text only: nothing of the model's)."""
    seed = f" · seed {int(fork.shown.seed)}" if fork.shown.seed is not None else ""
    previous = VERSION_LINK.format(depth=depth, delta=-1)
    following = VERSION_LINK.format(depth=depth, delta=1)
    return (f'<span class="dp-versions">[◀](<{previous}> "Previous version") version {fork.at + 1}/'
            f'{len(fork.items)}{seed} [▶](<{following}> "Next version")</span>')


def parse_pick(pick: str) -> tuple[int, int] | None:
    """(depth, delta) from the page's "depth:delta" pick, None when it is not one."""
    parts = str(pick or "").split(":")
    try:
        depth, delta = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None
    return (depth, max(-1, min(1, delta))) if depth >= 0 else None
