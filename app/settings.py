"""The generation controls shared by the Chat, Compare and Agent tabs: their defaults and ranges,
and the one function that turns slider values into a GenerationConfig (or a sentence)."""

from __future__ import annotations

from typing import Any

from engine.catalog import bundled_decoding
from engine.sampler_table import REMASK_SCHEDULES, SAMPLERS
from engine.trace import ConfigError, GenerationConfig, shown_value

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


def config_from_controls(gen_length: Any, block_size: Any, steps: Any, sampler: Any, threshold: Any,
                         temperature: Any, seed: Any) -> GenerationConfig:
    """The GenerationConfig the controls describe; ConfigError (a sentence) when they cannot work."""
    return GenerationConfig(
        gen_length=_whole("Generation length", gen_length), block_size=_whole("Block size", block_size),
        steps=_whole("Steps per block", steps), sampler=str(sampler or ""),
        threshold=_real("Threshold", threshold), temperature=_real("Temperature", temperature),
        seed=_whole("Seed", 0 if seed in (None, "") else seed),
    )


def config_from_settings(settings: Any, **fixed: Any) -> GenerationConfig:
    """The GenerationConfig of a named mapping of control values (missing ones take the config's
    defaults; `fixed` overrides); ConfigError (a sentence) when they cannot work."""
    values = {**{k: v for k, v in dict(settings or {}).items() if v is not None}, **fixed}
    base = GenerationConfig()
    labels = {"gen_length": "Generation length", "block_size": "Block size", "steps": "Steps per block",
              "top_k": "Top-k", "seed": "Seed"}
    out: dict[str, Any] = {}
    for name, value in values.items():
        if not hasattr(base, name):
            continue
        default = getattr(base, name)
        if isinstance(default, bool):
            out[name] = bool(value)
        elif isinstance(default, int):
            out[name] = _whole(labels.get(name, name), default if value == "" else value)
        elif isinstance(default, float):
            out[name] = _real(name.replace("_", " ").capitalize(), value)
        else:
            out[name] = str(value or "")
    return GenerationConfig(**out)
