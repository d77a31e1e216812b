"""The samplers by name: what each rule does, the GenerationConfig fields it reads, and whether `steps`
is its schedule. No torch here: GenerationConfig (engine/trace.py) validates against this table and
the app labels its controls from it; the rules themselves are engine/samplers.py's RULES, one per name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SamplerSpec:
    name: str
    description: str
    parameters: tuple[str, ...]         # the GenerationConfig fields the rule reads
    scheduled: bool                     # True: `steps` is a schedule (k per round); False: a cap


SAMPLERS: dict[str, SamplerSpec] = {s.name: s for s in (
    SamplerSpec("low_confidence", "LLaDA: the k most confident masked positions (k from an even schedule).",
                ("steps",), True),
    SamplerSpec("margin", "The k masked positions with the largest gap between the two likeliest tokens.",
                ("steps",), True),
    SamplerSpec("entropy", "The k lowest-entropy masked positions.",
                ("steps",), True),
    SamplerSpec("random_order", "k masked positions chosen uniformly at random.",
                ("steps",), True),
    SamplerSpec("threshold", "Fast-dLLM: every masked position with confidence >= threshold, at least the top one.",
                ("threshold",), False),
    SamplerSpec("threshold_strict",
                "Fast-dLLM v2: every masked position with confidence > threshold, at least the top.",
                ("threshold",), False),
    SamplerSpec("threshold_or_top_k",
                "LLaDA2: every masked position with confidence > threshold when at least k are, else the top k.",
                ("threshold", "steps"), True),
    SamplerSpec("threshold_or_top_k_uncapped",
                "SDAR: as threshold_or_top_k, but a k above the masks left also re-samples decided tokens.",
                ("threshold", "steps"), True),
    SamplerSpec("prefix_threshold",
                "Ours: the leftmost masked position, then the ones after it while confidence >= threshold.",
                ("threshold",), False),
    SamplerSpec("factor", "Fast-dLLM's factor rule: ranks with (n + 1)(1 - c_(n)) <= factor, to the first failing one.",
                ("factor",), False),
    SamplerSpec("factor_prefix", "Ours: the longest prefix of ranks with (n + 1)(1 - c_(n)) < factor (none failing).",
                ("factor",), False),
    SamplerSpec("entropy_bounded", "The lowest-entropy masked positions while sum H - max H <= entropy bound.",
                ("entropy_bound",), False),
    SamplerSpec("reference", "One token per forward, the most confident masked position (the slow reference).",
                (), False),
)}
# How scheduled samplers pick k per round: LLaDA's even split of a block's masks over the
# steps, or Dream's k = int(M (1 - s / t)) of the masks left (dream_transfer_count).
SCHEDULES = ("even", "dream")
# Old names still accepted (a config using one is renamed, with a deprecation warning).
RENAMED_SAMPLERS = {"random": "random_order", "eb": "entropy_bounded"}


