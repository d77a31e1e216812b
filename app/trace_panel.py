"""The trace panel's events that every tab shares: scrubbing to a round, playing a finished trace
again, and the scrubber sized to a trace."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import gradio as gr

from .live import TraceView, replay
from .messages import user_error


def scrub_panel(trace: TraceView | None, frame_number: Any) -> Any:
    """The grid as it stood after frame `frame_number` (1-based; 0 = before the first forward)."""
    if trace is None or not trace.frames:
        return gr.skip()
    if int(frame_number or 0) <= 0:
        return trace.before_first_forward("replay")
    return trace.panel("replay", upto=int(frame_number) - 1)


def play_again(trace: TraceView | None, pace_ms: Any) -> Generator[tuple[Any, Any], None, None]:
    """The Replay button: (panel, scrubber) from round 0 to the end at the playback pace."""
    if trace is None or not trace.frames:
        raise user_error("There is nothing to replay yet: run a generation first.")
    for html, frame_number in replay(trace, pace_ms):
        yield html, gr.Slider(value=frame_number)


def scrubber_for(trace: TraceView) -> Any:
    n = max(1, len(trace.frames))
    return gr.Slider(minimum=0, maximum=n, value=n, step=1, visible=True, interactive=True,
                     label=f"Replay: frame (model forward) 0-{n}, 0 = before the first forward")
