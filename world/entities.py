"""Value pools of the agent world and their fixed train / held-out split.

Every entity value (full names, emails, addresses, product / customer / invoice / order /
activity ids, course codes, colour x size combinations) belongs to exactly one split, decided
by a hash of the value itself: one in five is held out. So the split never depends on the
order of generation, and a held-out task can only use values that no training transcript
contains. Vocabulary words (styles, colours, sizes, statuses, descriptions, skills) are
shared: the model must know them; it must copy the values.
"""

from __future__ import annotations

import hashlib
import random
import re
from functools import cache

from world.phrasebook import BOOKS, CITIES, COUNTRIES

SPLITS = ("train", "heldout")
HELDOUT_ONE_IN = 5

FIRST_NAMES = (
    "Ana", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jade", "Kai", "Lena",
    "Milo", "Nora", "Omar", "Pia", "Quin", "Rosa", "Sami", "Tess", "Uma", "Vik", "Wren",
    "Xena", "Yuri", "Zoe", "Alma", "Bram", "Cleo", "Dina", "Emil", "Finn", "Gita", "Hugo",
    "Iris", "Jon", "Kira", "Leo", "Mara", "Nils", "Olga", "Paul", "Rhea", "Saul", "Tara",
    "Ugo", "Vera", "Walt", "Yara", "Zeno",
)
LAST_NAMES = (
    "Diaz", "Kim", "Novak", "Berg", "Costa", "Hale", "Ito", "Jansen", "Khan", "Lund",
    "Moreau", "Nagy", "Ortiz", "Park", "Quist", "Reyes", "Sato", "Toth", "Ueda", "Vance",
    "Weiss", "Young", "Zhou", "Abbott", "Brandt", "Castro", "Dalton", "Egan", "Fox", "Grant",
    "Horvat", "Ivers", "Jovic", "Keller", "Lopez", "Marsh", "Nolan", "Olsen", "Price", "Rossi",
)
EMAIL_DOMAINS = ("mail.io", "post.net", "inbox.org", "web.co")
STREETS = (
    "Oak", "Elm", "Pine", "Maple", "Cedar", "Birch", "Lake", "Hill", "Dale", "Mill",
    "River", "King", "Queen", "Church", "Market", "Bridge", "Station", "Garden", "Forest", "Castle",
)
STREET_KINDS = ("St", "Rd", "Ave", "Ln")
# Streets that only training addresses use, so most training addresses are one-offs and their
# suffix can only be copied, never recalled. With the 20 shared streets alone, a held-out
# "62 Elm Ln" is the one suffix that training never shows after "62 Elm". (Sprout's wrong
# suffixes turned out to have another cause: it never learned to copy them; models/README.md.)
TRAIN_ONLY_STREETS = (
    "Willow", "Aspen", "Harbor", "Meadow", "Sunset", "Valley", "Spring", "Rose", "Ivy", "Cherry",
    "Walnut", "Chestnut", "Poplar", "Spruce", "Laurel", "Summit", "Canal", "Orchard", "Quarry", "Harvest",
    "Beacon", "Copper", "Falcon", "Granite", "Juniper", "Lantern", "Marble", "Nutmeg", "Osprey", "Pebble",
)

STYLES = ("hoodie", "jacket", "sweater", "shirt", "dress", "skirt", "coat", "cap", "belt", "vest", "t-shirt")
# The styles a random world or scenario draws from: the ten the committed task sets were made
# with, so every seeded world and set stays as it was. T-shirts (issue 49) enter a world through a
# task that names its style (world.tasks.build_task's `style`, the T-shirt check set) or a setup
# that stocks every style (the Chat's world, app/conversation_world.py).
DRAWN_STYLES = STYLES[:10]
# How else people write a style. The style's own word is the catalogue's and the search's; the
# search reads these spellings as it (world.tools), and requests in the grammar's phrasings and in
# the templates say them (style_said). "t shirt" must not find shirts, so spellings are matched as
# phrases before the query is split into words.
STYLE_SPELLINGS = {"t-shirt": ("T-shirt", "tee", "t shirt", "tshirt")}
# Clothes the shop never sells, for requests people make anyway ("a navy raincoat"): the search
# finds nothing and the answer says so. Values like any other, so some are held out; each takes
# "a" and a plain "s" plural.
UNKNOWN_STYLES = ("raincoat", "blazer", "cardigan", "tie", "glove", "sock", "boot", "sneaker", "sandal",
                  "poncho", "tunic", "parka", "jumper", "bikini", "tracksuit", "kimono", "swimsuit",
                  "bathrobe", "blouse", "scarf", "tuxedo", "pyjama", "leotard", "gown", "mitten")
PLURALS = {"dress": "dresses"}  # every other style takes an "s"
COLORS = ("red", "blue", "green", "black", "white", "grey", "pink", "navy")
SIZES = ("XS", "S", "M", "L", "XL")

