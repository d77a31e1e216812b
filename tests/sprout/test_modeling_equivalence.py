"""The tests that keep Sprout honest: the vectorised training passes equal the sequential
inference paths (prefill + denoise for BD, step-by-step recurrence for AR)."""

import pytest
import torch

from sprout.config import preset_config
from sprout.modeling import SproutModel

VOCAB = 50


def tiny_model(pattern: str = "GAGA", seed: int = 0, logit_shift: bool = False, conv: int = 4) -> SproutModel:
    torch.manual_seed(seed)
    cfg = preset_config("smoke", vocab_size=VOCAB, layer_pattern=pattern, mask_token_id=1, eos_token_id=2,
                        pad_token_id=0, logit_shift=logit_shift, conv_size=conv)
    model = SproutModel(cfg).eval()
    with torch.no_grad():   # non-trivial calibration and decay so the test can catch misuse
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("shift", [False, True], ids=["no-shift", "logit-shift"])
@pytest.mark.parametrize("pattern", ["GA", "GGAG", "AG"])
@pytest.mark.parametrize("block", [4, 8, 16])
@pytest.mark.parametrize("conv", [4, 12], ids=["conv4", "conv12"])   # 12: the tail spans past a 4- or 8-block
def test_bd_training_pass_equals_prefill_then_denoise(pattern, block, shift, conv):
    model = tiny_model(pattern, logit_shift=shift, conv=conv)
    gen = torch.Generator().manual_seed(block)
    T = 45
    clean = torch.randint(3, VOCAB, (2, T), generator=gen)
    # blocks at arbitrary starts (assistant turns are not aligned to any grid)
    starts = torch.tensor([[2, 7, 19, 33], [5, 16, 17, 40]])
    noisy = torch.randint(1, VOCAB, (2, 4, block), generator=gen)
    with torch.no_grad():
        train_logits = model.bd_logits(clean, noisy, starts)                 # (B, NB, C, V)
        for b in range(2):
            for j in range(4):
                p = int(starts[b, j])
                if p == 0:
                    continue   # inference always has a prompt; position 0 has no context
                cache, _ = model.prefill(clean[b:b + 1, :p])
                seq_logits = model.denoise(noisy[b:b + 1, j], cache)[0]
                torch.testing.assert_close(train_logits[b, j], seq_logits, atol=1e-5, rtol=1e-5)


