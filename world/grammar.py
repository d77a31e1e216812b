"""The instruction grammar: a user request composed from parts (phrasebook.py): a sentence
frame, words of a family, entities and numbers in several surface forms, fillers, and at a
small rate a lower-cased sentence or a typo. The world and the gold trajectory do not depend
on the wording: tasks.py draws the scenario first and the phrasing from its own random stream.

Phrasings (which parts may be used):
    template  the old templates (templates.py), one per intent family
    train     training frames and words; the old templates are one family among them
    heldout   held-out frames, clauses and joiners (sentence shapes and slot orders never in
              training), built from the training words: what generalisation is measured on
    words     training frames with every word that has a held-out synonym replaced by one
              (reported, not a target: how far the model reaches beyond its lexicon)

Entities are never altered (no typo, no case change): the model must copy them exactly.
"""

from __future__ import annotations

import random
import re
from functools import cache
from typing import Any

from world import casual, entities, phrasebook
from world.templates import INSTRUCTIONS

PHRASINGS = ("template", "train", "heldout", "words")
TEMPLATE_SHARE = 0.2    # of training instructions that keep an old template
LOWER_RATE = 0.08       # the words (never the entities) all in lower case
TYPO_RATE = 0.04        # one swapped pair of letters in a word of the frame
CASUAL_SHARE = 0.35     # of training instructions (not kept as a template) in everyday wording (casual.py)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
OUTSIDE_KINDS = tuple(phrasebook.OUTSIDE_FRAMES)
PIECE = re.compile(r"(<\w+>|\{\w+\})")


def _check_phrasing(phrasing: str) -> None:
    if phrasing not in PHRASINGS[1:]:
        raise ValueError(f"Unknown phrasing {phrasing!r}; choose one of {', '.join(PHRASINGS)}.")


# -- words and topics ------------------------------------------------------------------------
def family_words(family: str, phrasing: str) -> tuple[str, ...]:
    if phrasing == "words" and family in phrasebook.HELDOUT_WORDS:
        return phrasebook.HELDOUT_WORDS[family]
    return phrasebook.WORDS[family]


def families_in(pattern: str) -> set[str]:
    return {p[1:-1] for p in PIECE.findall(pattern) if p.startswith("<")}


TOPICS = {"country": phrasebook.COUNTRIES, "city": phrasebook.CITIES, "book": phrasebook.BOOKS,
          "science": phrasebook.SCIENCES}


@cache
def topic_pool(kind: str, split: str) -> tuple[str, ...]:
    """Outside-the-world topics of one split, by the entities' hash rule."""
    return tuple(v for v in TOPICS[kind] if entities.split_of(kind, v) == split)


def outside_slots(rng: random.Random, split: str) -> dict[str, str]:
    return {kind: rng.choice(topic_pool(kind, split)) for kind in TOPICS}


# -- slot surface forms ----------------------------------------------------------------------
def number(n: int, rng: random.Random) -> str:
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) and rng.random() < 0.4 else str(n)


def money(amount: Any, rng: random.Random) -> str:
    return rng.choice((f"${amount}", f"${amount}", f"{amount} dollars", f"{amount}", f"USD {amount}"))


def _item(slots: dict[str, Any], rng: random.Random) -> str:
    color, style, qty = slots["color"], entities.style_said(slots["style"], rng), slots["qty"]
    if qty == 1:
        return rng.choice((f"a {color} {style}", f"one {color} {style}", f"a single {color} {style}"))
    count, styles = number(qty, rng), entities.plural(style)
    return rng.choice((f"{count} {color} {styles}", f"{count} {color} {styles}", f"{color} {styles} x{qty}",
                       f"{count} of the {color} {styles}", f"{count} {styles} in {color}"))


def _details(slots: dict[str, Any], rng: random.Random) -> str:
    """The guest's details that the task gives (missing-information tasks leave one out)."""
    shown = [k for k in ("name", "email", "address") if k in slots and k != slots.get("missing")]
    labels = {"name": ("name", "name", "I'm"), "email": ("email", "e-mail", "mail"),
              "address": ("address", "ship to", "deliver to")}
    sep, colon = rng.choice((", ", ", ", "; ", " / ")), rng.choice((" ", ": "))
    if rng.random() < 0.35:
        return sep.join(slots[k] for k in shown)
    out = []
    for k in shown:
        label = rng.choice(labels[k])
        out.append(f"I'm {slots[k]}" if label == "I'm" else f"{label}{colon}{slots[k]}")
    return sep.join(out)