INVOICE_STATUSES = ("paid", "unpaid")
ACTIVITY_STATUSES = ("pending", "running", "done", "failed", "paused")
DESCRIPTIONS = (
    "web design", "consulting", "repairs", "hosting", "training", "catering",
    "cleaning", "translation", "audit", "photography", "delivery", "printing",
)
SUBJECTS = ("BIO", "ART", "MAT", "HIS", "CHE", "PHY", "ECO", "LAW", "MUS", "GEO", "LIT", "DAT")

# Document tasks (resume / HTML page).
ROLES = ("Data Analyst", "Designer", "Engineer", "Accountant", "Teacher", "Nurse", "Chef", "Sales Lead")
COMPANIES = ("Acme", "Globex", "Initech", "Umbra", "Vertex", "Nimbus", "Orbit", "Pinecone")
SKILLS = ("Python", "SQL", "Excel", "Figma", "Java", "Sales", "Writing", "Cooking", "Teaching", "Linux", "Statistics")
PAGE_TOPICS = ("Spring Sale", "New Hoodies", "Our Courses", "Opening Hours", "Contact Us", "Gift Cards", "Team News")
PAGE_TEXTS = (
    "Everything ships in two days.", "Sign up today.", "We are open every weekday.",
    "Prices include tax.", "Ask us anything.", "New styles every week.",
)
LINKS = (("/cart", "View cart"), ("/shop", "Shop now"), ("/courses", "See courses"), ("/contact", "Write to us"))


# Made-up names and streets, for training transcripts only. Real names (50 x 40) and 20 streets
# are few enough to memorise, and the AR twin did: it recognised which known street a prompt
# named instead of copying it, so a street it had not seen came out as another one (p of the
# right second sub-word ~ 0) and the suffix after a street stayed at chance (p ~ 0.25). Made-up
# words share no whole word with any pool, so only copying token by token from the prompt gets
# them right; held-out tasks keep the real pools.
MADE_UP_SHARE = 0.5                  # of training names, addresses, course codes and unknown clothes
# Clothes the shop never sells, made up too (corpus v17): with 20 real words to learn, stage 7's
# BD twin answered all 7 of the hand-written set's requests for a held-out one ("tuxedo",
# "tracksuit") about a "t-shirt", a "tie" or a misspelt word, as it named streets before.
MADE_UP_KINDS = ("name", "address", "course", "unknown_style")
# A made-up course code's letters: consonants only, so no code spells a word or a subject (every
# subject has a vowel). The 108 subject codes alone let a model recall a code it has seen rather
# than copy the one it is given (stage 2's conversations miscopied names and codes in 15 requests
# per twin); codes it can never have seen before make copying the only way to be right.
_CODE_LETTERS = "BCDFGHJKLMNPRSTVWXZ"
# Every letter can open a made-up word: a name's first letter is one token without a space
# ("F" of "Fay" inside quotes) copied from a different token with one ("ĠF" in the prompt), and
# the model only learns that pairing for the letters training shows there. Onsets without a
# vowel-first or c/q/x/y word left "Iris" to come out as "Oris".
_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "j", "k", "kl", "l", "m", "n", "p", "pr",
           "r", "s", "sk", "st", "t", "tr", "v", "w", "z", "", "", "c", "ch", "sh", "qu", "x", "y")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ee", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "th", "nd")


@cache
def _pool_words() -> frozenset[str]:
    """Words a made-up value may not be: the pools', and the outside-the-world topics' (a
    made-up "Lima" would put a held-out city into training text)."""
    topics = tuple(w for v in COUNTRIES + CITIES + BOOKS for w in v.split())
    return frozenset(FIRST_NAMES + LAST_NAMES + STREETS + TRAIN_ONLY_STREETS + topics)


@cache
def _shop_words() -> frozenset[str]:
    """What a made-up piece of clothing may not be: a word the shop's requests use for a value."""
    return frozenset(w for v in STYLES + UNKNOWN_STYLES + COLORS + SIZES + DESCRIPTIONS for w in v.lower().split())


def made_up_word(rng: random.Random) -> str:
    """A pronounceable word of 1-3 syllables that is no pool word, e.g. "Brouthek"."""
    while True:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                       for _ in range(rng.choice((1, 2, 2, 3)))).capitalize()
        if len(word) >= 3 and word not in _pool_words():
            return word


def made_up_value(rng: random.Random, kind: str) -> str:
    if kind == "name":
        return f"{made_up_word(rng)} {made_up_word(rng)}"
    if kind == "address":
        return f"{rng.randrange(1, 100)} {made_up_word(rng)} {rng.choice(STREET_KINDS)}"
    if kind == "course":  # e.g. KRT4, the grammar's slot pattern [A-Z]{3}\d
        return "".join(rng.choice(_CODE_LETTERS) for _ in range(3)) + str(rng.randrange(1, 10))
    if kind == "unknown_style":  # e.g. "brouthek": lower case, as the styles are, and none of the shop's words
        while (word := made_up_word(rng).lower()) in _shop_words():
            pass
        return word
    raise KeyError(f"No made-up values of kind {kind!r}.")


