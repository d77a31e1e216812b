"""Gated delta rule: chunked torch form, one-token step and Triton kernel against the recurrent reference."""

import importlib.util
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dlm_kernels.gated_delta import (
    chunk_gated_delta_rule,
    chunk_gated_delta_rule_with_intermediates,
    gated_delta_rule,
    gated_delta_rule_ref,
    gated_delta_step,
)
from tests.triton_interpret import REPO, run_interpreted

HAS_TRITON = importlib.util.find_spec("triton") is not None


def make_inputs(B=2, T=16, H=2, K=16, V=16, seed=0, decay=1.0, with_state=True, requires_grad=False):
    """L2-normalised q, k; g = log decay <= 0; beta in (0, 1); a random initial state."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = -decay * torch.rand(B, T, H, generator=gen)
    beta = torch.rand(B, T, H, generator=gen)
    state = torch.randn(B, H, K, V, generator=gen) if with_state else None
    tensors = [q, k, v, g, beta] + ([state] if with_state else [])
    for x in tensors:
        x.requires_grad_(requires_grad)
    return q, k, v, g, beta, state


def ref_chunk_states(q, k, v, g, beta, state, chunk_size):
    """The state before each chunk, by running the reference chunk after chunk."""
    B, T, H, K = q.shape
    S = torch.zeros(B, H, K, v.shape[-1]) if state is None else state
    states = []
    for start in range(0, T, chunk_size):
        states.append(S)
        sl = slice(start, start + chunk_size)
        _, S = gated_delta_rule_ref(q[:, sl], k[:, sl], v[:, sl], g[:, sl], beta[:, sl], initial_state=S)
    return torch.stack(states, dim=1)


def rel_err(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-12)).item()


CASES = [  # (T, chunk_size, with_state, decay)
    pytest.param(16, 4, True, 1.0, id="T16-C4"),
    pytest.param(16, 8, True, 1.0, id="T16-C8"),
    pytest.param(32, 16, True, 1.0, id="T32-C16"),
    pytest.param(21, 4, True, 1.0, id="T21-C4-ragged"),
    pytest.param(21, 8, True, 1.0, id="T21-C8-ragged"),
    pytest.param(21, 16, True, 1.0, id="T21-C16-ragged"),
    pytest.param(3, 16, False, 1.0, id="T3-C16-shorter-than-chunk-no-state"),
    pytest.param(20, 8, True, 30.0, id="T20-C8-strong-decay"),
]


@pytest.mark.parametrize("T, chunk_size, with_state, decay", CASES)
def test_chunked_matches_reference(T, chunk_size, with_state, decay):
    q, k, v, g, beta, state = make_inputs(T=T, K=16, V=32, decay=decay, with_state=with_state)
    o_ref, s_ref = gated_delta_rule_ref(q, k, v, g, beta, initial_state=state)
    o, s, chunk_states, _, _ = chunk_gated_delta_rule_with_intermediates(
        q, k, v, g, beta, initial_state=state, chunk_size=chunk_size
    )
    assert o.shape == o_ref.shape == (2, T, 2, 32)
    assert chunk_states.shape == (2, -(-T // chunk_size), 2, 16, 32)
    torch.testing.assert_close(o, o_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s, s_ref, atol=1e-5, rtol=1e-5)
    want_states = ref_chunk_states(q, k, v, g, beta, state, chunk_size)
    torch.testing.assert_close(chunk_states, want_states, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("T, chunk_size", [(21, 4), (21, 8), (32, 16)], ids=["T21-C4", "T21-C8", "T32-C16"])
def test_chunk_values_give_the_state_after_every_prefix(T, chunk_size):
    """S after token t, rebuilt from the chunk start state, V' and Gamma, equals the recurrence's."""
    q, k, v, g, beta, state = make_inputs(T=T, K=16, V=32)
    _, _, chunk_states, v_new, gamma = chunk_gated_delta_rule_with_intermediates(
        q, k, v, g, beta, initial_state=state, chunk_size=chunk_size)
    assert v_new.shape == (2, T, 2, 32) and gamma.shape == (2, T, 2)
    for t in range(T):
        n, r = divmod(t, chunk_size)                   # token t is the (r+1)-th of chunk n
        s = slice(n * chunk_size, t + 1)
        _, want = gated_delta_rule_ref(q[:, :t + 1], k[:, :t + 1], v[:, :t + 1], g[:, :t + 1], beta[:, :t + 1],
                                       initial_state=state)
        decay = (gamma[:, t, None] - gamma[:, s]).exp()                             # (B, r+1, H)
        got = gamma[:, t].exp()[..., None, None] * chunk_states[:, n] + torch.einsum(
            "bsh,bshk,bshv->bhkv", decay, k[:, s], v_new[:, s])
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("T, chunk_size", [(16, 4), (21, 8), (21, 16)], ids=["T16-C4", "T21-C8-ragged", "T21-C16"])
def test_chunked_gradients_match_reference(T, chunk_size):
    inputs = make_inputs(T=T, requires_grad=True)
    gen = torch.Generator().manual_seed(1)
    w_o, w_s = torch.randn(2, T, 2, 16, generator=gen), torch.randn(2, 2, 16, 16, generator=gen)

    def grads(fn, **kwargs):
        q, k, v, g, beta, state = inputs
        o, s = fn(q, k, v, g, beta, initial_state=state, **kwargs)
        return torch.autograd.grad((o * w_o).sum() + (s * w_s).sum(), inputs)

    names = ["q", "k", "v", "g", "beta", "initial_state"]
    chunked, reference = grads(chunk_gated_delta_rule, chunk_size=chunk_size), grads(gated_delta_rule_ref)
    for name, got, want in zip(names, chunked, reference):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4, msg=lambda m, name=name: f"d/d{name}: {m}")


def test_repeated_step_matches_reference():
    q, k, v, g, beta, state = make_inputs(T=12, K=16, V=24)
    o_ref, s_ref = gated_delta_rule_ref(q, k, v, g, beta, initial_state=state)
    outputs, S = [], state
    for t in range(q.shape[1]):
        o_t, S = gated_delta_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], S)
        outputs.append(o_t)
    torch.testing.assert_close(torch.stack(outputs, dim=1), o_ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(S, s_ref, atol=1e-6, rtol=1e-5)


def test_padding_step_is_identity():
    """g = 0, beta = 0, k = 0 leaves the state alone: why padding a ragged tail is exact."""
    q, k, v, g, beta, state = make_inputs(T=1)
    _, S = gated_delta_step(q[:, 0], 0 * k[:, 0], v[:, 0], 0 * g[:, 0], 0 * beta[:, 0], state)
    torch.testing.assert_close(S, state)


def test_scale_and_dtype():
    q, k, v, g, beta, state = make_inputs(T=9)
    o_ref, _ = gated_delta_rule_ref(q, k, v, g, beta, scale=0.5, initial_state=state)
    o, s = chunk_gated_delta_rule(q.bfloat16(), k.bfloat16(), v.bfloat16(), g, beta, scale=0.5, initial_state=state)
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    torch.testing.assert_close(o.float(), o_ref, atol=0.05, rtol=0.05)


def test_dispatch_on_cpu_is_the_chunked_form():
    q, k, v, g, beta, state = make_inputs(T=10)
    o, s = gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=4)
    o2, s2 = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=4)
    run = chunk_gated_delta_rule_with_intermediates(q, k, v, g, beta, initial_state=state, chunk_size=4)
    assert torch.equal(o, o2) and torch.equal(s, s2)
    assert torch.equal(run.output, o) and torch.equal(run.final_state, s), "one computation, two views"


def test_cpu_only_use_needs_no_triton():
    """With triton unimportable (sys.modules entry None), the torch paths and the bench module still work."""
    script = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch, bench.kernels\n"
        "from dlm_kernels.gated_delta import gated_delta_rule\n"
        "from dlm_kernels.block_softmax import block_softmax_with_history\n"
        "x = torch.randn(1, 5, 2, 8)\n"
        "o, s = gated_delta_rule(x, x, x, -torch.rand(1, 5, 2), torch.rand(1, 5, 2), chunk_size=4)\n"
        "y = torch.randn(1, 2, 4, 8)\n"
        "print(tuple(o.shape), tuple(block_softmax_with_history(y, y, y, y, 0.0).shape))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["(1,", "5,", "2,", "8)", "(1,", "2,", "4,", "8)"]


def test_bad_shapes_say_what_was_expected():
    q, k, v, g, beta, _ = make_inputs(T=4)
    with pytest.raises(ValueError, match=r"g must be \(B, T, H\)"):
        chunk_gated_delta_rule(q, k, v, g[..., :1], beta)


@settings(max_examples=12, deadline=None)
@given(T=st.integers(1, 19), chunk_size=st.sampled_from([1, 2, 3, 4, 8]), seed=st.integers(0, 2**16))
def test_chunked_matches_reference_property(T, chunk_size, seed):
    q, k, v, g, beta, state = make_inputs(B=1, T=T, H=1, K=8, V=8, seed=seed)
    o_ref, s_ref = gated_delta_rule_ref(q, k, v, g, beta, initial_state=state)
    o, s = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=chunk_size)
    torch.testing.assert_close(o, o_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(s, s_ref, atol=1e-5, rtol=1e-5)


# Triton under the interpreter. triton.jit reads TRITON_INTERPRET when a kernel is decorated, i.e. when
# dlm_kernels.triton_gdn is imported, so these run in a fresh interpreter process rather than flip the
# variable for the whole pytest session.
TRITON_CASES = [  # (B, T, K, V, chunk_size, with_state)
    (1, 16, 16, 16, 4, True),
    (2, 21, 16, 32, 4, True),
    (2, 32, 32, 32, 8, True),
    (1, 13, 16, 16, 8, False),
    (2, 32, 32, 16, 16, True),
    (1, 27, 16, 32, 16, True),
]
TRITON_SCRIPT = """
import json, sys, torch
from dlm_kernels.triton_gdn import chunk_gated_delta_rule_triton_with_chunk_states
from tests.dlm_kernels.test_kernels_gdn import (TRITON_CASES, make_inputs, ref_chunk_states, rel_err,
                                             gated_delta_rule_ref)
