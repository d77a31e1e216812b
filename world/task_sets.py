"""The committed agent task sets: the held-out template set and its documents, the held-out
phrasing and words sets, the absent and unknown clothes, their validation draws, and the table of
them the benchmark reads (TASK_SETS). Tasks are built by world/tasks.py; `python -m
world.task_sets` rewrites the committed files (on purpose only)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from world.tasks import (
    ABSENT_INTENT,
    ABSENT_WORDINGS,
    AGENT_INTENTS,
    DOC_INTENTS,
    PHRASING_INTENTS,
    STYLED_INTENTS,
    UNKNOWN_INTENT,
    generate_tasks,
    make_task,
    task_seeds,
)

HELDOUT_PATH = Path(__file__).with_name("heldout_tasks.json")
HELDOUT_SIZE, HELDOUT_SEED = 49, 49


def make_heldout_set(n: int = HELDOUT_SIZE, seed: int = HELDOUT_SEED) -> list[dict[str, Any]]:
    """Agent tasks on held-out values only, balanced across intents."""
    return generate_tasks("heldout", n, seed, AGENT_INTENTS)


# the document tasks (LaTeX resume, HTML page) measured apart: `bench.agent agent --tasks-file`
HELDOUT_DOCS_PATH = Path(__file__).with_name("heldout_documents.json")
HELDOUT_DOCS_SIZE, HELDOUT_DOCS_SEED = 10, 50


def make_heldout_documents(n: int = HELDOUT_DOCS_SIZE, seed: int = HELDOUT_DOCS_SEED) -> list[dict[str, Any]]:
    """Document tasks on held-out values only, resume and page alternating."""
    return generate_tasks("heldout", n, seed, DOC_INTENTS)


# Validation tasks: held-out values, other task seeds, none of the benchmark's tasks. Choosing
# checkpoints or sampler settings on these keeps the benchmark's 49 tasks unseen until the end.
VALIDATION_SEED = 1001


def validation_tasks(n: int, seed: int = VALIDATION_SEED) -> list[dict[str, Any]]:
    """`n` held-out agent tasks, balanced across intents, that the benchmark set does not hold."""
    benchmark = {t["id"] for t in load_heldout_tasks()}
    # twice as many as asked, so a rare collision with the benchmark still leaves n
    return [t for t in generate_tasks("heldout", 2 * n, seed, AGENT_INTENTS) if t["id"] not in benchmark][:n]


def load_heldout_tasks(path: str | Path = HELDOUT_PATH) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text())


# -- the held-out phrasing benchmark: held-out frames and combinations AND held-out entities --
PHRASING_PATH = Path(__file__).with_name("heldout_phrasing_tasks.json")
PHRASING_SIZE, PHRASING_SEED = 49, 149
PHRASING_VALIDATION_SEED, WORDS_SEED = 2002, 249


def make_phrasing_set(n: int = PHRASING_SIZE, seed: int = PHRASING_SEED) -> list[dict[str, Any]]:
    """Held-out wording (grammar "heldout") on held-out values, balanced across every
    phrased intent: one goal, two goals and outside the world."""
    return generate_tasks("heldout", n, seed, PHRASING_INTENTS, "heldout")


def make_words_set(n: int = PHRASING_SIZE, seed: int = WORDS_SEED) -> list[dict[str, Any]]:
    """Training frames with held-out synonyms, on held-out values: reported, not a target."""
    return generate_tasks("heldout", n, seed, PHRASING_INTENTS, "words")


def phrasing_validation_tasks(n: int, seed: int = PHRASING_VALIDATION_SEED) -> list[dict[str, Any]]:
    """`n` tasks phrased and valued as the phrasing benchmark, none of its tasks: choose
    checkpoints on these, never on a benchmark."""
    benchmark = {t["id"] for t in load_heldout_tasks(PHRASING_PATH)}
    return [t for t in generate_tasks("heldout", 2 * n, seed, PHRASING_INTENTS, "heldout")
            if t["id"] not in benchmark][:n]


# -- requests for a product the shop does not stock: held-out entities and wording ------------
ABSENT_PATH = Path(__file__).with_name("heldout_absent.json")
ABSENT_SIZE, ABSENT_SEED = 20, 349


UNKNOWN_PATH = Path(__file__).with_name("heldout_unknown.json")
UNKNOWN_SEED = 353


def make_absent_set(n: int = ABSENT_SIZE, seed: int = ABSENT_SEED, intent: str = ABSENT_INTENT) -> list[dict[str, Any]]:
    """Absent-product tasks (or, with intent shop_unknown, requests for clothes the shop never
    sells) in held-out wording on held-out values, half in "look" wording and half in "act"
    wording (the first odd one a look), in the order they were drawn."""
    left = {w: n // len(ABSENT_WORDINGS) for w in ABSENT_WORDINGS}
    left[ABSENT_WORDINGS[0]] += n % len(ABSENT_WORDINGS)
    rng = random.Random(f"absent:{seed}")
    tasks: list[dict[str, Any]] = []
    while len(tasks) < n:
        task = make_task(intent, "heldout", rng.getrandbits(31), "heldout")
        wording = task["slots"]["wording"]
        if left[wording] and task["id"] not in {t["id"] for t in tasks}:
            left[wording] -= 1
            tasks.append(task)
    return tasks


# -- T-shirts (issue 49): the style the committed sets never draw, measured on a set of its own --
TSHIRTS_PATH = Path(__file__).with_name("heldout_tshirts.json")
TSHIRTS_SIZE, TSHIRTS_SEED = 20, 449
TSHIRT = "t-shirt"
# The seed's demo as the person says it; the name, email and address are the task's (held out).
SEED_DEMO = ("Find me a black T-shirt in size L, add it to the cart, and check out as a guest: "
             "{name}, {email}, {address}.")


def make_tshirt_set(n: int = TSHIRTS_SIZE, seed: int = TSHIRTS_SEED) -> list[dict[str, Any]]:
    """T-shirt requests of every shop intent that names a style (find, add, near miss, out of
    stock, buy) on held-out values, in balanced rounds of those intents, alternately in the
    templates' and the held-out wording."""
    phrasings = ("template", "heldout")
    return [make_task(intent, "heldout", task_seed, phrasings[k % 2], style=TSHIRT)
            for k, (intent, task_seed) in enumerate(task_seeds("heldout", n, seed, STYLED_INTENTS))]