def _amounts(values: list[Any], rng: random.Random) -> str:
    form = rng.randrange(5)
    shown = [f"${v}" for v in values] if form == 2 else [str(v) for v in values]
    if form == 1:
        return " + ".join(shown)
    if form == 3:
        return "; ".join(shown)
    if form == 4:
        return ", ".join(shown)
    return ", ".join(shown[:-1]) + f" and {shown[-1]}"


def _who(slots: dict[str, Any], rng: random.Random, phrasing: str) -> str:
    if slots.get("by_name"):
        return slots["name"]
    noun = rng.choice(family_words("customer", phrasing))
    return rng.choice((f"{noun} {slots['customer_id']}", slots["customer_id"], f"customer {slots['customer_id']}"))


def _which(slots: dict[str, Any], rng: random.Random, phrasing: str) -> str:
    status = slots.get("status")
    return f"{rng.choice(family_words(status, phrasing))} " if status else ""


def slot_text(key: str, slots: dict[str, Any], rng: random.Random, phrasing: str) -> str:
    """One entity or number as the user writes it."""
    if key == "item":
        return _item(slots, rng)
    if key == "styles":
        return entities.plural(entities.style_said(slots["style"], rng))
    if key == "sizep":
        return rng.choice(("size {}", "in size {}", "in {}", "in a size {}", "size {}")).format(slots["size"])
    if key == "amount":
        return money(slots["amount"], rng)
    if key == "amounts":
        return _amounts(slots["amounts"], rng)
    if key == "details":
        return _details(slots, rng)
    if key == "who":
        return _who(slots, rng, phrasing)
    if key == "which":
        return _which(slots, rng, phrasing)
    return str(slots[key])


# -- rendering -------------------------------------------------------------------------------
def render(pattern: str, slots: dict[str, Any], rng: random.Random, phrasing: str) -> list[tuple[str, bool]]:
    """A pattern as pieces (text, is_entity); `<family>` picks a word, `{slot}` a surface form."""
    pieces = []
    for part in PIECE.split(pattern):
        if part.startswith("<"):
            pieces.append((rng.choice(family_words(part[1:-1], phrasing)), False))
        elif part.startswith("{"):
            # {which} is words (a status, or nothing), not an entity
            text = slot_text(part[1:-1], slots, rng, phrasing)
            if text:
                pieces.append((text, part != "{which}"))
        elif part:
            pieces.append((part, False))
    return pieces


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def surface(pieces: list[tuple[str, bool]], rng: random.Random, noise: bool = True) -> str:
    """Join the pieces: capitalise sentence starts, then (noise) lower-case the words or put a
    typo in one, never in an entity."""
    out: list[list[Any]] = []
    text = ""
    for piece, entity in pieces:
        starts = not text.strip() or (text.endswith(" ") and text.rstrip()[-1] in ".?!")
        if not entity and starts and piece[:1].isalpha():
            piece = piece[0].upper() + piece[1:]
        out.append([piece, entity])
        text += piece
    if noise and rng.random() < LOWER_RATE:
        for part in out:
            if not part[1]:
                part[0] = part[0].lower()
    if noise and rng.random() < TYPO_RATE:
        words = [(i, word) for i, part in enumerate(out) if not part[1]
                 for word in re.finditer(r"[A-Za-z]{5,}", part[0])]
        if words:   # (a typo that makes a number word, "there" -> "three", is undone below)
            i, word = rng.choice(words)
            part = out[i]
            typo = _typo(word.group(), rng)
            if typo.lower() not in NUMBER_WORDS:
                part[0] = part[0][:word.start()] + typo + part[0][word.end():]
    return _articles("".join(part[0] for part in out))


def _articles(text: str) -> str:
    """"an bill" -> "a bill", "a invoice" -> "an invoice" (the word after comes from a family)."""
    text = re.sub(r"\b([Aa])n (?=[b-df-hj-np-tv-z])", r"\1 ", text)
    return re.sub(r"\b([Aa]) (?=[aeio][a-z])", r"\1n ", text)


def _choose(options: list[Any], phrasing: str, pattern_of) -> list[Any]:
    """Training or held-out options; for `words`, the training ones that have a family with a
    held-out synonym (all of them when none has)."""
    options = [o for o in options if o[2] == (phrasing == "heldout")]
    if phrasing == "words":
        return [o for o in options if families_in(pattern_of(o)) & set(phrasebook.HELDOUT_WORDS)] or options
    return options


