"""The colour read-out losses: rows' colours at their id tokens (clean stream), the colour asked
for at a copied id (clean stream and every noisy block over it); the gradient reaches the model."""

import json
import math
import re

import torch

from tests.sprout.helpers import corpus_texts, special_ids, spell_marks, tiny_sprout, tiny_tokenizer
from training.data import FOCUS, encode_texts
from training.losses import loss_bd
from training.readout import ShopReadout
from world.entities import COLORS


def _shop_batch():
    tok = tiny_tokenizer()
    texts = [t for t in corpus_texts() if '"product_id":"' in t][:2] + [corpus_texts()[0]]
    return tok, encode_texts(texts, tok)


def test_wanted_colour_is_the_colour_of_the_row_the_id_was_copied_from():
    tok, batch = _shop_batch()
    text = [t for t in corpus_texts() if '"product_id":"' in t][0]
    calls = list(FOCUS.finditer(text))
    assert calls and {p for p, _ in batch[0].wanted_colours} == set(batch[0].focus)
    want = []
    for call in calls:
        rows = [json.loads(r.group(0)) for r in re.finditer(r'\{"color":[^{}]*\}', text[:call.start()])]
        want.append((call.group(1), {[r["color"] for r in rows if r["id"] == call.group(1)][-1]}))
    assert spell_marks(tok, batch[0].ids, batch[0].wanted_colours, [w for w, _ in want]) == want


def test_readout_reads_both_streams_where_the_colour_is_needed_and_trains_the_model():
    tok, batch = _shop_batch()
    model = tiny_sprout(causal=False, pattern="GAGA").train()
    readout = ShopReadout(model)
    assert readout.layers == [1, 2, 3]
    with readout.capture(model):
        loss_bd(model, batch, special_ids(tok), 8, torch.Generator().manual_seed(0), complementary=True,
                on_blocks=readout.see_blocks)
        T = max(len(e.ids) for e in batch)
        assert {tuple(t.shape) for t in readout._clean.values()} == {(3, T, 32)}
        assert {t.dim() for t in readout._noisy.values()} == {4}
        noisy = readout._noisy_targets(batch)
        wanted = [dict(ex.wanted_colours) for ex in batch]
        assert noisy and all(wanted[b][int(readout._starts[b, j]) + o] == c for b, j, o, c in noisy)
        # complementary pairs: each copied id token sits in two noisy blocks
        assert len(noisy) == 2 * sum(len(w) for w in wanted)
        aux = readout.loss(batch)
    assert abs(aux.item() - math.log(len(COLORS))) < 1.0     # fresh heads: about chance
    aux.backward()
    assert model.blocks[0].mixer.conv.grad.abs().sum() > 0
    assert readout.heads[0].weight.grad.abs().sum() > 0 and readout.wanted_heads[2].weight.grad.abs().sum() > 0
    assert model.blocks[3].mixer.out.weight.grad is None, "the last layer's output is not read"
    model(torch.tensor([batch[0].ids]))                      # the hooks are gone once the context closes
    assert readout._clean == {} and readout._noisy == {} and readout.loss(batch).item() == 0.0


def test_match_readout_reads_whether_each_row_is_what_was_asked_and_trains_the_model():
    tok, batch = _shop_batch()
    model = tiny_sprout(causal=True, pattern="GAGA").train()
    readout = ShopReadout(model)
    with readout.capture(model):
        loss_bd(model, batch, special_ids(tok), 8, torch.Generator().manual_seed(0))
        match = readout.match_loss(batch)
        hit = torch.tensor([h for ex in batch for _, h in ex.row_matches])
        # it reads the marked row-id tokens only: noise everywhere else leaves it unchanged
        marked = torch.zeros(readout._clean[1].shape[:2], dtype=torch.bool)
        for b, ex in enumerate(batch):
            marked[b, [p for p, _ in ex.row_matches]] = True
        kept = dict(readout._clean)
        readout._clean = {i: torch.where(marked[..., None], h, torch.randn_like(h)) for i, h in kept.items()}
        torch.testing.assert_close(readout.match_loss(batch), match)
        readout._clean = kept
    assert 0 < hit.sum() < len(hit), "both labels occur in the batch"
    assert abs(match.item() - math.log(2)) < 0.7           # fresh heads: about chance
    match.backward()
    assert model.blocks[0].mixer.conv.grad.abs().sum() > 0
    assert all(h.weight.grad.abs().sum() > 0 for h in readout.match_heads)
    assert readout.heads[0].weight.grad is None, "the colour heads are not part of this loss"
    assert ShopReadout(model).match_loss(batch).item() == 0.0   # nothing captured: no loss
