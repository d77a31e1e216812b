"""Block softmax with a history slot: torch form and Triton kernel against the looped reference."""

import importlib.util
import math

import pytest
import torch

from dlm_kernels.block_softmax import (
    block_softmax_with_history,
    block_softmax_with_history_ref,
    block_softmax_with_history_torch,
)
from tests.triton_interpret import run_interpreted

HAS_TRITON = importlib.util.find_spec("triton") is not None


def make_inputs(B=2, H=2, L=8, D=16, DV=16, seed=0, logit_shape="head", masked=False, requires_grad=False):
    """q, k (B, H, L, D); v, history (B, H, L, DV); history_logit of the given shape; key_mask (B, L) or None."""
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(B, H, L, D, generator=gen), torch.randn(B, H, L, D, generator=gen)
    v, history = torch.randn(B, H, L, DV, generator=gen), torch.randn(B, H, L, DV, generator=gen)
    shape = {"head": (1, H, 1), "query": (B, H, L), "scalar": ()}[logit_shape]
    history_logit = torch.randn(shape, generator=gen) + math.log(L)
    key_mask = None
    if masked:
        key_mask = torch.rand(B, L, generator=gen) > 0.4
        key_mask[0, 0] = True
        key_mask[-1] = False  # a block whose keys are all absent: all weight on the slot
    for x in (q, k, v, history, history_logit):
        x.requires_grad_(requires_grad)
    return q, k, v, history, history_logit, key_mask


def rel_err(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-12)).item()


CASES = [
    pytest.param(1, "head", False, id="L1"),
    pytest.param(4, "head", False, id="L4"),
    pytest.param(8, "query", False, id="L8-per-query-logit"),
    pytest.param(16, "scalar", False, id="L16-scalar-logit"),
    pytest.param(5, "head", True, id="L5-key-mask"),
    pytest.param(16, "head", True, id="L16-key-mask"),
]


@pytest.mark.parametrize("L, logit_shape, masked", CASES)
def test_torch_matches_reference(L, logit_shape, masked):
    q, k, v, history, logit, key_mask = make_inputs(L=L, DV=24, logit_shape=logit_shape, masked=masked)
    want = block_softmax_with_history_ref(q, k, v, history, logit, key_mask=key_mask)
    got = block_softmax_with_history_torch(q, k, v, history, logit, key_mask=key_mask)
    assert got.shape == (2, 2, L, 24)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("L, masked", [(4, False), (8, True)], ids=["L4", "L8-key-mask"])
def test_torch_gradients_match_reference(L, masked):
    inputs = make_inputs(L=L, masked=masked, requires_grad=True)
    q, k, v, history, logit, key_mask = inputs
    weight = torch.randn(2, 2, L, 16, generator=torch.Generator().manual_seed(1))

    def grads(fn):
        out = fn(q, k, v, history, logit, scale=0.3, key_mask=key_mask)
        return torch.autograd.grad((out * weight).sum(), (q, k, v, history, logit))

    names = ["q", "k", "v", "history", "history_logit"]
    for name, got, want in zip(names, grads(block_softmax_with_history_torch), grads(block_softmax_with_history_ref)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m, name=name: f"d/d{name}: {m}")


@pytest.mark.parametrize("L", [1, 4, 8, 16])
def test_history_weight_is_half_when_its_logit_is_log_block_size(L):
    """q.k = 0 for every key, slot logit log(L): L keys of weight 1 against one slot of weight L, so w_hist = 1/2."""
    q, k, _, _, _, _ = make_inputs(L=L)
    v, history = torch.zeros(2, 2, L, 16), torch.ones(2, 2, L, 16)  # o = w_hist * 1
    for fn in (block_softmax_with_history_ref, block_softmax_with_history_torch):
        o = fn(torch.zeros_like(q), k, v, history, torch.tensor(math.log(L)))
        torch.testing.assert_close(o, torch.full_like(o, 0.5))
    # an unbiased slot competes as one more key: weight 1 / (L + 1)
    o = block_softmax_with_history_torch(torch.zeros_like(q), k, v, history, torch.zeros(1, 2, 1))
    torch.testing.assert_close(o, torch.full_like(o, 1 / (L + 1)))


