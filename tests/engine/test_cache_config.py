"""GenerationConfig.cache: validated like every other setting, and refused with a sentence by
backends that cannot use it, before anything runs."""

from __future__ import annotations

import pytest
import torch

import tests.tiny_models as tm
from engine.backends.full_attention import FullAttentionBackend
from engine.generate import generate, run
from engine.presets import PRESETS_BY_NAME
from engine.trace import CACHE_MODES, ConfigError, GenerationConfig
from tests.fakes import FakeARBackend, FakeDiffusionBackend

PROMPT = [5, 6, 7]


def test_the_modes_and_the_default():
    assert CACHE_MODES == ("none", "prefix", "dual")
    assert GenerationConfig().cache == "none"
    for mode in CACHE_MODES:
        assert GenerationConfig(cache=mode).cache == mode
    assert GenerationConfig.from_dict({"cache": "dual"}).replace(cache="prefix").cache == "prefix"


@pytest.mark.parametrize("value", ["kv", "", "Dual", None, 1, ["dual"]])
def test_an_unknown_cache_is_a_sentence(value):
    with pytest.raises(ConfigError) as caught:
        GenerationConfig(cache=value)
    message = str(caught.value)
    assert message.startswith("Unknown cache") and "choose one of none, prefix, dual" in message


@pytest.mark.parametrize("changes, words", [
    ({"scaffold": True}, "turn scaffolded decoding off"),
    ({"schema": {"type": "integer"}}, "turn scaffolded decoding off"),
    ({"aligned_blocks": True}, "turn aligned blocks off"),
    ({"sub_block_size": 4}, "turn sub-blocks off"),
])
@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_a_cache_with_another_loop_is_refused(changes, words, cache):
    with pytest.raises(ConfigError) as caught:
        GenerationConfig(cache=cache, **changes)
    assert f"The {cache} cache follows blocks" in str(caught.value) and words in str(caught.value)
    GenerationConfig(cache="none", **changes)                                  # fine without the cache


@pytest.mark.parametrize("backend", [FakeDiffusionBackend("hi"), FakeARBackend("hi")], ids=["diffusion", "ar"])
def test_a_backend_without_this_cache_refuses_it_before_running(backend):
    with pytest.raises(ConfigError, match="cannot use the dual cache.*Set cache to none"):
        generate(backend, PROMPT, GenerationConfig(gen_length=8, block_size=4, steps=4, cache="dual"))
    assert getattr(backend, "denoise_calls", 0) == 0
    assert run(backend, PROMPT, GenerationConfig(gen_length=8, block_size=4, steps=4)).frames   # none still runs


def test_a_block_causal_backend_refuses_it():
    backend = tm.tiny_block_backend(seed=1, logit_shift=False)
    with pytest.raises(ConfigError, match="only full-attention diffusion models"):
        generate(backend, PROMPT, GenerationConfig(gen_length=8, block_size=4, steps=4, cache="prefix"))


def test_a_full_attention_model_whose_forward_takes_no_cache_refuses_it():
    class NoCache(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask=None):
            return self.inner(input_ids=input_ids)

    backend = FullAttentionBackend(NoCache(tm.tiny_masked_lm()), tm.tiny_tokenizer(), name="nocache",
                                   mask_id=tm.MASK_ID, logit_shift=False, device=torch.device("cpu"))
    assert backend.cache_modes == ("none",)
    with pytest.raises(ConfigError, match="nocache cannot use the prefix cache: its forward takes no keys"):
        generate(backend, PROMPT, GenerationConfig(gen_length=8, block_size=4, steps=4, cache="prefix"))


def test_a_model_that_ignores_the_cache_is_refused_at_its_first_forward():
    """A forward that accepts a cache but never hands it keys and values (LLaDA's hub code refuses
    one outright): one sentence, not a silent no-cache run."""
    from engine.backends.base import BackendError

    class Ignores(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config = inner, inner.config

        def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None):
            return self.inner(input_ids=input_ids)

    backend = FullAttentionBackend(Ignores(tm.tiny_masked_lm()), tm.tiny_tokenizer(), name="ignores",
                                   mask_id=tm.MASK_ID, logit_shift=False, device=torch.device("cpu"))
    with pytest.raises(BackendError, match="did not hand its attention keys and values to the cache"):
        run(backend, PROMPT, GenerationConfig(gen_length=8, block_size=4, steps=4, cache="dual"))


def test_the_presets_name_their_upstream_demos_cache():
    """LLaDA's generate.py and Dream's demo decode without a cache; the reference stays none."""
    for name in ("LLaDA-8B-Instruct", "Dream-v0-Instruct-7B"):
        assert PRESETS_BY_NAME[name].defaults["cache"] == "none"
