"""The transformers backends on tiny seeded models: logit alignment (with and without shift),
denoise leaves the cache alone, the cached block-causal path equals its uncached reference
token for token, and AR step-by-step logits equal one full forward."""

from __future__ import annotations

import pytest
import torch

from engine.backends.base import AutoregressiveBackend, BackendError, DiffusionBackend
from engine.backends.block_causal import BlockCausalBackend
from engine.backends.causal_lm import CausalLMBackend
from engine.backends.full_attention import FullAttentionBackend
from engine.backends.hf_calls import cache_length
from engine.generate import run
from engine.trace import GenerationConfig
from tests import tiny_models as tm

CPU = torch.device("cpu")
ATOL = 1e-4


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tok():
    return tm.tiny_tokenizer()


@pytest.fixture(scope="module")
def prompt(tok):
    return torch.tensor([tok.encode("the cat sat")])          # (1, 11)


def full_logits(model, ids, mask=None):
    """Logits (1, T, V) of one plain forward, no cache."""
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=mask).logits.float()


# ---------------------------------------------------------------------------- full attention

@pytest.fixture(scope="module")
def masked_lm():
    return tm.tiny_masked_lm()


@pytest.mark.parametrize("shift", [False, True], ids=["llada-no-shift", "dream-shift"])
def test_full_attention_alignment(masked_lm, tok, prompt, shift):
    backend = FullAttentionBackend(masked_lm, tok, name="tiny", mask_id=tm.MASK_ID, logit_shift=shift, device=CPU)
    assert isinstance(backend, DiffusionBackend)
    canvas = torch.full((1, 8), tm.MASK_ID)
    canvas[0, :3] = torch.tensor(tok.encode("dog"))
    backend.prefill(prompt)
    block = slice(4, 8)
    logits = backend.denoise(canvas, block)
    assert logits.shape == (1, 4, tm.VOCAB_SIZE)
    ref = full_logits(masked_lm, torch.cat([prompt, canvas], dim=1))          # (1, P + L, V)
    p = prompt.shape[1]
    first = p + block.start - (1 if shift else 0)                               # hidden i-1 predicts i
    torch.testing.assert_close(logits[:, 0], ref[:, first], atol=ATOL, rtol=0)
    torch.testing.assert_close(logits, ref[:, first:first + 4], atol=ATOL, rtol=0)
    torch.testing.assert_close(backend.denoise(canvas, block), logits)          # no hidden state
    if shift:  # block at 0: predicted by the last prompt position
        torch.testing.assert_close(backend.denoise(canvas, slice(0, 4))[:, 0], ref[:, p - 1], atol=ATOL, rtol=0)


def test_full_attention_is_bidirectional(masked_lm, tok, prompt):
    backend = FullAttentionBackend(masked_lm, tok, name="tiny", mask_id=tm.MASK_ID, logit_shift=False, device=CPU)
    backend.prefill(prompt)
    canvas = torch.full((1, 8), tm.MASK_ID)
    before = backend.denoise(canvas, slice(0, 4))
    canvas[0, 7] = tok.convert_tokens_to_ids("z")                              # a later position changes ...
    assert not torch.allclose(before, backend.denoise(canvas, slice(0, 4)))     # ... earlier logits move


@pytest.mark.parametrize("attention", ["bool", "additive"])
def test_full_attention_explicit_mask_matches(masked_lm, tok, prompt, attention):
    plain = FullAttentionBackend(masked_lm, tok, name="t", mask_id=tm.MASK_ID, logit_shift=False, device=CPU)
    masked = FullAttentionBackend(masked_lm, tok, name="t", mask_id=tm.MASK_ID, logit_shift=False, device=CPU,
                                  attention=attention)
    canvas = torch.full((1, 8), tm.MASK_ID)
    for b in (plain, masked):
        b.prefill(prompt)
    torch.testing.assert_close(plain.denoise(canvas, slice(0, 8)), masked.denoise(canvas, slice(0, 8)),
                               atol=ATOL, rtol=0)


# ---------------------------------------------------------------------------- block causal