results = []
for B, T, K, V, C, with_state in TRITON_CASES:
    q, k, v, g, beta, state = make_inputs(B=B, T=T, H=2, K=K, V=V, with_state=with_state)
    o_ref, s_ref = gated_delta_rule_ref(q, k, v, g, beta, initial_state=state)
    o, s, cs = chunk_gated_delta_rule_triton_with_chunk_states(q, k, v, g, beta, None, state, C)
    results.append({"o": rel_err(o, o_ref), "final_state": rel_err(s, s_ref),
                    "chunk_states": rel_err(cs, ref_chunk_states(q, k, v, g, beta, state, C))})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def interpreted_errors():
    if not HAS_TRITON:
        pytest.skip("triton is not installed")
    return run_interpreted(TRITON_SCRIPT)


@pytest.mark.parametrize(
    "case",
    range(len(TRITON_CASES)),
    ids=[f"B{b}-T{t}-K{k}-V{v}-C{c}{'' if s else '-no-state'}" for b, t, k, v, c, s in TRITON_CASES],
)
def test_triton_interpreted_matches_reference(interpreted_errors, case):
    errors = interpreted_errors[case]
    assert max(errors.values()) <= 1e-4, errors


@pytest.mark.skipif(not (torch.cuda.is_available() and HAS_TRITON), reason="needs a CUDA GPU and triton")
@pytest.mark.parametrize("chunk_size", [4, 16, 64])
def test_triton_compiled_on_gpu_matches_reference(chunk_size):
    q, k, v, g, beta, state = (x.cuda() for x in make_inputs(B=2, T=70, H=4, K=64, V=64))
    o_ref, s_ref = gated_delta_rule_ref(q, k, v, g, beta, initial_state=state)
    from dlm_kernels.triton_gdn import chunk_gated_delta_rule_triton_with_chunk_states

    with torch.no_grad():
        o, s = gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=chunk_size)
        _, _, cs = chunk_gated_delta_rule_triton_with_chunk_states(
            q, k, v, g, beta, initial_state=state, chunk_size=chunk_size)
    assert rel_err(o, o_ref) <= 1e-4 and rel_err(s, s_ref) <= 1e-4
    assert rel_err(cs, ref_chunk_states(q, k, v, g, beta, state, chunk_size)) <= 1e-4
