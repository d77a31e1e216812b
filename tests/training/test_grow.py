"""Growing a trained Sprout (appended layers, a wider conv): it starts as the identity and still learns."""

import pytest
import torch

from tests.sprout.helpers import tiny_sprout
from training.grow import grow, widen_conv


def assert_same_logits(changed, model, ids: torch.Tensor) -> None:
    """Bit-equal logits in every mode: clean, prefill, denoise, commit."""
    same = lambda a, b: torch.testing.assert_close(a, b, rtol=0, atol=0)   # noqa: E731
    same(changed(ids), model(ids))
    cache, last = model.prefill(ids[:, :16])
    changed_cache, changed_last = changed.prefill(ids[:, :16])
    same(changed_last, last)
    same(changed.denoise(ids[:, 16:24], changed_cache), model.denoise(ids[:, 16:24], cache))
    same(changed.commit(ids[:, 16:20], changed_cache)[1], model.commit(ids[:, 16:20], cache)[1])


@pytest.mark.parametrize("causal", [False, True])
def test_grown_model_computes_what_the_original_did(causal):
    model = tiny_sprout(causal=causal, pattern="GA")
    grown = grow(model, "AG").eval()
    assert grown.config.layer_pattern == "GAAG" and model.config.layer_pattern == "GA"
    assert_same_logits(grown, model, torch.randint(5, 300, (2, 24)))


def test_appended_layer_gets_a_gradient_and_bad_patterns_are_refused():
    grown = grow(tiny_sprout(causal=True), "A").train()
    ids = torch.randint(5, 300, (2, 12))
    torch.nn.functional.cross_entropy(grown(ids)[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).backward()
    new = grown.blocks[2]
    assert new.mixer.out.weight.grad.abs().sum() > 0 and new.mlp.down.weight.grad.abs().sum() > 0
    for bad in ("", "X", "AB"):
        with pytest.raises(ValueError, match="G and A"):
            grow(tiny_sprout(causal=True), bad)


@pytest.mark.parametrize("causal", [False, True])
def test_widened_conv_computes_what_the_original_did_and_learns(causal):
    model = tiny_sprout(causal=causal, pattern="GA")
    wide = widen_conv(model, 10).eval()
    assert wide.config.conv_size == 10 and wide.blocks[0].mixer.conv.shape[1] == 10
    ids = torch.randint(5, 300, (2, 24))
    assert_same_logits(wide, model, ids)
    wide.train()
    torch.nn.functional.cross_entropy(wide(ids)[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).backward()
    assert wide.blocks[0].mixer.conv.grad[:, :6].abs().sum() > 0      # the new, older taps learn


def test_conv_is_only_widened():
    with pytest.raises(ValueError, match="only be widened"):
        widen_conv(tiny_sprout(causal=True), 4)