def test_logit_shift_reads_the_first_token_from_the_clean_stream():
    """With the shift, a block's token 0 gets the AR next-token logits of the context, and
    token i the noisy output of position i-1 (so the last position's output is unused)."""
    plain, shifted = tiny_model("GA"), tiny_model("GA", logit_shift=True)
    gen = torch.Generator().manual_seed(5)
    clean = torch.randint(3, VOCAB, (1, 30), generator=gen)
    starts = torch.tensor([[9, 21]])
    noisy = torch.randint(1, VOCAB, (1, 2, 4), generator=gen)
    with torch.no_grad():
        a, b = plain.bd_logits(clean, noisy, starts), shifted.bd_logits(clean, noisy, starts)
        ar = shifted(clean)                                                 # causal logits (1, T, V)
    torch.testing.assert_close(b[0, :, 0], ar[0, starts[0] - 1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(b[:, :, 1:], a[:, :, :-1], atol=1e-6, rtol=1e-6)


def test_complementary_pairs_share_states_but_not_logits():
    """Blocks repeated with the same starts (the pair layout) read each state once; each copy's
    logits equal those of the same blocks run alone."""
    model = tiny_model("GAGA")
    gen = torch.Generator().manual_seed(3)
    clean = torch.randint(3, VOCAB, (2, 40), generator=gen)
    starts = torch.tensor([[3, 11, 20], [6, 16, 30]])
    first, second = (torch.randint(1, VOCAB, (2, 3, 8), generator=gen) for _ in range(2))
    with torch.no_grad():
        paired = model.bd_logits(clean, torch.cat([first, second], 1), torch.cat([starts, starts], 1))
        torch.testing.assert_close(paired[:, :3], model.bd_logits(clean, first, starts), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(paired[:, 3:], model.bd_logits(clean, second, starts), atol=1e-5, rtol=1e-5)


def test_denoise_leaves_cache_untouched_and_commit_extends_it():
    model = tiny_model()
    ids = torch.randint(3, VOCAB, (1, 12))
    block = torch.randint(1, VOCAB, (1, 8))
    with torch.no_grad():
        cache, _ = model.prefill(ids)
        first = model.denoise(block, cache)
        again = model.denoise(block, cache)
        torch.testing.assert_close(first, again, atol=0, rtol=0)
        cache2, _ = model.commit(block, cache)
        full, _ = model.prefill(torch.cat([ids, block], 1))
        assert cache2.length == full.length == 20
        assert len(cache2.layers) == len(full.layers) == 4
        for a, b in zip(cache2.layers, full.layers):
            assert type(a) is type(b)
            for name in ("keys", "values", "state", "tail"):
                if hasattr(a, name):
                    torch.testing.assert_close(getattr(a, name), getattr(b, name), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(cache2.next_logits, full.next_logits, atol=1e-5, rtol=1e-5)
        assert cache.length == 12, "commit leaves the cache it was given as it was"


@pytest.mark.parametrize("pattern", ["GAGA", "GG"])
@pytest.mark.parametrize("conv", [4, 12], ids=["conv4", "conv12"])
def test_ar_parallel_logits_equal_step_by_step(pattern, conv):
    model = tiny_model(pattern, conv=conv)
    ids = torch.randint(3, VOCAB, (1, 30))
    with torch.no_grad():
        parallel = model(ids)[0]                                   # (T, V)
        cache, last = model.prefill(ids[:, :1])
        steps = [last[0]]
        for t in range(1, 30):
            cache, logits = model.commit(ids[:, t:t + 1], cache)
            steps.append(logits[0, -1])
        torch.testing.assert_close(parallel, torch.stack(steps), atol=1e-5, rtol=1e-5)


def test_history_calibration_changes_the_output():
    """The block-size calibration is live: changing lambda changes denoise logits."""
    model = tiny_model("GA")
    ids, block = torch.randint(3, VOCAB, (1, 10)), torch.randint(1, VOCAB, (1, 8))
    with torch.no_grad():
        cache, _ = model.prefill(ids)
        before = model.denoise(block, cache)
        model.blocks[0].mixer.hist_lambda.add_(3.0)
        after = model.denoise(block, cache)
    assert (before - after).abs().max() > 1e-4


def test_shifted_sum_conv_equals_the_conv1d_reference():
    import torch.nn.functional as F

    layer = tiny_model("G").blocks[0].mixer
    gen = torch.Generator().manual_seed(0)
    ch, width = layer.conv.shape
    mix, tail = torch.randn(2, 3, 7, ch, generator=gen), torch.randn(2, 3, width - 1, ch, generator=gen)
    full = torch.cat([tail, mix], dim=-2).reshape(-1, 7 + width - 1, ch).transpose(1, 2)
    want = F.silu(F.conv1d(full, layer.conv[:, None], groups=ch)).transpose(1, 2).reshape(2, 3, 7, ch)
    with torch.no_grad():
        torch.testing.assert_close(layer._conv(mix, tail), want, atol=1e-6, rtol=1e-5)


def test_checkpoints_in_the_flat_layout_load_into_blocks(tmp_path):
    """The shipped weights name layer parts mixers.i / norms1.i / norms2.i / mlps.i; both a plain
    load_state_dict and from_pretrained map them onto blocks.i, and a saved folder keeps them."""
    from safetensors import safe_open

    model = tiny_model("GA")
    flat_names = {"mixer": "mixers", "norm1": "norms1", "norm2": "norms2", "mlp": "mlps"}

    def flat(name: str) -> str:
        if not name.startswith("blocks."):
            return name
        _, index, part, rest = name.split(".", 3)
        return f"{flat_names[part]}.{index}.{rest}"

    old_layout = {flat(k): v for k, v in model.state_dict().items()}
    assert "mixers.0.conv" in old_layout and not any(k.startswith("blocks.") for k in old_layout)
    fresh = SproutModel(model.config)
    fresh.load_state_dict(old_layout, strict=True)
    ids = torch.randint(3, VOCAB, (1, 9))
    with torch.no_grad():
        assert torch.equal(fresh(ids), model(ids))
    model.save_pretrained(tmp_path)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        assert set(f.keys()) == set(old_layout)
    loaded = SproutModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.equal(loaded(ids), model(ids))
