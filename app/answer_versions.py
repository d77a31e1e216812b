"""The answer versions of a chat's last message: Regenerate adds one, the arrows browse them, and
each keeps the world as that answer left it. Held in the Chat's gr.State between events."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from world.state import World


@dataclass(frozen=True)
class AnswerVersion:
    entries: list[dict[str, Any]]      # the history entries of this answer (tool steps, then the reply)
    world: World                       # the world after it
    seed: int | None = None            # the sampling seed, when it sampled (temperature > 0)


@dataclass(frozen=True)
class AnswerVersions:
    start: int                         # index in the history of the message the versions answer
    before: World                      # the world before any of them: each regeneration starts from it
    items: tuple[AnswerVersion, ...] = field(default_factory=tuple)
    at: int = 0                        # the version shown

    @classmethod
    def first(cls, start: int, before: World, version: AnswerVersion) -> AnswerVersions:
        return cls(start, before, (version,), 0)

    def added(self, version: AnswerVersion) -> AnswerVersions:
        """These versions and a new one, shown."""
        return dataclasses.replace(self, items=(*self.items, version), at=len(self.items))

    def moved(self, delta: int) -> AnswerVersions:
        """The previous (delta < 0) or next version shown, kept within the versions there are."""
        return dataclasses.replace(self, at=max(0, min(len(self.items) - 1, self.at + int(delta))))

    @property
    def shown(self) -> AnswerVersion:
        return self.items[self.at]

    def label(self) -> str:
        """"Answer version i/n" (with its seed), or "" while there is only one."""
        if len(self.items) < 2:
            return ""
        seed = f" · seed {self.shown.seed}" if self.shown.seed is not None else ""
        return f"Answer version {self.at + 1}/{len(self.items)}{seed}"
