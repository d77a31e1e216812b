"""The shipped Sprout weights give the logits and the greedy replies that the model code they
were trained with gave. `data/reference_logits.pt` holds, for a fixed prompt, the logits of every
mode (prefill, denoise of a partly masked block, commit, the vectorised BD training pass) and the
greedy reply to a few requests at the bundled decoding, written by
`python -m tests.sprout.test_reference_logits --write` when the shipped weights change.

Float results depend on the CPU's kernels (an AMD EPYC and an Intel Xeon differ by ~5e-6 on these
logits: other vector units, other summation orders), so the stored logits are compared
- bit for bit on the machine that wrote them (same CPU model, architecture and torch version,
  recorded beside them), where any difference is a change to the maths or to how weights load;
- to a tolerance elsewhere: |got - stored| <= ATOL + RTOL * |stored|, far above kernel noise
  (1e-5) and far below what a changed layer or a misloaded weight moves (>= 1e-2);
and the greedy replies must be equal token for token on every machine.

All of it runs on one CPU thread: a matmul split over threads may sum in another order."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest
import torch

from engine.backends.sprout import load
from engine.catalog import bundled_decoding
from engine.generate import run
from engine.trace import GenerationConfig
from tests.threads import one_torch_thread  # noqa: F401  (autouse: one thread, one summation order)
from world.format import render_chat

MODELS = Path(__file__).resolve().parents[2] / "models"
REFERENCE = Path(__file__).resolve().parent / "data" / "reference_logits.pt"
TWINS = ("sprout-bd", "sprout-ar")
MESSAGES = [{"role": "user",
             "content": "Please add 2 navy shirts in size M to my cart, then tell me the total for order A536."}]
REPLY_REQUESTS = ("Please add 2 navy shirts in size M to my cart.", "Check activity A536.",
                  "Find customer Mia Park.")
ATOL, RTOL = 1e-4, 1e-4


def this_machine() -> str:
    """What decides the float kernels: CPU model, architecture, torch version."""
    cpu = platform.processor()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith(("model name", "Model")))
    except (OSError, StopIteration):
        pass
    return f"{cpu} | {platform.machine()} | torch {torch.__version__}"


def mode_logits(backend) -> dict[str, torch.Tensor]:
    """Every inference mode's logits (fp32, CPU) for the fixed prompt."""
    model, tok = backend.model, backend.tokenizer
    ids = torch.tensor([tok.encode(render_chat(MESSAGES, add_generation_prompt=True))])
    mask = model.config.mask_token_id
    block = ids[:, 4:8].clone()
    block[:, 1::2] = mask                                     # a partly decided block
    out: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        cache, out["prefill"] = model.prefill(ids)
        out["denoise"] = model.denoise(block, cache)
        cache, out["commit"] = model.commit(ids[:, 4:6], cache)
        out["denoise_after_commit"] = model.denoise(block, cache)
        starts = torch.tensor([[4, 12]])
        noisy = torch.stack([ids[:, 4:8], ids[:, 12:16]], dim=1).clone()
        noisy[..., ::2] = mask
        out["bd_logits"], _ = model.bd_forward(ids[:, :16], noisy, starts)
    return {k: v.float().clone() for k, v in out.items()}


def greedy_replies(backend) -> list[list[int]]:
    """The token ids each twin answers the reply requests with, greedy, at the bundled decoding."""
    config = GenerationConfig(**{**bundled_decoding(), "gen_length": 64, "temperature": 0.0})
    return [run(backend, backend.encode_chat([{"role": "user", "content": text}]), config).token_ids
            for text in REPLY_REQUESTS]


def reference_of(name: str) -> dict:
    backend = load(MODELS / name, device="cpu")
    return {"logits": mode_logits(backend), "replies": greedy_replies(backend)}


@pytest.fixture(scope="module")
def stored() -> dict:
    return torch.load(REFERENCE)


@pytest.mark.parametrize("name", TWINS)
def test_shipped_weights_give_the_stored_logits(name, stored):
    got = mode_logits(load(MODELS / name, device="cpu"))
    expected = stored["twins"][name]["logits"]
    assert sorted(got) == sorted(expected)
    same_machine = stored["machine"] == this_machine()
    for mode, logits in expected.items():
        assert got[mode].shape == logits.shape, mode
        diff = (got[mode] - logits).abs().max().item()
        if same_machine:
            assert torch.equal(got[mode], logits), f"{name} {mode}: max diff {diff:.3g} on the machine that wrote it"
        else:
            assert torch.allclose(got[mode], logits, atol=ATOL, rtol=RTOL), (
                f"{name} {mode}: max diff {diff:.3g} is over the cross-machine tolerance "
                f"(atol {ATOL}, rtol {RTOL}; written on {stored['machine']}, run on {this_machine()})")


@pytest.mark.parametrize("name", TWINS)
def test_shipped_weights_give_the_stored_greedy_replies_exactly(name, stored):
    backend = load(MODELS / name, device="cpu")
    assert greedy_replies(backend) == stored["twins"][name]["replies"]


def test_the_tolerance_catches_a_changed_weight(stored):
    """A perturbation the size of one bf16 rounding step in one layer breaks the tolerance check."""
    backend = load(MODELS / "sprout-bd", device="cpu")
    with torch.no_grad():
        weight = next(p for n, p in backend.model.named_parameters() if n.endswith("mlp.down.weight")
                      or n.endswith("down_proj.weight") or "mlp" in n and p.dim() == 2)
        weight.mul_(1 + 2 ** -7)
    got = mode_logits(backend)
    expected = stored["twins"]["sprout-bd"]["logits"]
    assert not all(torch.allclose(got[m], expected[m], atol=ATOL, rtol=RTOL) for m in expected)


if __name__ == "__main__" and "--write" in sys.argv:
    torch.set_num_threads(1)
    REFERENCE.parent.mkdir(exist_ok=True)
    torch.save({"machine": this_machine(), "twins": {name: reference_of(name) for name in TWINS}}, REFERENCE)
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size} bytes) on {this_machine()}")
