"""What an Agent tab run stores: where its tools ran (the built-in world or the web pages), the
scenario it belongs to, the picture of the page it left, and its turns (each request of a
conversation before its own steps), as one Exchange (app/saving.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.trace import GenerationConfig
from sessions import TurnRecord
from world.agent import STOPPED, Step
from world.tools import FINISH

from .agent_scenarios import conversation_meta
from .page_venue import PAGES, WORLD, Visit
from .saving import Exchange
from .steps import step_turns


@dataclass(frozen=True)
class Venue:
    """Where a run's tools run (the pages' Visit, or None: the built-in world), and what it runs
    besides one task: a conversation of requests, and the scenario's name."""
    pages: Visit | None = None
    conversation: dict[str, Any] | None = None
    scenario: str | None = None


def last_call(steps: list[Step]) -> Step | None:
    """The last step whose call ran (finish, vetoed and unparsed ones change no page)."""
    return next((s for s in reversed(steps) if s.call and not s.error and s.call["name"] != FINISH), None)


def stopped(transcript: Any) -> bool:
    """Whether a person's Stop ended it (an episode, or any request of a conversation)."""
    requests = getattr(transcript, "requests", None)
    return any(r.stopped == STOPPED for r in requests) if requests is not None else transcript.stopped == STOPPED


def agent_exchange(task: dict[str, Any], steps: list[Step], transcript: Any, config: GenerationConfig, model: str,
                   graded: bool, venue: Venue, starts: list[int] = (), shot: Any = None) -> Exchange | None:
    """The run as an "agent" conversation: instruction (each request of a conversation before
    its own steps), then per step the model's turn (with its frames and parsed call) and the
    tool's response. A run stopped before its first step keeps nothing."""
    if not steps:
        return None
    meta = {"task_id": task["id"], "graded": graded, "stopped": transcript is None,
            "tools_in": PAGES if venue.pages is not None else WORLD}
    if venue.pages is not None:
        meta["webmcp"] = venue.pages.webmcp          # native (the browser's own) or polyfill
    if venue.scenario:
        meta["scenario"] = venue.scenario
    if shot:
        meta["page_screenshot"] = str(shot)
    if transcript is not None and venue.conversation is not None:
        meta.update(conversation_meta(transcript))
    elif transcript is not None:
        meta.update(success=transcript.success, error_type=transcript.error_type, reason=transcript.reason,
                    seconds=transcript.seconds, nfe=transcript.nfe)
    if venue.conversation is not None and starts:
        bounds = [*starts, len(steps)]
        turns = [turn for k, (a, b) in enumerate(zip(bounds, bounds[1:]))
                 for turn in (TurnRecord("user", task["requests"][k]), *step_turns(steps[a:b], config, model))]
    else:
        turns = [TurnRecord("user", task["instruction"]), *step_turns(steps, config, model)]
    return Exchange("agent", f"{task['id']}: {task['instruction']}"[:100], model, meta=meta, turns=turns)
