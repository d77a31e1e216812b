"""Each generation setting on its own: its label as the page shows it, the range it must lie in,
the sentence that says what is wrong with a value, and how a list of problems becomes one
message. engine/trace.py's GenerationConfig reads them and checks the settings' relations."""

from __future__ import annotations

import math
import numbers
from typing import Any

MAX_TOKENS = 1 << 20      # generation length, block size, steps: far beyond any model's context
MAX_SEED = 2**63 - 1      # torch.manual_seed takes a signed 64-bit integer
MAX_TOP_K = 1 << 24       # beyond every vocabulary
# Past these the setting means nothing more: at temperature 100 every logit gap of a trained model
# is below 1 % of a nat, so sampling is already uniform; a factor or entropy bound past the
# canvas length commits the whole block at once.
MAX_TEMPERATURE = 100.0
MAX_FACTOR = float(MAX_TOKENS)
MAX_ENTROPY_BOUND = float(MAX_TOKENS)
MESSAGE_CHARS = 290       # a ConfigError message stays a few sentences long

# Each setting as the page labels it: (label, lowest, highest) for whole numbers, (label, what
# is allowed, test) for real numbers, label for switches.
WHOLE = {"gen_length": ("Generation length", 1, MAX_TOKENS), "block_size": ("Block size", 1, MAX_TOKENS),
         "steps": ("Steps per block", 1, MAX_TOKENS), "top_k": ("Top-k (0 = off)", 0, MAX_TOP_K),
         "seed": ("Seed", 0, MAX_SEED), "max_post_steps": ("Max post steps", 0, MAX_TOKENS),
         "remask_rounds": ("Remask rounds", 0, MAX_TOKENS), "remask_count": ("Remask count", 1, MAX_TOKENS),
         "stability_threshold": ("Stability (steps)", 0, MAX_TOKENS)}
NUMBERS = {
    "threshold": ("Threshold", "a number between 0 and 1 (above 0)", lambda x: 0.0 < x <= 1.0),
    "edit_threshold": ("Edit threshold", "a number from 0 to 1", lambda x: 0.0 <= x <= 1.0),
    "scaffold_threshold": ("Scaffold threshold", "a number between 0 and 1 (above 0)", lambda x: 0.0 < x <= 1.0),
    "factor": ("Factor", f"a number above 0 and at most {MAX_FACTOR:,}", lambda x: 0.0 < x <= MAX_FACTOR),
    "entropy_bound": ("Entropy bound", f"a number from 0 to {MAX_ENTROPY_BOUND:,}",
                      lambda x: 0.0 <= x <= MAX_ENTROPY_BOUND),
    "temperature": ("Temperature", f"a number from 0 (greedy) to {MAX_TEMPERATURE:g}",
                    lambda x: 0.0 <= x <= MAX_TEMPERATURE),
    "top_p": ("Top-p", "a number between 0 and 1 (above 0)", lambda x: 0.0 < x <= 1.0),
    "t_min": ("Lowest temperature (t_min)", f"a number from 0 to {MAX_TEMPERATURE:g}",
              lambda x: 0.0 <= x <= MAX_TEMPERATURE),
    "t_max": ("Highest temperature (t_max)", f"a number above 0 and at most {MAX_TEMPERATURE:g}",
              lambda x: 0.0 < x <= MAX_TEMPERATURE),
    "confidence_threshold": ("Confidence (mean entropy)", "a number from 0 (never stop early) to "
                             f"{MAX_ENTROPY_BOUND:,}", lambda x: 0.0 <= x <= MAX_ENTROPY_BOUND),
}
# every bool field is a switch; these have labels of their own, the rest read as their name
SWITCHES = {"stop_on_eos": "Stop at end of text", "untempered_confidence": "Untempered confidence",
            "keep_mask_logit": "Keep mask logit", "steps_cap": "Steps cap",
            "argmax_draws": "Argmax draws"}


def setting_label(name: str) -> str:
    """A setting's name as the page and every sentence about it say it ("Steps per block")."""
    for table in (WHOLE, NUMBERS):
        if name in table:
            return table[name][0]
    return SWITCHES.get(name, name.replace("_", " ").capitalize())


def shown_value(value: Any) -> str:
    """A value as a person can read it in one short phrase: never an object's repr."""
    if isinstance(value, bool) or value is None:
        text = str(value)
    elif isinstance(value, numbers.Integral):
        value = int(value)
        text = str(value) if value.bit_length() <= 128 else f"a whole number of {value.bit_length()} bits"
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = repr(value)
    else:
        return f"a value of type {type(value).__name__[:40]}"
    return text if len(text) <= 40 else text[:39] + "…"


def whole_problem(config: Any, name: str) -> str | None:
    label, low, high = WHOLE[name]
    value = getattr(config, name)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and low <= value <= high:
        return None
    return f"{label} must be a whole number from {low} to {high:,}, got {shown_value(value)}."


def number_problem(config: Any, name: str) -> str | None:
    label, allowed, fits = NUMBERS[name]
    value = getattr(config, name)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except (OverflowError, ValueError):
            number = math.nan
        if math.isfinite(number) and fits(number):
            return None
    return f"{label} must be {allowed}, got {shown_value(value)}."


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of n that is <= at_most, in O(sqrt n) steps."""
    best = 1
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            best = max([best] + [x for x in (d, n // d) if x <= at_most])
    return best


def joined(problems: list[str]) -> str:
    """The problems as one message of at most MESSAGE_CHARS characters."""
    message = problems[0]
    for i, problem in enumerate(problems[1:], 1):
        if len(message) + len(problem) + 1 > MESSAGE_CHARS - 40:
            return with_rest(message, len(problems) - i)
        message += " " + problem
    return message


def with_rest(message: str, rest: int) -> str:
    """`message` and a note that `rest` more settings are wrong, in the shortest form that keeps it
    within MESSAGE_CHARS. One problem can take most of the room by itself (an unknown sampler lists
    every sampler), so the note shrinks, and goes, before the message would grow past it."""
    for note in (f" ({rest} more setting{'s are' if rest > 1 else ' is'} also wrong.)", f" (+{rest} more.)", ""):
        if len(message) + len(note) <= MESSAGE_CHARS:
            return message + note
    return message