@pytest.fixture(scope="module")
def block_lm():
    return tm.tiny_block_lm()


def block_backend(model, tok, shift, style="additive", use_cache=True):
    return BlockCausalBackend(model, tok, name="tiny", mask_id=tm.MASK_ID, logit_shift=shift, device=CPU,
                              mask_style=style, use_cache=use_cache)


CASES = [(False, "additive"), (True, "additive"), (False, "bool"), (True, "bool")]
CASE_IDS = ["sdar-additive", "fastdllm-shift-additive", "sdar-bool", "fastdllm-shift-bool"]


@pytest.mark.parametrize(("shift", "style"), CASES, ids=CASE_IDS)
def test_block_denoise_reads_cache_without_writing(block_lm, tok, prompt, shift, style):
    backend = block_backend(block_lm, tok, shift, style)
    backend.prefill(prompt)
    p = prompt.shape[1]
    assert cache_length(backend.cache) == p
    canvas = torch.full((1, 8), tm.MASK_ID)
    first = backend.denoise(canvas, slice(0, 4))
    assert first.shape == (1, 4, tm.VOCAB_SIZE)
    assert cache_length(backend.cache) == p
    torch.testing.assert_close(backend.denoise(canvas, slice(0, 4)), first)     # same cache, same logits
    if shift:  # block position 0 comes from the last prompt position (prefill is plain causal)
        torch.testing.assert_close(first[:, 0], full_logits(block_lm, prompt)[:, -1], atol=ATOL, rtol=0)
    canvas[0, :4] = first.argmax(-1)[0]
    backend.commit(canvas, slice(0, 4))
    assert cache_length(backend.cache) == p + 4
    backend.denoise(canvas, slice(4, 8))
    assert cache_length(backend.cache) == p + 4


def test_block_attention_is_bidirectional_inside_the_block(block_lm, tok, prompt):
    backend = block_backend(block_lm, tok, shift=False)
    backend.prefill(prompt)
    canvas = torch.full((1, 4), tm.MASK_ID)
    before = backend.denoise(canvas, slice(0, 4))
    canvas[0, 3] = tok.convert_tokens_to_ids("z")
    assert not torch.allclose(before[:, 0], backend.denoise(canvas, slice(0, 4))[:, 0])


@pytest.mark.parametrize(("shift", "style"), CASES, ids=CASE_IDS)
def test_block_cached_equals_uncached_round_by_round(block_lm, tok, prompt, shift, style):
    """Greedy, one token per round: every round's logits agree, so every token does."""
    cached, reference = block_backend(block_lm, tok, shift, style), block_backend(block_lm, tok, shift, style, False)
    canvases = []
    for backend in (cached, reference):
        backend.prefill(prompt)
        canvases.append(torch.full((1, 12), tm.MASK_ID))
    for start in range(0, 12, 4):
        block = slice(start, start + 4)
        for _ in range(4):
            logits = [b.denoise(c, block) for b, c in zip((cached, reference), canvases)]
            torch.testing.assert_close(logits[0], logits[1], atol=ATOL, rtol=0)
            for lg, canvas in zip(logits, canvases):
                lg = lg[0].clone()
                lg[:, tm.MASK_ID] = float("-inf")
                masked = canvas[0, block] == tm.MASK_ID
                conf = lg.softmax(-1).max(-1).values.masked_fill(~masked, -1.0)
                i = int(conf.argmax())
                canvas[0, start + i] = lg[i].argmax()
        assert torch.equal(canvases[0], canvases[1])
        for b, c in zip((cached, reference), canvases):
            b.commit(c, block)


@pytest.mark.parametrize("shift", [False, True], ids=["no-shift", "shift"])
def test_block_cached_generation_equals_uncached(block_lm, tok, prompt, shift):
    config = GenerationConfig(gen_length=16, block_size=4, steps=4, sampler="low_confidence", stop_on_eos=False)
    results = [run(block_backend(block_lm, tok, shift, use_cache=u), prompt[0].tolist(), config)
               for u in (True, False)]
    assert results[0].token_ids == results[1].token_ids
    assert [f.canvas for f in results[0].frames] == [f.canvas for f in results[1].frames]
    assert results[0].stats.nfe == 16