def _with_fillers(pieces: list[tuple[str, bool]], rng: random.Random) -> list[tuple[str, bool]]:
    """An opener and a closer around the pieces. After an opener the first word is lower case;
    surface() capitalises it again where the opener ends a sentence ("Hi there! Add ...")."""
    opener, closer = rng.choice(phrasebook.OPENERS), rng.choice(phrasebook.CLOSERS)
    first, entity = pieces[0]
    if opener and not entity and not first.startswith(("I ", "I'")):
        pieces = [(first[0].lower() + first[1:], False)] + pieces[1:]
    if closer and pieces[-1][0][-1:] not in ".?!":
        closer = "." + closer
    return ([(opener, False)] if opener else []) + pieces + ([(closer, False)] if closer else [])


def instruction(key: str, slots: dict[str, Any], phrasing: str, rng: random.Random,
                noise: bool = True) -> tuple[str, str]:
    """(instruction, frame id) for a one-goal intent's template key (tasks.template_key)."""
    _check_phrasing(phrasing)
    if phrasing == "train" and rng.random() < TEMPLATE_SHARE:
        template_index = rng.randrange(len(INSTRUCTIONS[key]))
        values = {**slots, "amounts": slots.get("amounts_text", "")}
        return INSTRUCTIONS[key][template_index].format(**values), f"template.{key}.{template_index}"
    group = phrasebook.GROUP_OF[key]
    frames = [(f"{group}.{i}", f[2], f[3]) for i, f in enumerate(phrasebook.FRAMES[group])]
    frame_id, pattern, _ = rng.choice(_choose(frames, phrasing, lambda o: o[1]))
    return _everyday(sentence(pattern, slots, rng, phrasing, noise), frame_id, group, slots, phrasing, noise)


def _everyday(text: str, frame_id: str, group: str, slots: dict[str, Any], phrasing: str, noise: bool,
              fillers: bool = True) -> tuple[str, str]:
    """The training wording's everyday sentence (casual.py) in place of a frame's, CASUAL_SHARE of
    the time. It is drawn on a stream of its own seeded by the frame's sentence, so the main
    stream, and every set drawn from it, stays as it was: the hand-written set's values come from
    scenarios drawn after a discarded training wording."""
    everyday = casual.frames_for(group, slots) if phrasing == "train" else ()
    if everyday:
        side = random.Random(f"casual:{text}")
        if side.random() < CASUAL_SHARE:
            i = side.randrange(len(everyday))
            return sentence(everyday[i], slots, side, phrasing, noise, fillers), f"{group}.casual.{i}"
    return text, frame_id


def sentence(pattern: str, slots: dict[str, Any], rng: random.Random, phrasing: str, noise: bool = True,
             fillers: bool = True) -> str:
    """One pattern as a request: its words and values, an opener and a closer, the noise."""
    pieces = render(pattern, slots, rng, phrasing)
    return surface(_with_fillers(pieces, rng) if fillers else pieces, rng, noise)


def two_goal_instruction(intents: list[str], slots: dict[str, Any], phrasing: str, rng: random.Random,
                         noise: bool = True) -> tuple[str, str]:
    """(instruction, frame id): one clause per goal, in the order the goals are to be done, joined."""
    _check_phrasing(phrasing)
    joiners = [(f"join.{i}", j, h) for i, (j, h) in enumerate(phrasebook.JOINERS)]
    joiner_id, joiner, _ = rng.choice([o for o in joiners if o[2] == (phrasing == "heldout")])
    ids, parts = [joiner_id], []
    for intent in intents:
        group = phrasebook.CLAUSE_OF[intent]
        clauses = [(f"clause.{group}.{i}", c, h) for i, (c, h) in enumerate(phrasebook.CLAUSES[group])]
        clause_id, clause, _ = rng.choice(_choose(clauses, phrasing, lambda o: o[1]))
        ids.append(clause_id)
        parts.append(render(clause, slots, rng, phrasing))
    pieces: list[tuple[str, bool]] = []
    for part in PIECE.split(joiner):
        if part in ("{A}", "{B}"):
            pieces += parts[part == "{B}"]
        elif part:
            pieces.append((part, False))
    return surface(_with_fillers(pieces, rng), rng, noise), "+".join(ids)


