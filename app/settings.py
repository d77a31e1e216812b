"""The generation controls shared by the Chat, Compare and Agent tabs: their defaults and ranges,
and the one function that turns slider values into a GenerationConfig (or a sentence)."""

from __future__ import annotations

from typing import Any

from engine.catalog import bundled_decoding
from engine.sampler_table import SAMPLERS
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
}
# Playback pace: milliseconds each round stays on screen. 200 ms shows 8 rounds over 1.6 s; the
# model computes at full speed either way (app/runs.py), so no measured number changes.
PACE_MS = 200
DEFAULTS: dict[str, Any] = {
    "gen_length": 64, "factor": 1.0, "entropy_bound": 0.5, "top_p": 1.0, "top_k": 0, **bundled_decoding(),
    "temperature": 0.0, "seed": 0, "pace_ms": PACE_MS, "cache": "none",
}
AGENT_DEFAULTS: dict[str, Any] = {**DEFAULTS, "gen_length": 128}
SAMPLER_CHOICES = [s for s in SAMPLERS if s != "reference"]


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
