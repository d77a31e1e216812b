"""Transcripts -> training batches for both twins.

Loss falls only on assistant spans (each includes its closing <|eos|>). Batches are built
from length-sorted buckets under a token budget, so padding costs little.

BD batches follow BD3-LM with one change that makes inference and training see the same
thing: noisy blocks start where an assistant turn starts (not on a fixed grid), and the last
block of a turn is filled with <|eos|>, exactly as the sampler will meet it.

The noise range must reach t = 1: every block is decoded starting from all masks, so a
schedule clipped below 1 never shows the model the state its first denoise step sees.
With complementary pairs (as in Fast-dLLM v2) each block appears twice, masked by m and by
not-m, so every answer token is a target once per pair (arguments included) and t ~ U[0.5, 1]
on the first copy covers [0, 0.5] on the second. The clean stream is shared by both copies,
so the pair costs far less than two batches.
"""

from __future__ import annotations

import bisect
import random
import re
from dataclasses import dataclass, field

import torch

from world.entities import COLORS
from world.format import assistant_spans

# The decision most failed shop tasks turn on: which product id a call copies out of a search
# result (the row whose colour and size match; training.probe scores it). It is a few
# tokens of a ~40-token turn, so a plain mean spends little on it; `focus_weight` scales its
# loss. It leaves the tool names alone: weighting them too pushed Sprout-BD to answer "not
# available" where it should add (models/README.md).
FOCUS = re.compile(r'"product_id":"([^"]+)"')
# A search result row (world.tools.search_products): its colour, size and id, whose tokens
# `Example.row_colours` marks with the colour for the read-out loss (training.readout).
ROW = re.compile(r'"color":"(\w+)","size":"([^"]+)","id":"([^"]+)"')
# The search call a result answers: the colour and size asked for (either may be absent), which
# `Example.row_matches` compares with each row's.
SEARCH = re.compile(r'"name":"search_products","arguments":(\{[^{}]*\})')
ASKED = re.compile(r'"(color|size)":"([^"]+)"')
# The choice right after a search result: the name of the next call (add_to_cart, or finish with
# "not available"). `Example.decisions` marks its tokens for `decision_weight`. Why: the one
# token that decides gets one token's share of the loss, and with one matching row among near
# misses Sprout-BD answered "not available" although its rows carried whether they match
# (what the weight changed: models/README.md, "the row-match read-out and the decision weight").
DECISION = re.compile(r'<tool_response>\[\{"color"[^<]*</tool_response>\s*<\|assistant\|><tool_call>\{"name":"(\w+)"')


@dataclass
class Example:
    ids: list[int]
    spans: list[tuple[int, int]]      # token [start, end) of each assistant turn, eos included
    focus: list[int] = field(default_factory=list)   # token positions of FOCUS values in those turns
    row_colours: list[tuple[int, int]] = field(default_factory=list)   # (token position, COLORS index) of row ids
    wanted_colours: list[tuple[int, int]] = field(default_factory=list)   # (position, COLORS index) of copied ids
    row_matches: list[tuple[int, int]] = field(default_factory=list)   # (position, 1 if asked for) of row ids
    decisions: list[int] = field(default_factory=list)   # first token of each DECISION name in trained turns


def _tokens_inside(starts: list[int], ends: list[int], offsets, char_start: int, char_end: int) -> tuple[int, int]:
    """Token [lo, hi) lying wholly inside characters [char_start, char_end), empty tokens at the
    edges left out."""
    lo, hi = bisect.bisect_left(starts, char_start), bisect.bisect_right(ends, char_end)
    while lo < hi and offsets[lo][0] == offsets[lo][1]:
        lo += 1
    while hi > lo and offsets[hi - 1][0] == offsets[hi - 1][1]:
        hi -= 1
    return lo, hi


