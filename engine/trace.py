"""The types every part of the playground speaks: a generation config, one Frame per
model forward, and the Result of a whole generation (DESIGN.md, "The one data path")."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

from engine.samplers import RENAMED_SAMPLERS, SAMPLERS


class ConfigError(ValueError):
    """A setting a person chose that cannot work; the message is a sentence for them."""


@dataclass(frozen=True)
class GenerationConfig:
    gen_length: int = 64        # tokens to generate (the canvas)
    block_size: int = 16        # tokens decoded together; must divide gen_length
    steps: int = 8              # denoising rounds per block (a schedule or a cap: engine/samplers.py SAMPLERS)
    sampler: str = "threshold"  # a name in engine/samplers.py SAMPLERS
    threshold: float = 0.9      # `threshold`, `prefix_threshold`: commit proposals with confidence >= tau
    factor: float = 1.0         # `factor`, `factor_prefix`: rank n passes when (n+1)(1 - c_(n)) <= f (< f)
    entropy_bound: float = 0.5  # `entropy_bounded`: gamma in sum H - max H <= gamma
    temperature: float = 0.0    # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0              # 0 = off
    seed: int = 0
    stop_on_eos: bool = True
    # How closely to follow the authors' decoding loops (catalog presets turn these on):
    untempered_confidence: bool = False  # c_i from softmax of the raw logits (LLaDA, Fast-dLLM), not the tempered ones
    keep_mask_logit: bool = False        # confidences over the full vocabulary, mask logit included (upstream)
    steps_cap: bool = True               # unscheduled samplers commit the rest at round `steps` (ours)

    def __post_init__(self) -> None:
        if isinstance(self.sampler, str) and self.sampler in RENAMED_SAMPLERS:
            new = RENAMED_SAMPLERS[self.sampler]
            warnings.warn(f"The sampler '{self.sampler}' is now called '{new}'; using '{new}'.",
                          DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "sampler", new)
        problems = self.problems()
        if problems:
            raise ConfigError(" ".join(problems))

    def problems(self) -> list[str]:
        """Every reason this config cannot run, each a sentence; empty when it is fine."""
        out: list[str] = []
        ints = ("gen_length", "block_size", "steps", "top_k", "seed")
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                out.append(f"{name.replace('_', ' ')} must be a whole number, got {value!r}.")
        if out:
            return out
        if self.gen_length < 1:
            out.append(f"Generation length must be at least 1 token, got {self.gen_length}.")
        if self.block_size < 1:
            out.append(f"Block size must be at least 1 token, got {self.block_size}.")
        elif self.gen_length >= 1 and self.gen_length % self.block_size:
            fits = [b for b in range(self.block_size, 0, -1) if self.gen_length % b == 0][0]
            out.append(
                f"Block size {self.block_size} does not divide generation length {self.gen_length}: "
                f"choose a block size that divides it (for example {fits}) "
                f"or a length that is a multiple of {self.block_size}."
            )
        if self.steps < 1:
            out.append(f"Steps per block must be at least 1, got {self.steps}.")
        elif (self.sampler in SAMPLERS and SAMPLERS[self.sampler].scheduled and self.block_size >= 1
              and self.steps > self.block_size):
            out.append(
                f"Steps per block ({self.steps}) exceed the block size ({self.block_size}): the "
                f"'{self.sampler}' sampler commits at least one token per round, so use at most "
                f"{self.block_size} steps."
            )
        if self.sampler not in SAMPLERS:
            out.append(f"Unknown sampler {self.sampler!r}; choose one of {', '.join(SAMPLERS)}.")
        if not 0.0 < float(self.threshold) <= 1.0:
            out.append(f"Threshold must be in (0, 1], got {self.threshold}.")
        if not float(self.factor) > 0.0:
            out.append(f"Factor must be positive, got {self.factor}.")
        if not float(self.entropy_bound) >= 0.0:
            out.append(f"Entropy bound must be zero or positive, got {self.entropy_bound}.")
        if not float(self.temperature) >= 0.0:
            out.append(f"Temperature must be zero or positive, got {self.temperature}.")
        if not 0.0 < float(self.top_p) <= 1.0:
            out.append(f"Top-p must be in (0, 1], got {self.top_p}.")
        if self.top_k < 0:
            out.append(f"Top-k must be zero (off) or positive, got {self.top_k}.")
        return out

    @property
    def num_blocks(self) -> int:
        return self.gen_length // self.block_size

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GenerationConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"Unknown setting(s) {', '.join(unknown)}; known settings are {', '.join(sorted(known))}.")
        return cls(**values)

    def replace(self, **changes: Any) -> GenerationConfig:
        return dataclasses.replace(self, **changes)


@dataclass
class Frame:
    """What one model forward decided. Positions index the generated span (0 = first new token)."""

    nfe: int                                    # forwards so far, this one included
    block: int                                  # index of the active block (AR: token index // block_size)
    round: int                                  # denoising round inside the block, from 0 (AR: index % block_size)
    committed: list[tuple[int, int, float]]     # (position, token_id, confidence) decided now
    canvas: list[int]                           # ids of the whole span; mask id where undecided
    elapsed_s: float                            # seconds since generation started

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Frame:
        return cls(
            nfe=int(d["nfe"]), block=int(d["block"]), round=int(d["round"]),
            committed=[(int(p), int(t), float(c)) for p, t, c in d["committed"]],
            canvas=[int(t) for t in d["canvas"]], elapsed_s=float(d["elapsed_s"]),
        )


STOP_REASONS = ("length", "eos", "cancelled")


@dataclass
class Stats:
    nfe: int
    new_tokens: int             # EOS / pad excluded
    tokens_per_forward: float
    seconds: float
    tokens_per_s: float
    first_token_s: float | None
    stop_reason: str            # one of STOP_REASONS

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Result:
    token_ids: list[int]                        # generated ids, EOS/pad trimmed
    text: str
    frames: list[Frame]
    stats: Stats
    mask_id: int | None = None                  # id that marks undecided canvas positions
    pieces: dict[int, str] = field(default_factory=dict)  # token id -> display text, for every id in frames

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_ids": self.token_ids, "text": self.text,
            "frames": [f.to_dict() for f in self.frames], "stats": self.stats.to_dict(),
            "mask_id": self.mask_id, "pieces": {str(k): v for k, v in self.pieces.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        return cls(
            token_ids=list(d["token_ids"]), text=d["text"],
            frames=[Frame.from_dict(f) for f in d["frames"]], stats=Stats(**d["stats"]),
            mask_id=d.get("mask_id"), pieces={int(k): v for k, v in d.get("pieces", {}).items()},
        )
