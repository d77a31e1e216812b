"""The shipped Sprout weights give the same logits, bit for bit, as the model code they were
trained with. `data/reference_logits.pt` holds what that code produced for a fixed prompt in
every mode (prefill, denoise of a partly masked block, commit, the vectorised BD training
pass), written by `python -m tests.sprout.test_reference_logits --write` when the shipped
weights change (the SproutBlock / typed-cache restructure was checked against logits the code
before it wrote); a change to the forward maths or to how parameter names load fails here.

All of it runs on one CPU thread: a matmul split over threads may sum in another order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from engine.backends.sprout import load
from engine.world.format import render_chat
from tests.threads import one_torch_thread  # noqa: F401  (autouse: one thread, one summation order)

MODELS = Path(__file__).resolve().parents[2] / "models"
REFERENCE = Path(__file__).resolve().parent / "data" / "reference_logits.pt"
TWINS = ("sprout-bd", "sprout-ar")
MESSAGES = [{"role": "user",
             "content": "Please add 2 navy shirts in size M to my cart, then tell me the total for order A536."}]


def mode_logits(name: str) -> dict[str, torch.Tensor]:
    """Every inference mode's logits (fp32, CPU) for the fixed prompt."""
    backend = load(MODELS / name, device="cpu")
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


@pytest.mark.parametrize("name", TWINS)
def test_shipped_weights_give_the_stored_logits_bit_for_bit(name):
    stored = torch.load(REFERENCE)[name]
    got = mode_logits(name)
    assert sorted(got) == sorted(stored)
    for mode, logits in stored.items():
        assert got[mode].shape == logits.shape, mode
        assert torch.equal(got[mode], logits), f"{name} {mode}: max diff {(got[mode] - logits).abs().max():.3g}"


if __name__ == "__main__" and "--write" in sys.argv:
    torch.set_num_threads(1)
    REFERENCE.parent.mkdir(exist_ok=True)
    torch.save({name: mode_logits(name) for name in TWINS}, REFERENCE)
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size} bytes)")