def test_block_eager_attention_additive_mask(tok, prompt):
    model = tm.tiny_block_lm(attn="eager")
    cached, reference = block_backend(model, tok, True), block_backend(model, tok, True, use_cache=False)
    canvas = torch.full((1, 4), tm.MASK_ID)
    for b in (cached, reference):
        b.prefill(prompt)
    torch.testing.assert_close(cached.denoise(canvas, slice(0, 4)), reference.denoise(canvas, slice(0, 4)),
                               atol=ATOL, rtol=0)


def test_block_store_flag_is_passed(block_lm, tok, prompt, monkeypatch):
    """Models that write their cache only when told (SDAR store_kv) get True for prefill/commit."""
    seen = []
    original = block_lm.forward

    def forward(input_ids=None, cache=None, store_kv=None, **kwargs):
        seen.append(store_kv)
        return original(input_ids=input_ids, cache=cache, **kwargs)

    monkeypatch.setattr(block_lm, "forward", forward)
    backend = BlockCausalBackend(block_lm, tok, name="t", mask_id=tm.MASK_ID, logit_shift=False, device=CPU,
                                 store_flag="store_kv")
    backend.prefill(prompt)
    canvas = torch.full((1, 4), tm.MASK_ID)
    backend.denoise(canvas, slice(0, 4))
    backend.commit(canvas, slice(0, 4))
    assert seen == [True, False, True]
    assert cache_length(backend.cache) == prompt.shape[1] + 4


def test_block_out_of_order_is_a_sentence(block_lm, tok, prompt):
    backend = block_backend(block_lm, tok, shift=False)
    backend.prefill(prompt)
    with pytest.raises(BackendError, match="commit each finished block"):
        backend.denoise(torch.full((1, 8), tm.MASK_ID), slice(4, 8))


# ---------------------------------------------------------------------------- causal LM

def test_causal_steps_equal_full_forward(tok, prompt):
    model = tm.tiny_causal_lm()
    backend = CausalLMBackend(model, tok, name="tiny-ar", device=CPU)
    assert isinstance(backend, AutoregressiveBackend)
    continuation = tok.encode(" on a mat")
    ref = full_logits(model, torch.cat([prompt, torch.tensor([continuation])], dim=1))   # (1, P + N, V)
    p = prompt.shape[1]
    got = [backend.prefill(prompt)]
    got += [backend.step(t) for t in continuation]
    assert got[0].shape == (1, tm.VOCAB_SIZE)
    torch.testing.assert_close(torch.stack(got, dim=1), ref[:, p - 1:], atol=ATOL, rtol=0)
    assert cache_length(backend.cache) == p + len(continuation)


# ---------------------------------------------------------------------------- text side

def test_text_helpers(masked_lm, tok):
    backend = FullAttentionBackend(masked_lm, tok, name="t", mask_id=tm.MASK_ID, logit_shift=False, device=CPU)
    assert backend.eos_ids == frozenset({tm.EOS_ID}) and backend.pad_id == tm.PAD_ID
    assert backend.max_length == 256
    chat = [{"role": "user", "content": "hi"}]
    assert tok.decode(backend.encode_chat(chat)) == "<bos>user: hi<eos><bos>assistant: "
    plain = FullAttentionBackend(masked_lm, tm.tiny_tokenizer(chat_template=False), name="t",
                                 mask_id=tm.MASK_ID, logit_shift=False, device=CPU)
    assert plain.decode(plain.encode_chat(chat)) == "user: hi\nassistant: "
    assert backend.decode(tok.encode("a b") + [tm.EOS_ID, tm.MASK_ID]) == "a b"
    assert backend.token_piece(tm.MASK_ID) == "<mask>"
    assert backend.token_piece(tok.convert_tokens_to_ids(" ")) == " "
    assert backend.token_piece(tok.convert_tokens_to_ids("q")) == "q"
    assert backend.token_piece(10_000) == "<10000>"