def is_made_up(kind: str, value: str) -> bool:
    if kind == "name":
        first, _, last = value.partition(" ")
        return first not in FIRST_NAMES or last not in LAST_NAMES
    if kind == "address":
        return street_of(value) not in STREETS + TRAIN_ONLY_STREETS
    if kind == "course":
        return value[:3] not in SUBJECTS
    if kind == "unknown_style":
        return value not in UNKNOWN_STYLES
    return False


def split_of(kind: str, value: str) -> str:
    """The split a value belongs to: a fixed hash, one in HELDOUT_ONE_IN held out; made-up
    values and addresses on train-only streets are training values."""
    if (kind == "address" and street_of(value) in TRAIN_ONLY_STREETS) or is_made_up(kind, value):
        return "train"
    digest = hashlib.sha256(f"{kind}:{value}".encode()).digest()
    return "heldout" if digest[0] % HELDOUT_ONE_IN == 0 else "train"


def street_of(address: str) -> str:
    """"62 Elm Ln" -> "Elm"."""
    return address.split(" ")[1]


def plural(style: str) -> str:
    return PLURALS.get(style, style + "s")


def style_said(style: str, rng: random.Random) -> str:
    """The style as a request writes it: its own word, or one of its spellings. A style without
    spellings draws nothing, so the random streams of requests about the other styles stay as
    they were before T-shirts came."""
    spellings = STYLE_SPELLINGS.get(style)
    return rng.choice((style, *spellings)) if spellings else style


def _spelling_pattern() -> re.Pattern:
    spelled = sorted({w for words in STYLE_SPELLINGS.values() for w in words}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for w in spelled) + r")(s?)(?![\w-])", re.IGNORECASE)


_SPELLED = _spelling_pattern()
_STYLE_OF = {w.lower(): style for style, words in STYLE_SPELLINGS.items() for w in words}


def in_catalogue_words(text: str) -> str:
    """`text` lower-cased, each spelling of a style replaced by the style's own word, plurals
    kept: "Black Tees" -> "black t-shirts", "a t shirt" -> "a t-shirt"."""
    return _SPELLED.sub(lambda m: _STYLE_OF[m.group(1).lower()] + m.group(2).lower(), text).lower()


def email_for(name: str) -> str:
    """One email per name (so a held-out name means a held-out email)."""
    first, last = name.lower().split(" ")
    domain = EMAIL_DOMAINS[hashlib.sha256(name.encode()).digest()[1] % len(EMAIL_DOMAINS)]
    return f"{first}.{last}@{domain}"


def _all_values(kind: str) -> tuple[str, ...]:
    if kind == "name":
        return tuple(f"{f} {la}" for f in FIRST_NAMES for la in LAST_NAMES)
    if kind == "address":
        return tuple(f"{n} {s} {k}" for n in range(1, 100) for s in STREETS + TRAIN_ONLY_STREETS for k in STREET_KINDS)
    if kind == "product":  # P + digit + letter + digit, e.g. P3K7
        letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
        return tuple(f"P{a}{b}{c}" for a in range(1, 10) for b in letters for c in range(10))
    if kind in ("customer", "invoice", "order", "activity"):  # C417, V204, O512, A318
        prefix = {"customer": "C", "invoice": "V", "order": "O", "activity": "A"}[kind]
        return tuple(f"{prefix}{n}" for n in range(100, 1000))
    if kind == "course":  # BIO2
        return tuple(f"{s}{n}" for s in SUBJECTS for n in range(1, 10))
    if kind == "combo":  # colour|size
        return tuple(f"{c}|{s}" for c in COLORS for s in SIZES)
    if kind == "unknown_style":
        return UNKNOWN_STYLES
    raise KeyError(f"Unknown entity kind {kind!r}.")


ENTITY_KINDS = ("name", "address", "product", "customer", "invoice", "order", "activity", "course", "combo",
                "unknown_style")


@cache
def pool(kind: str, split: str) -> tuple[str, ...]:
    """Every value of one kind in one split, in a fixed order."""
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose train or heldout.")
    return tuple(v for v in _all_values(kind) if split_of(kind, v) == split)


@cache
def sizes_for(color: str, split: str) -> tuple[str, ...]:
    """Sizes a product of this colour may carry in a world of this split."""
    if split == "heldout":
        return SIZES
    return tuple(s for s in SIZES if split_of("combo", f"{color}|{s}") == "train")


def heldout_values() -> dict[str, tuple[str, ...]]:
    """Every held-out value by kind, emails included (what the leak test looks for)."""
    out = {kind: pool(kind, "heldout") for kind in ENTITY_KINDS}
    out["email"] = tuple(email_for(n) for n in out["name"])
    return out


def pick(rng: random.Random, kind: str, split: str, avoid: set[str] | frozenset[str] = frozenset()) -> str:
    """A random value of a kind from a split, not in `avoid`; in the training split names,
    addresses and course codes are made up MADE_UP_SHARE of the time."""
    values = pool(kind, split)
    while True:
        if split == "train" and kind in MADE_UP_KINDS and rng.random() < MADE_UP_SHARE:
            value = made_up_value(rng, kind)
        else:
            value = values[rng.randrange(len(values))]
        if value not in avoid:
            return value
