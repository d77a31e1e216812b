"""The generation controls shared by the Chat, Compare and Agent tabs: their defaults and ranges,
and the one path from the controls' values to typed settings (`read_settings`: a GenerationConfig
and the playback pace, or a sentence)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.catalog import bundled_decoding
from engine.sampler_table import REMASK_SCHEDULES, SAMPLERS
from engine.setting_rules import setting_label, shown_value
from engine.trace import ConfigError, GenerationConfig

from .structured import parse_schema

# (minimum, maximum, step) of each slider; defaults fit the bundled Sprout model on a CPU.
RANGES = {
    "gen_length": (8, 512, 8),
    "block_size": (1, 64, 1),
    "steps": (1, 64, 1),
    "threshold": (0.05, 1.0, 0.01),
    "factor": (0.05, 8.0, 0.05),
    "entropy_bound": (0.0, 5.0, 0.05),
    "temperature": (0.0, 2.0, 0.05),
    "top_p": (0.05, 1.0, 0.01),
    "top_k": (0, 200, 1),
    "pace_ms": (0, 1000, 10),
    "edit_threshold": (0.0, 1.0, 0.01),
    "max_post_steps": (0, 32, 1),
    "remask_rounds": (0, 16, 1),
    "remask_count": (1, 64, 1),
}
# Playback pace: milliseconds each drawn state stays on screen: a round, or a part of one when a
# forward decided many tokens of its block (visualizer/parts.py: at most 4 tokens a part). At 120 ms
# a block of 16 that resolves in one or two forwards still shows 4-5 states over half a second.
# The model computes ahead meanwhile and never while a state is drawn (app/turnstile.py), so the
# pace changes what is seen and the wall time, not the model time.
PACE_MS = 120
_EDITING = {name: getattr(GenerationConfig(), name)
            for name in ("edit_threshold", "max_post_steps", "remask", "remask_rounds", "remask_count")}
DEFAULTS: dict[str, Any] = {
    "gen_length": 64, "factor": 1.0, "entropy_bound": 0.5, "top_p": 1.0, "top_k": 0, **_EDITING,
    **bundled_decoding(), "temperature": 0.0, "seed": 0, "pace_ms": PACE_MS, "cache": "none",
}
AGENT_DEFAULTS: dict[str, Any] = {**DEFAULTS, "gen_length": 128}
SAMPLER_CHOICES = [s for s in SAMPLERS if s != "reference"]
REMASK_CHOICES = list(REMASK_SCHEDULES)


def _whole(name: str, value: Any) -> int:
    """Sliders and number boxes may hand over 16.0 or "16"; anything else is the person's mistake."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value                     # exact: float() would round a large seed, or overflow
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name} must be a whole number, got {shown_value(value)}.") from None
    if not number.is_integer():
        raise ConfigError(f"{name} must be a whole number, got {shown_value(value)}.")
    return int(number)


def _real(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name} must be a number, got {shown_value(value)}.") from None


@dataclass(frozen=True)
class RunSettings:
    """A tab's controls, read once and typed: the generation config (with the JSON schema of a
    structured answer on it, when the Chat's schema box holds one) and the playback pace, which
    belongs to the display and never reaches the model."""

    config: GenerationConfig
    pace_ms: float = 0.0

    @property
    def structured(self) -> bool:
        return self.config.schema is not None


def read_settings(values: Mapping[str, Any] | None, **fixed: Any) -> RunSettings:
    """The RunSettings of the controls' values by name (missing ones take the config's defaults;
    `fixed` overrides); ConfigError (a sentence) when they cannot work. Every name is a field of
    GenerationConfig, or `pace_ms`, or `schema` (the schema box's text): any other is a bug."""
    values = dict(values or {})
    pace = values.pop("pace_ms", None)
    schema = parse_schema(values.pop("schema", None))
    config = _config(values, **fixed)
    if schema is not None:                     # structured output: the engine scaffolds the schema
        config = config.replace(schema=schema)
    pace_ms = 0.0 if pace in (None, "") else _real("Playback pace", pace)
    if not pace_ms >= 0:                       # also refuses nan
        raise ConfigError(f"The playback pace must be 0 ms or more, got {shown_value(pace)}.")
    return RunSettings(config, pace_ms)


def _config(settings: Mapping[str, Any], **fixed: Any) -> GenerationConfig:
    values = {**{k: v for k, v in settings.items() if v is not None}, **fixed}
    base = GenerationConfig()
    out: dict[str, Any] = {}
    for name, value in values.items():
        if not hasattr(base, name) or name == "schema":
            raise KeyError(f"'{name}' is not a generation setting")
        default = getattr(base, name)
        if isinstance(default, bool):
            out[name] = bool(value)
        elif isinstance(default, int):
            out[name] = _whole(setting_label(name), default if value == "" else value)
        elif isinstance(default, float):
            out[name] = _real(setting_label(name), value)
        else:
            out[name] = str(value or "")
    return GenerationConfig(**out)
