"""The types every part of the playground speaks: a generation config, one Frame per
model forward, and the Result of a whole generation (docs/ARCHITECTURE.md, "The one data path")."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

from engine.errors import ConfigError  # noqa: F401  (defined there; callers import it from here too)
from engine.json_limits import MAX_DEPTH, value_depth
from engine.sampler_table import REMASK_SCHEDULES, RENAMED_SAMPLERS, SAMPLERS, SCHEDULES
from engine.scaffold.schema import schema_problem
from engine.setting_rules import (
    MESSAGE_CHARS,
    NUMBERS,
    SWITCHES,
    WHOLE,
    joined,
    largest_divisor,
    number_problem,
    shown_value,
    whole_problem,
)

# Fast-dLLM v1's caches for full-attention models (engine/backends/kv_window.py): none re-reads
# everything every forward (the reference); prefix keeps the keys and values before the block from
# the block's first forward; dual keeps the masked suffix's too.
CACHE_MODES = ("none", "prefix", "dual")


def _reject_unknown(values: dict[Any, Any]) -> None:
    known = [f.name for f in dataclasses.fields(GenerationConfig)]
    unknown = [key for key in values if key not in known]
    if unknown:
        names = ", ".join(key if isinstance(key, str) and key.isidentifier() and len(key) <= 40 else shown_value(key)
                          for key in unknown[:3]) + (" and more" if len(unknown) > 3 else "")
        message = f"Unknown setting(s) {names}."
        listing = f" The generation settings are {', '.join(known)}."
        raise ConfigError(message + listing if len(message + listing) <= MESSAGE_CHARS else message)


@dataclass(frozen=True)
class GenerationConfig:
    gen_length: int = 64        # tokens to generate (the canvas)
    block_size: int = 16        # tokens decoded together; must divide gen_length
    steps: int = 8              # denoising rounds per block (a schedule or a cap: engine/sampler_table.py)
    sampler: str = "threshold"  # a name in engine/sampler_table.py SAMPLERS
    threshold: float = 0.9      # `threshold`, `prefix_threshold`: commit proposals with confidence >= tau
    factor: float = 1.0         # `factor`, `factor_prefix`: rank n passes when (n+1)(1 - c_(n)) <= f (< f)
    entropy_bound: float = 0.5  # `entropy_bounded`: gamma in sum H - max H <= gamma
    # A uniform-noise canvas (DiffusionGemma, engine/noise_canvas.py) reads `block_size` as the canvas
    # length, `steps` as the most denoising steps a canvas takes, `entropy_bound` as its acceptance
    # bound, and these: the temperature falls linearly from t_max (first step) towards t_min; a canvas
    # ends early once its draft is unchanged for stability_threshold steps and the mean entropy is
    # below confidence_threshold (0 = never early). argmax_draws: an accepted position takes the
    # argmax instead of a sample (ours, off in the preset; transformers always samples).
    t_min: float = 0.4
    t_max: float = 0.8
    stability_threshold: int = 1
    confidence_threshold: float = 0.005
    argmax_draws: bool = False
    temperature: float = 0.0    # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0              # 0 = off
    seed: int = 0
    stop_on_eos: bool = True
    # How closely to follow the authors' decoding loops (catalog presets turn these on):
    untempered_confidence: bool = False  # c_i from softmax of the raw logits (LLaDA, Fast-dLLM), not the tempered ones
    keep_mask_logit: bool = False        # confidences over the full vocabulary, mask logit included (upstream)
    steps_cap: bool = True               # unscheduled samplers commit the rest at round `steps` (ours)
    aligned_blocks: bool = False         # blocks at multiples of block_size over prompt + answer (SDAR)
    greedy_first_token: bool = False     # a block's first token: argmax of the forward that stored the last one
    sub_block_size: int = 0              # > 0: decode each block in sub-blocks of this size, left to right
    tail_in_length: bool = False         # aligned blocks: the prompt's tail counts toward gen_length (Fast-dLLM v2)
    model_dtype_probs: bool = False      # probabilities in the dtype of the model's logits (SDAR: bf16 on a GPU)
    schedule: str = "even"               # scheduled samplers' k per round: one of SCHEDULES
    # Editing (joint_threshold, LLaDA2.1): a decided token is rewritten when the new proposal's
    # probability is > edit_threshold; after a block's last mask, at most max_post_steps rounds
    # that only edit (the block ends at the first round without an edit).
    edit_threshold: float = 0.9
    max_post_steps: int = 16
    # Remasking (engine/remask.py, ReMDM): off, or a schedule that puts back the least confident
    # decided tokens of the block to be decoded again: remask_count of them in each of at most
    # remask_rounds rounds per block. Works with every sampler of a masked model.
    remask: str = "off"
    remask_rounds: int = 2
    remask_count: int = 2
    cache: str = "none"                  # full-attention backends: one of CACHE_MODES
    # Scaffolded decoding (engine/scaffold/): the output's fixed text is written into the canvas,
    # only its value slots are decoded. `schema` alone (structured output) turns it on too.
    scaffold: bool = False               # the answer is one tool call of the registry (world/tools.py)
    # A scaffolded walk commits a value token at confidence >= min(threshold, scaffold_threshold).
    # Its confidence is already over the tokens the schema allows, and a wrong guess can no longer
    # break the call's structure, so the bar may sit below free text's; 0.95 is the bundled
    # Sprout-BD's choice on validation (models/README.md). Models whose threshold is 0.95 or less
    # keep theirs.
    scaffold_threshold: float = 0.95
    schema: dict[str, Any] | None = field(default=None, hash=False)  # a JSON schema the answer follows

    def __post_init__(self) -> None:
        if isinstance(self.sampler, str) and self.sampler in RENAMED_SAMPLERS:
            new = RENAMED_SAMPLERS[self.sampler]
            warnings.warn(f"The sampler '{self.sampler}' is now called '{new}'; using '{new}'.",
                          FutureWarning, stacklevel=3)   # FutureWarning: shown to people by default
            object.__setattr__(self, "sampler", new)
        problems = self.problems()
        if problems:
            raise ConfigError(joined(problems))

    def problems(self) -> list[str]:
        """Every reason this config cannot run, each a sentence naming the control as the page
        labels it; empty when it is fine. Relations between settings are checked only once each
        setting is fine on its own."""
        out = [p for p in (whole_problem(self, name) for name in WHOLE) if p]
        out += [p for p in (number_problem(self, name) for name in NUMBERS) if p]
        switches = [f.name for f in dataclasses.fields(self)
                    if isinstance(f.default, bool) and not isinstance(getattr(self, f.name), bool)]
        out += [f"{SWITCHES.get(name, name.replace('_', ' ').capitalize())} must be on or off (true or false), "
                f"got {shown_value(getattr(self, name))}." for name in switches]
        known_sampler = isinstance(self.sampler, str) and self.sampler in SAMPLERS
        if not known_sampler:
            out.append(f"Unknown sampler {shown_value(self.sampler)}; choose one of {', '.join(SAMPLERS)}."
                       if isinstance(self.sampler, str) else
                       f"Sampler must be a sampler's name (text, like 'threshold'), got {shown_value(self.sampler)}.")
        if self.schedule not in SCHEDULES:
            out.append(f"Unknown schedule {shown_value(self.schedule)}; choose one of {', '.join(SCHEDULES)}.")
        if self.remask not in REMASK_SCHEDULES:
            out.append(f"Unknown remasking {shown_value(self.remask)}; choose one of {', '.join(REMASK_SCHEDULES)}.")
        if self.cache not in CACHE_MODES:
            out.append(f"Unknown cache {shown_value(self.cache)}; choose one of {', '.join(CACHE_MODES)}.")
        if self.schema is not None:
            deep = value_depth(self.schema, stop_past=MAX_DEPTH) > MAX_DEPTH
            problem = (f"The JSON schema nests more than {MAX_DEPTH} levels deep; a schema the scaffold can "
                       "follow nests a few levels." if deep else schema_problem(self.schema))
            if problem:
                out.append(problem)
        if out:
            return out
        if self.t_max <= self.t_min:
            out.append(f"Highest temperature (t_max) {shown_value(self.t_max)} must be above the lowest (t_min) "
                       f"{shown_value(self.t_min)}: the temperature falls from t_max towards t_min over the steps.")
        if self.gen_length % self.block_size:
            fits = largest_divisor(self.gen_length, self.block_size)
            out.append(
                f"Block size {self.block_size} does not divide generation length {self.gen_length}: "
                f"choose a block size that divides it (for example {fits}) "
                f"or a length that is a multiple of {self.block_size}."
            )
        if self.cache != "none" and (self.scaffolded or self.aligned_blocks or self.sub_block_size):
            what = ("scaffolded decoding" if self.scaffolded else "aligned blocks" if self.aligned_blocks
                    else "sub-blocks")
            out.append(f"The {self.cache} cache follows blocks laid after the prompt and decoded one after the "
                       f"other; {what} decode another way: set cache to none or turn {what} off.")
        if SAMPLERS[self.sampler].scheduled and self.steps > self.block_size:
            out.append(
                f"Steps per block ({self.steps}) exceed the block size ({self.block_size}): the "
                f"'{self.sampler}' sampler commits at least one token per round, so use at most "
                f"{self.block_size} steps."
            )
        return out

    @property
    def scaffolded(self) -> bool:
        """Whether the answer is decoded on a scaffold: a registry tool call, or `schema`."""
        return self.scaffold or self.schema is not None

    @property
    def num_blocks(self) -> int:
        return self.gen_length // self.block_size

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GenerationConfig:
        if not isinstance(values, dict):
            raise ConfigError(f"Generation settings must be a mapping of names to values, got {shown_value(values)}.")
        _reject_unknown(values)
        return cls(**values)

    def replace(self, **changes: Any) -> GenerationConfig:
        _reject_unknown(changes)
        return dataclasses.replace(self, **changes)


@dataclass
class NoiseStep:
    """What one step of a uniform-noise canvas did (engine/noise_canvas.py). Positions index the
    generated span, as in Frame; the canvas being denoised covers `start` .. start + len(draft)."""

    start: int                                  # span position of the canvas's first token
    draft: list[int]                            # argmax of each canvas position this step (the streamed draft)
    noisy: list[int]                            # the canvas the next step reads: accepted tokens, the rest random
    accepted: list[int]                         # positions accepted this step (they keep their drawn token)
    changed: list[int]                          # accepted now and at the last step, with another token now
    temperature: float                          # the schedule's temperature at this step
    mean_entropy: float                         # mean entropy of the tempered logits over the canvas, nats
    stop_rule: str = ""                         # set on a canvas's last step: "max_steps" or "stable_confident"

    @property
    def renoised(self) -> list[int]:
        """Positions of the canvas given a fresh random token (every one not accepted)."""
        taken = set(self.accepted)
        return [self.start + i for i in range(len(self.draft)) if self.start + i not in taken]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoiseStep:
        return cls(start=int(data["start"]), draft=[int(t) for t in data["draft"]],
                   noisy=[int(t) for t in data["noisy"]], accepted=[int(p) for p in data["accepted"]],
                   changed=[int(p) for p in data["changed"]], temperature=float(data["temperature"]),
                   mean_entropy=float(data["mean_entropy"]), stop_rule=str(data.get("stop_rule") or ""))


@dataclass
class Frame:
    """What one model forward decided. Positions index the generated span (0 = first new token)."""

    nfe: int                                    # forwards so far, this one included
    block: int                                  # index of the block being decoded (block_size_of)
    round: int                                  # denoising round inside the block, from 0
    committed: list[tuple[int, int, float]]     # (position, token_id, confidence) decided now
    canvas: list[int]                           # ids of the whole span; mask id where undecided
    elapsed_s: float                            # seconds since generation started
    # Scaffolded decoding: every position the scaffold has written so far (fixed text, and the EOS
    # fill after it), sorted; these are not model decisions and never appear in `committed`.
    prefilled: list[int] = field(default_factory=list)
    # Rewrites: (position, old token, new token) for each position that held a decided token and
    # now holds another one (an edit rule, or a remasked position decoded to a new token). Such a
    # position is also in `committed`, but it was decided once (engine/metrics.py).
    edits: list[tuple[int, int, int]] = field(default_factory=list)
    # Positions put back to the mask after this forward (engine/remask.py), to be decoded again.
    remasked: list[int] = field(default_factory=list)
    # A uniform-noise canvas step (no masks: noise, accepted and renoised positions); None otherwise.
    # Its `committed` is empty until the canvas's last step, which decides the canvas's draft.
    noise: NoiseStep | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Frame:
        return cls(
            nfe=int(data["nfe"]), block=int(data["block"]), round=int(data["round"]),
            committed=[(int(p), int(t), float(c)) for p, t, c in data["committed"]],
            canvas=[int(t) for t in data["canvas"]], elapsed_s=float(data["elapsed_s"]),
            prefilled=[int(p) for p in data.get("prefilled", ())],
            edits=[(int(p), int(old), int(new)) for p, old, new in data.get("edits", ())],
            remasked=[int(p) for p in data.get("remasked", ())],
            noise=NoiseStep.from_dict(data["noise"]) if data.get("noise") else None,
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
    wall_s: float | None = None  # what the person waited (set by the app); the rest: engine/metrics.py
    edits: int = 0              # answer tokens rewritten (engine/metrics.py); not in new_tokens again
    # A uniform-noise run: tokens per forward as transformers' DiffusionGemma generate counts it
    # (engine/metrics.py upstream_tokens_per_forward); None for every other run.
    upstream_tokens_per_forward: float | None = None

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
    eos_ids: list[int] = field(default_factory=list)      # ids that end the answer (engine/metrics.py Ends)
    pad_id: int | None = None
    schema_error: str = ""                      # scaffolded: why the answer does not follow its schema ("" = it does)
    uniform_noise: bool = False                 # canvases of random tokens, no mask (Frame.noise says each step)

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_ids": self.token_ids, "text": self.text,
            "frames": [f.to_dict() for f in self.frames], "stats": self.stats.to_dict(),
            "mask_id": self.mask_id, "pieces": {str(k): v for k, v in self.pieces.items()},
            "eos_ids": list(self.eos_ids), "pad_id": self.pad_id, "schema_error": self.schema_error,
            "uniform_noise": self.uniform_noise,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(
            token_ids=list(data["token_ids"]), text=data["text"],
            frames=as_stored_blocks([Frame.from_dict(f) for f in data["frames"]], data.get("mask_id"),
                                    bool(data.get("uniform_noise"))),
            stats=Stats(**data["stats"]),
            mask_id=data.get("mask_id"), pieces={int(k): v for k, v in data.get("pieces", {}).items()},
            eos_ids=[int(t) for t in (data["eos_ids"] if "eos_ids" in data else _stored_eos(data))],
            pad_id=data.get("pad_id"),
            schema_error=str(data.get("schema_error") or ""),
            uniform_noise=bool(data.get("uniform_noise")),
        )


def block_size_of(mask_id: int | None, config_block_size: int, uniform_noise: bool = False) -> int:
    """How many positions one Frame.block spans. An autoregressive run (no mask id, no noise)
    decides one token per forward, so each token is a block of one, decided in round 0 (block
    diffusion with block size 1); a diffusion run's blocks are the config's (a uniform-noise run's:
    its canvases)."""
    return config_block_size if mask_id is not None or uniform_noise else 1


def as_stored_blocks(frames: list[Frame], mask_id: int | None, uniform_noise: bool = False) -> list[Frame]:
    """Frames as this version writes them. Autoregressive frames stored while `block` grouped
    tokens for display (block = index // block_size, round = index % block_size) become blocks
    of one: block = the position decided, round 0."""
    if mask_id is not None or uniform_noise:
        return frames
    return [dataclasses.replace(f, block=f.committed[-1][0], round=0) if f.committed else f for f in frames]


def _stored_eos(data: dict[str, Any]) -> list[int]:
    # Traces stored before the end ids were kept: a run that stopped on EOS ends with it.
    frames = data.get("frames") or []
    if data.get("stats", {}).get("stop_reason") == "eos" and frames and frames[-1]["canvas"]:
        return [int(frames[-1]["canvas"][-1])]
    return []
