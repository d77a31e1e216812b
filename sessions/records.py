"""The records the session store keeps, as the store defines them: whoever saves a turn builds a
TurnRecord (the app's tabs, the /v1 API, an import), and the store reads nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.trace import GenerationConfig, Result


@dataclass
class TurnRecord:
    """One stored turn: who said it, the text, and its generation and tool calls if any.
    `config` is the GenerationConfig of the generation (or its dict form, as an export holds it);
    `tool_calls` are {"step", "name", "arguments", "observation", "error_type"} rows."""

    role: str
    content: str
    generation: Result | None = None
    config: GenerationConfig | dict[str, Any] | None = None
    model: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