def tshirt_validation_tasks(n: int, seed: int = TSHIRTS_SEED + 1) -> list[dict[str, Any]]:
    """`n` T-shirt tasks drawn as the check set's, none of its tasks."""
    benchmark = {t["id"] for t in load_heldout_tasks(TSHIRTS_PATH)}
    return [t for t in make_tshirt_set(2 * n, seed) if t["id"] not in benchmark][:n]


def seed_demo_task() -> dict[str, Any]:
    """The seed's demo: the first held-out T-shirt purchase (from seed 0 up) of one black T-shirt
    in size L (a held-out colour x size), asked in the seed's own words."""
    for task_seed in range(10_000):
        task = make_task("shop_buy", "heldout", task_seed, style=TSHIRT)
        slots = task["slots"]
        if (slots["color"], slots["size"], slots["qty"]) == ("black", "L", 1):
            return {**task, "id": f"seed-demo-{task_seed}", "instruction": SEED_DEMO.format(**slots)}
    raise LookupError("no held-out seed below 10,000 draws one black T-shirt in size L")


# name -> (the benchmark's tasks, n validation tasks of the same kind)
TASK_SETS: dict[str, tuple[Callable[[], list[dict]], Callable[[int], list[dict]]]] = {
    "templates": (load_heldout_tasks, validation_tasks),
    "phrasing": (lambda: load_heldout_tasks(PHRASING_PATH), phrasing_validation_tasks),
    "words": (make_words_set, lambda n: generate_tasks("heldout", n, WORDS_SEED + 1, PHRASING_INTENTS, "words")),
    "tshirts": (lambda: load_heldout_tasks(TSHIRTS_PATH), lambda n: tshirt_validation_tasks(n)),
}


def write_task_list(tasks: list[dict[str, Any]], path: str | Path) -> None:
    """One task per line, so a change shows up as a readable diff."""
    lines = ",\n".join(json.dumps(t, separators=(",", ":")) for t in tasks)
    Path(path).write_text(f"[\n{lines}\n]\n")


def write_heldout_set(path: str | Path = HELDOUT_PATH) -> None:
    write_task_list(make_heldout_set(), path)


if __name__ == "__main__":  # python -m world.task_sets: rewrite the committed sets (on purpose only)
    write_heldout_set(HELDOUT_PATH)
    write_task_list(make_heldout_documents(), HELDOUT_DOCS_PATH)
    write_task_list(make_phrasing_set(), PHRASING_PATH)
    write_task_list(make_absent_set(), ABSENT_PATH)
    write_task_list(make_absent_set(seed=UNKNOWN_SEED, intent=UNKNOWN_INTENT), UNKNOWN_PATH)
    write_task_list([seed_demo_task(), *make_tshirt_set()], TSHIRTS_PATH)