def _in_spans(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(lo <= position < hi for lo, hi in spans)


def encode_texts(texts: list[str], tokenizer, untrained: list[list[int]] | None = None) -> list[Example]:
    """Token ids, the assistant spans that carry loss, the FOCUS tokens in them, the search
    rows' id tokens with their colours, and the copied ids' tokens with the colour asked for;
    untrained[k] lists the assistant turns of texts[k] (by index) that stay context only (a
    detour's wrong call)."""
    out = []
    encs = tokenizer(texts, return_offsets_mapping=True, add_special_tokens=False)   # batched, in Rust
    for k, (text, ids, offsets) in enumerate(zip(texts, encs["input_ids"], encs["offset_mapping"])):
        starts, ends = [first for first, _ in offsets], [last for _, last in offsets]   # both non-decreasing
        skip = set(untrained[k]) if untrained else set()
        spans, focus = [], []
        for turn, (char_start, char_end) in enumerate(assistant_spans(text)):
            if turn in skip:
                continue
            lo, hi = _tokens_inside(starts, ends, offsets, char_start, char_end)
            if lo < hi:
                spans.append((lo, hi))
            for match in FOCUS.finditer(text, char_start, char_end):
                first, stop = _tokens_inside(starts, ends, offsets, match.start(1), match.end(1))
                focus.extend(range(first, stop))
        decisions = []   # the name's first token decides it ("add" | "finish"); the rest follows
        for match in DECISION.finditer(text):
            first, _ = _tokens_inside(starts, ends, offsets, match.start(1), match.end(1))
            if _in_spans(first, spans):
                decisions.append(first)
        row_colours, row_matches, colour_of = [], [], {}
        searches = [(match.end(), dict(ASKED.findall(match.group(1)))) for match in SEARCH.finditer(text)]
        for match in ROW.finditer(text):
            if match.group(1) in COLORS:
                first, stop = _tokens_inside(starts, ends, offsets, match.start(3), match.end(3))
                row_colours.extend((position, COLORS.index(match.group(1))) for position in range(first, stop))
                colour_of.setdefault(match.group(3), (match.start(), COLORS.index(match.group(1))))   # first listing
                asked = [want for end, want in searches if end < match.start()]   # the latest search before it
                if asked:
                    row = {"color": match.group(1), "size": match.group(2)}
                    hit = all(asked[-1].get(k, v) == v for k, v in row.items())
                    row_matches.extend((position, int(hit)) for position in range(first, stop))
        wanted_colours = []
        for match in FOCUS.finditer(text):   # a copied id listed before: its row's colour, the one asked for
            at, colour = colour_of.get(match.group(1), (len(text), -1))
            if at < match.start():
                first, stop = _tokens_inside(starts, ends, offsets, match.start(1), match.end(1))
                wanted_colours.extend((position, colour) for position in range(first, stop)
                                      if _in_spans(position, spans))
        out.append(Example(ids=ids, spans=spans, focus=focus, row_colours=row_colours,
                           wanted_colours=wanted_colours, row_matches=row_matches, decisions=decisions))
    return out


# BD batches sort by length in steps of this many tokens, then by reply tokens (see `buckets`).
REPLY_SORT_GRAIN = 16


def reply_tokens(ex: Example) -> int:
    return sum(end - start for start, end in ex.spans)


def buckets(examples: list[Example], max_tokens: int, rng: random.Random,
            by_replies: bool = False) -> list[list[Example]]:
    """Group length-sorted examples into batches of at most `max_tokens` padded tokens; shuffled.
    by_replies (the BD twin): sort by length in steps of REPLY_SORT_GRAIN tokens, then by reply
    tokens. A BD batch pads every row to the row with most noisy blocks, and rows of one length
    differ in how much of them is reply (a conversation against a single request): on the
    conversation corpus the plain sort ran 2.44 rows (clean + noisy) per real token, this one 2.32
    against a floor of 2.15 (models/README.md)."""
    if by_replies:
        order = sorted(examples, key=lambda ex: (len(ex.ids) // REPLY_SORT_GRAIN, reply_tokens(ex)))
    else:
        order = sorted(examples, key=lambda ex: len(ex.ids))
    batches, cur, longest = [], [], 0
    for ex in order:
        if cur and max(longest, len(ex.ids)) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(ex)
        longest = max(longest, len(ex.ids))
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def pad_ids(examples: list[Example], pad_id: int) -> torch.Tensor:
    T = max(len(ex.ids) for ex in examples)
    return torch.tensor([ex.ids + [pad_id] * (T - len(ex.ids)) for ex in examples])   # (B, T)


def ar_batch(examples: list[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ids (B, T) and next-token targets (B, T), -100 where position t+1 is not assistant text."""
    ids = pad_ids(examples, pad_id)
    targets = torch.full_like(ids, -100)
    for b, ex in enumerate(examples):
        for span_start, span_end in ex.spans:
            lo = max(span_start - 1, 0)
            targets[b, lo:span_end - 1] = ids[b, lo + 1:span_end]
    return ids, targets


def weighted_tokens(ex: Example, focus_weight: float, decision_weight: float) -> list[tuple[list[int], float]]:
    """(token positions, loss weight) of the tokens that count more than once: FOCUS ids and
    DECISION names (a weight of 1 leaves its tokens out)."""
    return [(positions, weight) for positions, weight in ((ex.focus, focus_weight), (ex.decisions, decision_weight))
            if positions and weight != 1.0]


def ar_weights(examples: list[Example], length: int, focus_weight: float,
               decision_weight: float = 1.0) -> torch.Tensor:
    """(B, length) loss weights aligned with ar_batch's targets: position t predicts token t+1,
    so it weighs focus_weight where t+1 is a focus token, decision_weight where it is a
    decision token, else 1."""
    weights = torch.ones(len(examples), length)
    for b, ex in enumerate(examples):
        for positions, weight in weighted_tokens(ex, focus_weight, decision_weight):
            weights[b, [p - 1 for p in positions if 0 < p <= length]] = weight
    return weights


@dataclass
class BDBatch:
    clean: torch.Tensor       # (B, T) the clean context
    noisy: torch.Tensor       # (B, NB, C) blocks with masks applied
    starts: torch.Tensor      # (B, NB) position of each block's first token
    targets: torch.Tensor     # (B, NB, C) true ids where masked, else -100
    weights: torch.Tensor     # (B, NB, C) 1/t of the block (the MDLM/BD3 ELBO weight), 1 for
                              # pairs; times focus_weight / decision_weight on those tokens
    n_tokens: int             # target positions in real blocks (the loss denominator)


def bd_batch(examples: list[Example], block_size: int, ids: dict[str, int], noise: tuple[float, float],
             gen: torch.Generator, complementary: bool = False, focus_weight: float = 1.0,
             decision_weight: float = 1.0, shifted_share: float = 0.0) -> BDBatch:
    """Noisy blocks over each assistant turn, masked with a per-block t ~ U[noise].
    complementary: append each block's twin masked where the first is not (blocks j and
    j + NB/2 of a row are a pair); the loss is then the plain mean over all block tokens, since
    1/t would explode on the lightly masked twin and every token already counts once.
    shifted_share: that share of the turns get blocks at another phase: the first block starts
    `lead` in [1, C) tokens before the turn, those context tokens sit in it unmasked and untaught,
    and every later block is shifted with it, so a block may start anywhere in a reply (what a
    decoder whose block starts at its cursor asks of the model, engine/scaffold/diffusion.py)."""
    C, eos, mask = block_size, ids["eos"], ids["mask"]
    clean = pad_ids(examples, ids["pad"])
    per_row = []
    for ex in examples:
        blocks = []
        for span_start, span_end in ex.spans:
            lead = 0
            if shifted_share and float(torch.rand((), generator=gen)) < shifted_share:
                lead = min(int(torch.randint(1, C, (), generator=gen)), span_start)
            first = span_start - lead
            span = ex.ids[first:span_end]
            span = span + [eos] * (-len(span) % C)                   # fill the last block with eos
            blocks += [(first + j, span[j:j + C], lead if j == 0 else 0) for j in range(0, len(span), C)]
        per_row.append(blocks)
    NB = max(1, max(len(b) for b in per_row))
    B = len(examples)
    # one tensor per field from padded nested lists (a tensor per block costs ~5x more)
    truth = torch.tensor([[toks for _, toks, _ in blocks] + [[eos] * C] * (NB - len(blocks)) for blocks in per_row])
    starts = torch.tensor([[start for start, _, _ in blocks] + [0] * (NB - len(blocks)) for blocks in per_row])
    leads = torch.tensor([[lead for _, _, lead in blocks] + [0] * (NB - len(blocks)) for blocks in per_row])
    real = torch.tensor([[True] * len(blocks) + [False] * (NB - len(blocks)) for blocks in per_row])
    lo, hi = noise
    t = lo + (hi - lo) * torch.rand(B, NB, 1, generator=gen)              # per-block noise level
    head = torch.arange(C) < leads[..., None]                              # (B, NB, C) a block's context head
    masked = (torch.rand(B, NB, C, generator=gen) < t) & ~head
    # at least one masked token per block, else the block teaches nothing; never in the head
    # (without shifted blocks the head is empty and the picks are those of a plain randint)
    none = ~masked.any(-1)
    pick = leads + torch.randint(0, C, (B, NB), generator=gen) % (C - leads)
    masked[none, pick[none]] = True
    weights = (1.0 / t).expand(B, NB, C).clone()                          # written per row below
    n_tokens = int(real.sum().item()) * C - int(leads.sum())   # a pair predicts each of these once
    if complementary:
        truth, starts, real, head = truth.repeat(1, 2, 1), starts.repeat(1, 2), real.repeat(1, 2), head.repeat(1, 2, 1)
        masked = torch.cat([masked, ~masked], dim=1)
        weights = torch.ones(B, 2 * NB, C)
    pos = starts[..., None] + torch.arange(C)                               # (B, NB', C) token positions
    for b, ex in enumerate(examples):
        for positions, weight in weighted_tokens(ex, focus_weight, decision_weight):
            marked = torch.isin(pos[b], torch.tensor(positions)) & real[b, :, None]    # (NB', C)
            weights[b] = torch.where(marked, weights[b] * weight, weights[b])
    masked &= real[..., None] & ~head                                       # a block's context head stays clean
    noisy = torch.where(masked, torch.full_like(truth, mask), truth)
    targets = torch.where(masked, truth, torch.full_like(truth, -100))
    return BDBatch(clean, noisy, starts, targets, weights, n_tokens)