def outside_instruction(kind: str, slots: dict[str, Any], phrasing: str, rng: random.Random,
                        noise: bool = True) -> tuple[str, str]:
    """(instruction, frame id) for a request outside the world; greetings take no opener.
    Only greetings have a word with a held-out synonym, so the other kinds take their
    held-out frames in the `words` phrasing."""
    _check_phrasing(phrasing)
    frames = [(f"outside.{kind}.{i}", f, h) for i, (f, h) in enumerate(phrasebook.OUTSIDE_FRAMES[kind])]
    options = _choose(frames, phrasing, lambda o: o[1])
    if phrasing == "words" and not any(families_in(o[1]) & set(phrasebook.HELDOUT_WORDS) for o in options):
        options = _choose(frames, "heldout", lambda o: o[1])
    frame_id, frame, _ = rng.choice(options)
    pieces = render(frame, slots, rng, phrasing)
    if kind == "greeting":
        closer = rng.choice(phrasebook.CLOSERS)
        text = surface(pieces + ([(closer, False)] if closer else []), rng, noise)
        return _everyday(text, frame_id, f"outside.{kind}", slots, phrasing, noise, fillers=False)
    return _everyday(surface(_with_fillers(pieces, rng), rng, noise), frame_id, f"outside.{kind}", slots,
                     phrasing, noise)


# -- what the tests look for -----------------------------------------------------------------
# a style is a word, or a T-shirt as people write it ("T-shirt", "t shirt": entities.STYLE_SPELLINGS)
SLOT_PATTERNS = {"name": r"[A-Za-z']+ [A-Za-z']+", "course": r"[A-Z]{3}\d", "activity": r"A\d{3}",
                 "email": r"\S+@\S+", "size": r"(?:XS|S|M|L|XL)", "color": r"[a-z]+",
                 "style": r"(?:t[- ]?shirt|[a-z]+)", "styles": r"(?:t[- ]?shirts|[a-z]+)",
                 "country": r"[A-Z][a-z]+", "city": r"[A-Z][a-z]+"}


def frame_regex(pattern: str) -> str:
    """A regex that matches any rendering of a pattern (words of every split, any entity)."""
    out = []
    for part in PIECE.split(pattern):
        if part.startswith("<"):
            family = part[1:-1]
            words = phrasebook.WORDS[family] + phrasebook.HELDOUT_WORDS.get(family, ())
            out.append("(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")")
        elif part.startswith("{"):
            out.append(f"(?:{SLOT_PATTERNS.get(part[1:-1], '.+?')})")
        elif part:
            out.append(re.escape(part))
    return "".join(out)


def heldout_patterns() -> list[tuple[str, str]]:
    """(id, pattern) of every held-out frame, clause, joiner and outside frame."""
    out = [(f"{g}.{i}", f[2]) for g, frames in phrasebook.FRAMES.items() for i, f in enumerate(frames) if f[3]]
    out += [(f"clause.{g}.{i}", c) for g, cs in phrasebook.CLAUSES.items() for i, (c, h) in enumerate(cs) if h]
    out += [(f"join.{i}", j) for i, (j, h) in enumerate(phrasebook.JOINERS) if h]
    out += [(f"outside.{k}.{i}", f) for k, fs in phrasebook.OUTSIDE_FRAMES.items() for i, (f, h) in enumerate(fs) if h]
    return out


@cache
def heldout_matcher() -> re.Pattern:
    """Matches a whole instruction built on a held-out frame, fillers around it allowed.
    Joiners and clauses match anywhere (they are parts of a sentence)."""
    openers_closers = phrasebook.OPENERS + phrasebook.CLOSERS
    fillers = "(?:" + "|".join(re.escape(f.strip()) for f in openers_closers if f.strip()) + r")?\W*"
    whole, parts = [], []
    for pid, pattern in heldout_patterns():
        body = frame_regex(pattern)
        if pid.startswith(("clause.", "join.")):
            parts.append(body.replace(r"(?:.+?)", r"(?:.{1,80}?)"))
        else:
            whole.append(f"^\\W*{fillers}{body}\\W*{fillers}$")
    return re.compile("|".join(whole + parts), re.IGNORECASE)


def heldout_word_matcher() -> re.Pattern:
    words = [w for ws in phrasebook.HELDOUT_WORDS.values() for w in ws]
    return re.compile(r"(?<![A-Za-z])(?:" + "|".join(re.escape(w) for w in words) + r")s?(?![A-Za-z])", re.IGNORECASE)
