"""The row-colour read-out loss: it reads the clean stream at search rows' id tokens only, and
its gradient reaches the model."""

import math

import torch

from engine.sprout.data import encode_texts
from engine.sprout.readout import RowColourReadout
from engine.sprout.train import loss_bd
from engine.world.entities import COLORS
from tests.sprout.helpers import corpus_texts, special_ids, tiny_sprout, tiny_tokenizer


def _shop_batch():
    tok = tiny_tokenizer()
    texts = [t for t in corpus_texts() if '"color":"' in t][:2] + [corpus_texts()[0]]
    return tok, encode_texts(texts, tok)


def test_readout_reads_the_clean_stream_at_row_ids_and_trains_the_model():
    tok, batch = _shop_batch()
    assert sum(len(ex.row_colours) for ex in batch) >= 8
    model = tiny_sprout(causal=False, pattern="GAGA").train()
    readout = RowColourReadout(model)
    assert readout.layers == [1, 2, 3]
    gen = torch.Generator().manual_seed(0)
    with readout.capture(model):
        loss_bd(model, batch, special_ids(tok), 8, gen, complementary=True)
        assert {tuple(t.shape) for t in readout._captured.values()} == {(3, max(len(e.ids) for e in batch), 32)}
        aux = readout.loss(batch)
    # untrained heads: about ln(8) per prediction, since the heads start near uniform
    assert abs(aux.item() - math.log(len(COLORS))) < 1.0
    aux.backward()
    assert model.mixers[0].conv.grad.abs().sum() > 0 and readout.heads[0].weight.grad.abs().sum() > 0
    assert model.mixers[3].out.weight.grad is None, "the last layer's output is not read"
    # the hooks are gone once the context closes
    model(torch.tensor([batch[0].ids]))
    assert readout._captured == {} and readout.loss(batch).item() == 0.0

