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
    # Rules that rewrite decided tokens run as long as they like: `steps` is neither schedule nor
    # cap, and a block goes on after its last mask (post rounds) while they edit.
    edits: bool = False
    # True: the rule decides its block's last round itself, so the steps cap does not commit every
    # mask left there (editing rules, the one-token reference, SDAR's rule whose k may exceed the
    # masks left). engine/samplers.select reads this instead of asking for names.
    owns_last_round: bool = False


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
                ("threshold", "steps"), True, owns_last_round=True),
    SamplerSpec("prefix_threshold",
                "Ours: the leftmost masked position, then the ones after it while confidence >= threshold.",
                ("threshold",), False),
    SamplerSpec("factor", "Fast-dLLM's factor rule: ranks with (n + 1)(1 - c_(n)) <= factor, to the first failing one.",
                ("factor",), False),
    SamplerSpec("factor_prefix", "Ours: the longest prefix of ranks with (n + 1)(1 - c_(n)) < factor (none failing).",
                ("factor",), False),
    SamplerSpec("joint_threshold",
                "LLaDA2.1: fill masks with confidence > threshold (at least the top one) and rewrite decided "
                "tokens whose new proposal has probability > edit threshold; after the block is full, up to "
                "max post steps rounds that only edit.",
                ("threshold", "edit_threshold", "max_post_steps"), False, edits=True, owns_last_round=True),
    SamplerSpec("entropy_bounded", "The lowest-entropy masked positions while sum H - max H <= entropy bound.",
                ("entropy_bound",), False),
    SamplerSpec("reference", "One token per forward, the most confident masked position (the slow reference).",
                (), False, owns_last_round=True),
)}
if any(s.edits and not s.owns_last_round for s in SAMPLERS.values()):
    raise ImportError("engine/sampler_table.py: a rule that edits runs past its masks, so it owns its last round.")
# How scheduled samplers pick k per round: LLaDA's even split of a block's masks over the
# steps, or Dream's k = int(M (1 - s / t)) of the masks left (dream_transfer_count).
SCHEDULES = ("even", "dream")
# Remasking schedules (GenerationConfig.remask; the rule is engine/remask.py).
REMASK_SCHEDULES = ("off", "loop", "cap")
# Old names still accepted (a config using one is renamed, with a deprecation warning).
RENAMED_SAMPLERS = {"random": "random_order", "eb": "entropy_bounded"}


