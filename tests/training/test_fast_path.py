"""The fast training path equals the path it replaced: the depthwise conv and the shifted one
(outputs and gradients), the output head on target rows and on every row (losses and gradients
of a whole BD and AR step), the precision a run picks from the CPU's flags, and the bf16 compute
copy's step against the autocast step it replaces."""

import copy

import pytest
import torch
import torch.nn.functional as F

from sprout.delta_layer import conv_depthwise, conv_shifted
from tests.sprout.helpers import corpus_texts, special_ids, tiny_sprout, tiny_tokenizer
from training import precision
from training.data import encode_texts
from training.losses import head_rows, loss_ar, loss_bd


@pytest.mark.parametrize("lead", [(3,), (2, 5)], ids=["clean-stream", "noisy-blocks"])
@pytest.mark.parametrize("width", [4, 12])
def test_depthwise_conv_equals_the_shifted_conv_outputs_and_gradients(lead, width):
    gen = torch.Generator().manual_seed(width)
    ch, n = 24, 16
    full = torch.randn(*lead, n + width - 1, ch, generator=gen, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(ch, width, generator=gen, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(*lead, n, ch, generator=gen, dtype=torch.float64)
    results = []
    for conv in (conv_shifted, conv_depthwise):
        out = conv(full, weight)
        grads = torch.autograd.grad(out, (full, weight), grad_out)
        results.append((out, *grads))
    for want, got in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_the_depthwise_conv_under_bf16_autocast_runs_in_fp32_and_keeps_its_input_dtype(monkeypatch):
    """Under autocast the conv leaves the matrix units' precision: its convolution gets fp32
    operands (not the bf16 autocast would give it), and it hands back its input's bf16, with
    gradients for both."""
    seen, real = [], F.conv2d

    def watched(x, w, **kw):
        seen.append((x.dtype, w.dtype, torch.is_autocast_enabled("cpu")))
        return real(x, w, **kw)

    monkeypatch.setattr(F, "conv2d", watched)
    gen = torch.Generator().manual_seed(3)
    full = torch.randn(2, 5, 27, 48, generator=gen).bfloat16().requires_grad_()
    weight = torch.randn(48, 12, generator=gen, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = conv_depthwise(full, weight)
    assert seen == [(torch.float32, torch.float32, False)]            # autocast off: no cast to bf16
    assert out.dtype == torch.bfloat16 and out.shape == (2, 5, 16, 48)
    want = conv_shifted(full.detach().double(), weight.detach().double())
    torch.testing.assert_close(out.detach().double(), want, rtol=2**-7, atol=1e-3)   # one bf16 rounding
    out.float().sum().backward()
    assert full.grad is not None and full.grad.dtype == torch.bfloat16
    assert weight.grad is not None and weight.grad.dtype == torch.float32


def test_the_layer_takes_the_depthwise_conv_only_when_training_with_gradients(monkeypatch):
    import sprout.delta_layer as delta_layer

    used = []
    for name in ("conv_shifted", "conv_depthwise"):
        real = getattr(delta_layer, name)
        monkeypatch.setattr(delta_layer, name, lambda full, w, real=real, name=name: used.append(name) or real(full, w))
    model = tiny_sprout(causal=False)
    layer = model.blocks[0].mixer
    mix = torch.randn(2, 6, layer.conv.shape[0])
    tail = layer.empty_tail((2,), mix)
    model.train()
    layer._conv(mix, tail)
    with torch.no_grad():
        layer._conv(mix, tail)                     # validation inside a training run
    model.eval()
    layer._conv(mix, tail)                         # decoding
    model.train()
    layer.train_conv = "shifted"
    layer._conv(mix, tail)                         # the old path, for bench/train.py
    assert used == ["conv_depthwise", "conv_shifted", "conv_shifted", "conv_shifted"]


def _step_grads(model, step):
    model.zero_grad(set_to_none=True)
    loss = step()
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("twin", ["ar", "bd"])
def test_the_head_on_target_rows_gives_the_loss_and_gradients_of_the_head_on_every_row(twin):
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    batch = encode_texts(list(corpus_texts()[:4]), tok)
    model = tiny_sprout(causal=twin == "ar").train()
    for block in model.blocks:          # both runs on the same conv, so only the head differs
        if hasattr(block.mixer, "train_conv"):
            block.mixer.train_conv = "shifted"

    def step():
        if twin == "ar":
            return loss_ar(model, batch, ids, focus_weight=3.0, decision_weight=2.0)[0]
        return loss_bd(model, batch, ids, 8, torch.Generator().manual_seed(1), complementary=True,
                       ar_weight=0.5, focus_weight=3.0)[0]

    with head_rows("all"):
        want_loss, want = _step_grads(model, step)
    got_loss, got = _step_grads(model, step)
    torch.testing.assert_close(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    assert want.keys() == got.keys() and want
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6, msg=name)


def test_the_per_block_attention_gives_the_bd_step_of_the_dense_masked_attention():
    """The A layers' `train_attention` switch (bench/train.py's old path) changes only how the
    noisy blocks' attention is computed: a whole BD step's loss and gradients agree."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    batch = encode_texts(list(corpus_texts()[:4]), tok)
    model = tiny_sprout(causal=False).train()
    attention = [block.mixer for block in model.blocks if hasattr(block.mixer, "train_attention")]
    assert attention

    def step():
        return loss_bd(model, batch, ids, 4, torch.Generator().manual_seed(2), complementary=True,
                       ar_weight=0.5)[0]

    results = []
    for form in ("dense", "blocks"):
        for layer in attention:
            layer.train_attention = form
        results.append(_step_grads(model, step))
    (want_loss, want), (got_loss, got) = results
    torch.testing.assert_close(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6, msg=name)


def test_head_rows_refuses_an_unknown_choice():
    with pytest.raises(ValueError, match="targets"), head_rows("some"):
        pass


AMD = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx2 fma\n"
XEON = "model name\t: Intel(R) Xeon(R)\nflags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
AVX512_BF16 = "flags\t\t: avx2 avx512f avx512_bf16\n"


@pytest.mark.parametrize("cpuinfo, requested, want", [
    (XEON, "auto", "bf16"),
    (AMD, "auto", "fp32"),
    (AVX512_BF16, "auto", "fp32"),
    (AMD, "bf16", "bf16"),
    (XEON, "bf16-autocast", "bf16-autocast"),
    (XEON, "fp32", "fp32"),
], ids=["amx-auto", "no-units-auto", "avx512bf16-auto", "forced-bf16", "forced-autocast", "forced-fp32"])
def test_the_precision_follows_the_cpus_bf16_matrix_units(cpuinfo, requested, want):
    chosen = precision.choose(requested, torch.device("cpu"), precision.cpu_flags(cpuinfo))
    assert chosen.name == want
    assert chosen.dtype == (torch.float32 if want == "fp32" else torch.bfloat16)
    assert chosen.bf16_copy == (want == "bf16")
    assert chosen.reason


def test_the_cpu_is_named_and_an_unknown_precision_is_a_sentence():
    assert precision.cpu_name(AMD) == "AMD EPYC"
    with pytest.raises(ValueError, match="choose one of auto, bf16, bf16-autocast, fp32"):
        precision.choose("fp8", torch.device("cpu"))


def test_a_bf16_autocast_step_keeps_fp32_master_weights():
    tok = tiny_tokenizer()
    model = tiny_sprout(causal=True).train()
    batch = encode_texts(list(corpus_texts()[:2]), tok)
    chosen = precision.choose("bf16-autocast", torch.device("cpu"))
    with precision.autocast(chosen, torch.device("cpu")):
        loss, _ = loss_ar(model, batch, special_ids(tok))
    loss.backward()
    assert all(p.dtype == torch.float32 and (p.grad is None or p.grad.dtype == torch.float32)
               for p in model.parameters())
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


def _one_step(model, weights, chosen, batch, ids):
    """One SGD step through `weights` (a ComputeCopy of `model`), as training.train takes it."""
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(3)
    with precision.autocast(chosen, torch.device("cpu")):
        loss, _ = loss_bd(weights.compute, batch, ids, 4, gen, complementary=True, ar_weight=0.5)
    weights.step(loss, opt, max_norm=1e9)          # no clipping: the raw gradients move the master
    return loss


def test_a_step_on_the_bf16_copy_moves_the_fp32_master_as_the_autocast_step_does():
    """The copy computes in bf16 (matrices and norms; the 4-value per-head gates stay fp32), its
    gradients reach the fp32 master, the optimizer moves the master, and the copy follows it. The
    master after one step lands where the autocast step puts it, within bf16's rounding."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    batch = encode_texts(list(corpus_texts()[:3]), tok)
    start = tiny_sprout(causal=False)
    masters, losses = [], []
    for name in ("bf16-autocast", "bf16"):
        chosen = precision.choose(name, torch.device("cpu"))
        model = copy.deepcopy(start).train()
        weights = precision.ComputeCopy(model, chosen)
        assert weights.separate == (name == "bf16")
        if weights.separate:
            dtypes = {n: p.dtype for n, p in weights.compute.named_parameters()}
            assert dtypes["blocks.0.mixer.qkv.weight"] == torch.bfloat16
            assert dtypes["blocks.0.norm1.weight"] == torch.bfloat16
            assert dtypes["blocks.0.mixer.A_log"] == torch.float32
        losses.append(_one_step(model, weights, chosen, batch, ids).item())
        assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32
                   for p in model.parameters())
        assert all(p.grad is None for p in weights.compute.parameters()) or not weights.separate
        for master, comp in zip(model.parameters(), weights.compute.parameters()):
            torch.testing.assert_close(comp.float(), master, rtol=1 / 128, atol=1e-6)   # follows the step
        masters.append(model)
    assert losses[1] == pytest.approx(losses[0], rel=0.03)
    moved = [(a - s).norm() for a, s in zip(masters[0].parameters(), start.parameters())]
    apart = [(b - a).norm() for a, b in zip(masters[0].parameters(), masters[1].parameters())]
    assert sum(moved) > 0
    assert sum(apart) < 0.1 * sum(moved)          # the two steps agree to within a tenth of the move


def test_fp32_computes_with_the_master_itself():
    model = tiny_sprout(causal=True)
    weights = precision.ComputeCopy(model, precision.choose("fp32", torch.device("cpu")))
    assert weights.compute is model and not weights.separate


def test_the_per_block_attention_equals_the_dense_masked_one_outputs_and_gradients():
    from sprout.cache import AttentionContext
    from sprout.layers import _blocks_attention, blocks_attention_dense

    gen = torch.Generator().manual_seed(0)
    B, NB, C, H, D, T = 2, 5, 4, 2, 8, 23
    shape = (B, NB, C, H, D)
    q, k, v = (torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3))
    keys, values = (torch.randn(B, H, T, D, generator=gen, dtype=torch.float64, requires_grad=True)
                    for _ in range(2))
    starts = torch.tensor([[0, 3, 7, 11, 20], [1, 5, 9, 13, 23]])               # a block at 0 sees no clean key
    ctx = AttentionContext(keys, values, torch.arange(T) < starts[..., None])
    grad_out = torch.randn(B, NB, C, H * D, generator=gen, dtype=torch.float64)
    results = []
    for attend in (blocks_attention_dense, _blocks_attention):
        out = attend(q, k, v, ctx)
        results.append((out, *torch.autograd.grad(out, (q, k, v, keys, values), grad_out)))
    for want, got in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)
