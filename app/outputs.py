"""A tab's outputs by name. Gradio ties a handler's yields to its output components by position;
each tab names its outputs once (an OutputNames), its handlers yield `NAMES.update(name=value)`
and its layout wires `NAMES.components(parts)`, so a yield and a component cannot disagree by
one place (tests/app/test_outputs_by_name.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gradio as gr


class OutputNames(tuple):
    """The names of a tab's outputs, in the order its handlers yield them."""

    def __new__(cls, *names: str) -> OutputNames:
        if len(set(names)) != len(names):
            raise ValueError(f"an output is named twice: {names}")
        return super().__new__(cls, names)

    def update(self, **values: Any) -> tuple:
        """One yield: the named outputs' new values, the others left as they are."""
        unknown = set(values) - set(self)
        if unknown:
            raise KeyError(f"not an output of this tab: {sorted(unknown)}")
        return tuple(values[name] if name in values else gr.skip() for name in self)

    def components(self, parts: Mapping[str, Any]) -> list[Any]:
        """The tab's components in the order of the names."""
        return [parts[name] for name in self]