def test_absent_keys_do_not_matter():
    q, k, v, history, logit, key_mask = make_inputs(L=8, masked=True)
    o = block_softmax_with_history_torch(q, k, v, history, logit, key_mask=key_mask)
    absent = ~key_mask[:, None, :, None]  # (B, 1, L, 1)
    k2, v2 = k.masked_fill(absent, 1e3), v.masked_fill(absent, -7.0)
    torch.testing.assert_close(block_softmax_with_history_torch(q, k2, v2, history, logit, key_mask=key_mask), o)
    torch.testing.assert_close(o[-1], history[-1])  # last block has no keys: the slot takes all the weight
    full = torch.ones(2, 8, dtype=torch.bool)
    torch.testing.assert_close(
        block_softmax_with_history_torch(q, k, v, history, logit, key_mask=full),
        block_softmax_with_history_torch(q, k, v, history, logit),
    )


def test_large_logits_stay_finite():
    q, k, v, history, _, _ = make_inputs(L=8)
    o = block_softmax_with_history_torch(100 * q, 100 * k, v, history, torch.tensor(500.0))
    assert torch.isfinite(o).all()


def test_dispatch_on_cpu_is_the_torch_form():
    q, k, v, history, logit, key_mask = make_inputs(L=6, masked=True)
    assert torch.equal(
        block_softmax_with_history(q, k, v, history, logit, key_mask=key_mask),
        block_softmax_with_history_torch(q, k, v, history, logit, key_mask=key_mask),
    )


def test_bad_history_logit_shape_says_what_was_expected():
    q, k, v, history, _, _ = make_inputs(L=4)
    with pytest.raises(ValueError, match="history_logit must broadcast"):
        block_softmax_with_history_torch(q, k, v, history, torch.zeros(3, 1, 1))


# Triton under the interpreter, in a fresh process: triton.jit reads TRITON_INTERPRET when
# dlm_kernels.triton_block_softmax is imported, so the variable is not flipped for the whole pytest session.
TRITON_CASES = [  # (B, L, D, DV, logit_shape, masked)
    (1, 4, 16, 16, "head", False),
    (2, 8, 16, 32, "query", False),
    (2, 16, 32, 16, "head", False),
    (2, 5, 16, 16, "scalar", True),
    (2, 16, 32, 32, "head", True),
]
TRITON_SCRIPT = """
import json
from dlm_kernels.triton_block_softmax import block_softmax_with_history_triton
from tests.dlm_kernels.test_kernels_block_softmax import (TRITON_CASES, make_inputs, rel_err,
                                                    block_softmax_with_history_ref)
errors = []
for B, L, D, DV, logit_shape, masked in TRITON_CASES:
    q, k, v, history, logit, key_mask = make_inputs(B=B, L=L, D=D, DV=DV, logit_shape=logit_shape, masked=masked)
    want = block_softmax_with_history_ref(q, k, v, history, logit, key_mask=key_mask)
    errors.append(rel_err(block_softmax_with_history_triton(q, k, v, history, logit, key_mask=key_mask), want))
print(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def interpreted_errors():
    if not HAS_TRITON:
        pytest.skip("triton is not installed")
    return run_interpreted(TRITON_SCRIPT)


@pytest.mark.parametrize(
    "case",
    range(len(TRITON_CASES)),
    ids=[f"B{b}-L{n}-D{d}-Dv{dv}-{s}-logit{'-key-mask' if m else ''}" for b, n, d, dv, s, m in TRITON_CASES],
)
def test_triton_interpreted_matches_reference(interpreted_errors, case):
    assert interpreted_errors[case] <= 1e-4


@pytest.mark.skipif(not (torch.cuda.is_available() and HAS_TRITON), reason="needs a CUDA GPU and triton")
@pytest.mark.parametrize("L", [4, 8, 16, 33])
def test_triton_compiled_on_gpu_matches_reference(L):
    q, k, v, history, logit, key_mask = make_inputs(B=2, H=4, L=L, D=64, DV=64, masked=True)
    inputs = [x.cuda() for x in (q, k, v, history, logit, key_mask)]
    want = block_softmax_with_history_ref(*inputs[:5], key_mask=inputs[5])
    with torch.no_grad():
        got = block_softmax_with_history(*inputs[:5], key_mask=inputs[5])
    assert rel_err(got, want) <= 1e-4
