"""What a model can do, said above every input: its capability card and 4-6 example prompts.

A folder under models/ may carry `playground.json` with a "card" (title, summary, trained_on,
can, cannot, system_prompts: the system texts it was trained with, [] for none) and "examples"
(each a prompt, and for the bundled Sprout the held-out task it comes from, so the Agent tab
can pick that task and Chat starts in that task's world). Other sections of the file (e.g.
"decoding") are read elsewhere. A catalog preset's card is its one-line description with
ordinary prompts. Chat warns when its system prompt is one the card says the model does not know
(`system_prompt_warning`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import catalog

from .live import markdown_safe as escape
from .noise_controls import CARD as NOISE_CARD

CARD_FILE = "playground.json"
GENERAL_EXAMPLES = (
    "Explain in two sentences what a diffusion language model is.",
    "Write a haiku about autumn rain.",
    "What is 17 × 23? Show your steps.",
    "Write a Python function that reverses a string.",
    "Give me three tips for a job interview.",
)


@dataclass
class Card:
    title: str
    summary: str
    trained_on: str = ""
    can: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)   # {"prompt", "task"?}
    # the system texts the model was trained with ([]: none at all); None: the card does not say
    system_prompts: list[str] | None = None
    decoding: str = ""          # how its decoding settings act, where it decodes unlike a masked model

    @property
    def prompts(self) -> list[str]:
        return [e["prompt"] for e in self.examples]


def _folder_card(folder: Path, name: str) -> Card | None:
    path = folder / CARD_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        card = data.get("card") or {}
        examples = [e if isinstance(e, dict) else {"prompt": str(e)} for e in data.get("examples", [])]
        return Card(title=str(card.get("title") or name), summary=str(card.get("summary", "")),
                    trained_on=str(card.get("trained_on", "")), can=[str(c) for c in card.get("can", [])],
                    cannot=[str(c) for c in card.get("cannot", [])],
                    examples=[e for e in examples if str(e.get("prompt", "")).strip()][:6],
                    system_prompts=None if card.get("system_prompts") is None else
                    [str(p) for p in card["system_prompts"]])
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return Card(title=name, summary=f"Its {CARD_FILE} could not be read ({exc}).",
                    examples=[{"prompt": p} for p in GENERAL_EXAMPLES])


def card_for(name: str, listing: list[dict[str, Any]] | None = None) -> Card:
    """The card of a model by name (a preset, a folder under models/, a path, or an in-memory one)."""
    name = (name or "").strip()
    general = [{"prompt": p} for p in GENERAL_EXAMPLES]
    if not name:
        return Card(title="No model", summary="Choose a model to see what it can do.", examples=general)
    row = next((r for r in listing or [] if r.get("name") == name), None)
    preset = catalog.PRESETS_BY_NAME.get(name)
    noise = (row or {}).get("driver") == "uniform_noise" or (preset is not None and preset.driver == "uniform_noise")
    decoding = NOISE_CARD if noise else ""
    candidates = [catalog.models_dir() / name, Path(name).expanduser()]
    for folder in candidates:
        try:
            if folder.is_dir():
                found = _folder_card(folder, name)
                if found is not None:
                    found.decoding = found.decoding or decoding
                    return found
        except OSError:
            continue
    description = (row or {}).get("description") or ""
    if not description and name in catalog.PRESETS_BY_NAME:
        description = catalog.PRESETS_BY_NAME[name].description
    return Card(title=name, summary=description or "A model without a capability card: try ordinary prompts.",
                examples=general, decoding=decoding)


def card_markdown(card: Card) -> str:
    """The card as Markdown (escaped: a card is a file anyone may have written)."""
    lines = [f"**{escape(card.title)}**: {escape(card.summary)}"]
    if card.trained_on:
        lines.append(f"*Trained on:* {escape(card.trained_on)}")
    if card.can:
        lines.append("*Can:* " + " · ".join(str(escape(c)) for c in card.can))
    if card.cannot:
        lines.append("*Cannot:* " + " · ".join(str(escape(c)) for c in card.cannot))
    if card.system_prompts is not None:
        known = " · ".join(f"“{escape(p)}”" for p in card.system_prompts)
        lines.append(f"*System prompt:* {known}" if known else "*System prompt:* none (it was trained without one)")
    if card.decoding:
        lines.append(card.decoding)                   # our own text, not the card file's
    return "\n\n".join(lines)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def system_prompt_warning(card: Card, system: str) -> str:
    """A warning when `system` is a system text the model's card says it was not trained with
    ("" when it was, when the box is empty, or when the card does not say)."""
    system = (system or "").strip()
    if not system or card.system_prompts is None or any(_same_text(system, p) for p in card.system_prompts):
        return ""
    trained = ("was trained without a system prompt" if not card.system_prompts else
               "was trained with only these system prompts: " + " · ".join(f"“{p}”" for p in card.system_prompts))
    return str(escape(f"⚠️ {card.title} {trained}, so this one is outside what it knows: its tool calls and "
                      "answers may break or ignore it. Empty the box to use the model as it was trained."))
