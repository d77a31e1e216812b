"""Where a model goes: one device, one chosen GPU, or spread over several GPUs (accelerate)."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends import hf_loading
from engine.backends.base import BackendError
from engine.backends.placement import plan_placement


@pytest.mark.parametrize("name, gpus, mps, expected", [
    ("auto", 0, False, ("cpu", None)),
    ("auto", 0, True, ("mps", None)),
    ("auto", 1, False, ("cuda", None)),
    ("auto", 4, False, ("cuda:0", "auto")),
    ("cuda", 2, False, ("cuda:0", "auto")),
    ("cuda", 1, False, ("cuda", None)),
    ("cuda:1", 2, False, ("cuda:1", None)),
    ("CUDA:0", 1, False, ("cuda:0", None)),
    ("cpu", 8, False, ("cpu", None)),
])
def test_placement(name, gpus, mps, expected):
    device, device_map = plan_placement(name, gpus, mps)
    assert (str(device), device_map) == expected


@pytest.mark.parametrize("name, gpus, words", [
    ("cuda:2", 2, "cuda:0 to cuda:1"),
    ("cuda:x", 2, "does not exist"),
    ("cuda:0", 0, "no CUDA GPU"),
    ("cuda", 0, "no CUDA GPU"),
    ("tpu", 0, "cuda:N"),
])
def test_impossible_devices_are_sentences(name, gpus, words):
    with pytest.raises(BackendError, match=words):
        plan_placement(name, gpus)


def test_a_spread_load_runs_the_same_model(tmp_path, monkeypatch):
    """The device_map path of load_pretrained (taken with several GPUs) loads through accelerate;
    on this CPU-only machine accelerate puts every layer on the CPU, and the logits are the same."""
    folder = tm.save_tiny(tmp_path / "tiny", tm.tiny_causal_lm(), tm.tiny_tokenizer())
    plain, _, _ = hf_loading.load_pretrained(str(folder), label="tiny", device="cpu")
    import transformers

    seen: dict = {}
    original = transformers.AutoModelForCausalLM.from_pretrained

    def recording(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recording)
    monkeypatch.setattr(hf_loading, "pick_placement", lambda name: (torch.device("cpu"), "auto"))
    spread, _, device = hf_loading.load_pretrained(str(folder), label="tiny", device="auto")
    assert seen["device_map"] == "auto" and device == torch.device("cpu")
    assert {p.device.type for p in spread.parameters()} == {"cpu"}
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        assert torch.equal(plain(input_ids=ids).logits, spread(input_ids=ids).logits)
