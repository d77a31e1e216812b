"""Sprout backends through engine.generate: the cached paths equal recomputation from scratch."""

import json

import pytest
import torch

from engine.backends.base import BackendError
from engine.backends.sprout import SproutARBackend, SproutBackend, load
from engine.generate import run
from engine.trace import GenerationConfig
from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
from training.checkpoints import save_model_folder

PROMPT = [{"role": "user", "content": "Add 2 pink hoodies in size XL."}]


class UncachedSprout(SproutBackend):
    """Slow reference: every denoise re-reads prompt + committed blocks from scratch."""

    def prefill(self, prompt_ids):
        self.prompt = self._ids(prompt_ids)

    def denoise(self, canvas, block):
        context = torch.cat([self.prompt, self._ids(canvas)[:, :block.start]], 1)
        cache, _ = self.model.prefill(context)
        return self.model.denoise(self._ids(canvas)[:, block], cache)

    def commit(self, canvas, block):
        pass


@pytest.mark.parametrize("sampler,steps", [("low_confidence", 4), ("threshold", 8), ("entropy_bounded", 8)])
def test_cached_diffusion_generation_equals_uncached(sampler, steps):
    model, tok = tiny_sprout(causal=False, seed=1), tiny_tokenizer()
    fast, slow = SproutBackend(model, tok), UncachedSprout(model, tok)
    ids = fast.encode_chat(PROMPT)
    cfg = GenerationConfig(gen_length=24, block_size=8, steps=steps, sampler=sampler, threshold=0.5,
                           stop_on_eos=False)
    a, b = run(fast, ids, cfg), run(slow, ids, cfg)
    assert a.token_ids == b.token_ids
    assert [f.canvas for f in a.frames] == [f.canvas for f in b.frames]


def test_ar_backend_matches_full_forward_greedy():
    model, tok = tiny_sprout(causal=True, seed=2), tiny_tokenizer()
    backend = SproutARBackend(model, tok)
    ids = backend.encode_chat(PROMPT)
    res = run(backend, ids, GenerationConfig(gen_length=12, block_size=4, stop_on_eos=False))
    seq = list(ids)
    with torch.no_grad():
        for _ in range(12):
            seq.append(int(model(torch.tensor([seq]))[0, -1].argmax()))
    assert res.frames[-1].canvas == seq[len(ids):]


def test_decode_keeps_tool_tags_and_drops_eos():
    tok = tiny_tokenizer()
    backend = SproutBackend(tiny_sprout(causal=False), tok)
    text = '<tool_call>{"name":"view_cart","arguments":{}}</tool_call><|eos|>'
    assert backend.decode(tok.encode(text)) == '<tool_call>{"name":"view_cart","arguments":{}}</tool_call>'
    assert backend.token_piece(backend.mask_id) == "<|mask|>"


def test_saved_folder_loads_as_the_right_twin(tmp_path):
    tok = tiny_tokenizer()
    for causal, cls in ((False, SproutBackend), (True, SproutARBackend)):
        out = tmp_path / ("ar" if causal else "bd")
        model = tiny_sprout(causal=causal)
        save_model_folder(model, tok, out, {"note": "test"})
        backend = load(out, device="cpu")
        assert isinstance(backend, cls)
        assert next(backend.model.parameters()).dtype == torch.float32       # bf16 on disk, fp32 on CPU
        assert json.loads((out / "training.json").read_text()) == {"note": "test"}


def test_corrupt_checkpoint_is_one_sentence(tmp_path):
    out = tmp_path / "broken"
    save_model_folder(tiny_sprout(causal=False), tiny_tokenizer(), out, {})
    (out / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(BackendError, match="could not be loaded"):
        load(out, device="cpu")
