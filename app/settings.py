"""The generation controls shared by the Chat, Compare and Agent tabs: their defaults and ranges,
and the one function that turns slider values into a GenerationConfig (or a sentence)."""

from __future__ import annotations

from typing import Any

from engine.catalog import bundled_decoding
from engine.samplers import SAMPLERS
from engine.trace import ConfigError, GenerationConfig

# (minimum, maximum, step) of each slider; defaults fit the bundled Sprout model on a CPU.
RANGES = {
    "gen_length": (8, 512, 8),
    "block_size": (1, 64, 1),
    "steps": (1, 64, 1),
    "threshold": (0.05, 1.0, 0.01),
    "temperature": (0.0, 2.0, 0.05),
}
DEFAULTS: dict[str, Any] = {
    "gen_length": 64, **bundled_decoding(), "temperature": 0.0, "seed": 0,
}
AGENT_DEFAULTS: dict[str, Any] = {**DEFAULTS, "gen_length": 128}
SAMPLER_CHOICES = [s for s in SAMPLERS if s != "reference"]


def _whole(name: str, value: Any) -> int:
    """Sliders and number boxes may hand over 16.0 or "16"; anything else is the person's mistake."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {value!r}.") from None
    if not number.is_integer():
        raise ConfigError(f"{name} must be a whole number, got {value!r}.")
    return int(number)


def _real(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}.") from None


def config_from_controls(gen_length: Any, block_size: Any, steps: Any, sampler: Any, threshold: Any,
                         temperature: Any, seed: Any) -> GenerationConfig:
    """The GenerationConfig the controls describe; ConfigError (a sentence) when they cannot work."""
    return GenerationConfig(
        gen_length=_whole("Generation length", gen_length), block_size=_whole("Block size", block_size),
        steps=_whole("Steps per block", steps), sampler=str(sampler or ""),
        threshold=_real("Threshold", threshold), temperature=_real("Temperature", temperature),
        seed=_whole("Seed", 0 if seed in (None, "") else seed),
    )
