"""The office-six set: the seed system's six office tasks asked one after another in one
conversation, one world (`--task-set office-six`).

Each chain is conversations.SIX_OFFICE in that order: an invoice for a customer, a course
registration, adding up amounts, an activity's status, a customer's details, then that
customer's invoices ("and her invoices?", a follow-up that needs the lookup before it). Values
are held out (split "heldout": names, ids and amounts no training transcript holds); the wording
is the templates' (and the training follow-up frames), as in the `templates` task set, so what
the set measures is six requests in one world, not new sentence shapes: the `conversations` set's
first conversation is the same plan in held-out wording. Gold and replay are the oracle's,
drawn by conversations.draw; a seed whose chain does not fit Sprout's context is skipped, and so
is one with a request that only reads and whose answer is empty ("no invoices found"): there the
grader can check only that the lookups were made (world/grader.missed_lookup), not what the answer
says, so such a request would measure less than the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from world.conversation_sets import SIX_OFFICE, load_conversations
from world.conversations import draw
from world.grader import names_nothing

OFFICE_SIX_PATH = Path(__file__).with_name("heldout_office_six.json")
OFFICE_SIX_SIZE, OFFICE_SIX_SEED, OFFICE_SIX_VALIDATION_SEED = 12, 606, 6006
PHRASING = "template"


def make_office_six(n: int = OFFICE_SIX_SIZE, seed: int = OFFICE_SIX_SEED) -> list[dict[str, Any]]:
    """n chains drawn from seeds seed, seed + 1, ... (those that hold together)."""
    chains: list[dict[str, Any]] = []
    draw_seed = seed
    while len(chains) < n:
        chain = draw("heldout", draw_seed, PHRASING, plan=SIX_OFFICE)
        if chain is not None and all(map(gradable, chain["turns"])):
            chain["id"] = f"office-six-{draw_seed}"
            chains.append(chain)
        draw_seed += 1
    return chains


def gradable(turn: dict[str, Any]) -> bool:
    """Whether only a right answer passes this request: it changes the world, or its answer must
    name something (an id, a total, a status)."""
    return not names_nothing(turn)


def load_office_six(path: str | Path = OFFICE_SIX_PATH) -> list[dict[str, Any]]:
    return load_conversations(path)


def validation_office_six(n: int, seed: int = OFFICE_SIX_VALIDATION_SEED) -> list[dict[str, Any]]:
    """n chains drawn as the set's from seeds of their own: choose checkpoints on these."""
    return make_office_six(n, seed)


if __name__ == "__main__":  # python -m world.office_six: rewrite the committed set (on purpose only)
    from world.task_sets import write_task_list

    write_task_list(make_office_six(), OFFICE_SIX_PATH)
