"""The prompt cache (sprout/prompt_cache.py) against its slow reference, a whole prefill:
the same logits, the same replies, and only the new tokens run."""

import pytest
import torch

from engine.backends.sprout import SproutARBackend, SproutBackend
from engine.trace import GenerationConfig
from sprout.prompt_cache import PromptCache
from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
from world.agent import run_episode
from world.task_sets import load_heldout_tasks

SYSTEM = {"role": "system", "content": "You are Sprout. Tools: search_products, add_to_cart, finish."}
FIRST = [SYSTEM, {"role": "user", "content": "Add 2 pink hoodies in size XL."}]
LATER = FIRST + [{"role": "assistant", "content": '<tool_call>{"name": "view_cart", "arguments": {}}</tool_call>'},
                 {"role": "tool", "content": '{"items": []}'}]
OTHER = [SYSTEM, {"role": "user", "content": "Show me the invoices of Ada Park."}]


class WholePrefill(PromptCache):
    """The slow reference: every prompt prefilled from its first token, nothing kept."""

    def plan(self, ids, anchors=()):
        return None, [slice(0, ids.shape[1])]

    def _keep(self, key, cache):
        pass


@pytest.mark.parametrize("causal", [False, True])
@torch.inference_mode()
def test_reused_prefixes_give_the_logits_of_a_whole_prefill(causal):
    model, tok = tiny_sprout(causal=causal, seed=4), tiny_tokenizer()
    backend = (SproutARBackend if causal else SproutBackend)(model, tok)
    for messages in (FIRST, LATER, OTHER, FIRST):
        ids = backend.encode_chat(messages)
        backend.prefill(ids)
        fresh, last = model.prefill(torch.tensor([ids]))
        assert backend.settled_cache().length == fresh.length == len(ids)
        torch.testing.assert_close(backend.settled_cache().next_logits, last, atol=1e-4, rtol=1e-4)
        block = torch.full((1, 8), backend.mask_id)
        torch.testing.assert_close(model.denoise(block, backend.settled_cache()), model.denoise(block, fresh),
                                   atol=1e-4, rtol=1e-4)


def test_only_new_tokens_run():
    model, tok = tiny_sprout(causal=False, seed=4), tiny_tokenizer()
    backend = SproutBackend(model, tok)
    first, later, other = (backend.encode_chat(m) for m in (FIRST, LATER, OTHER))
    system_end = first.index(tok.convert_tokens_to_ids("<|user|>"))


    def prefill(ids):   # the prompt's last piece waits for the first denoise: settling the cache runs it
        backend.prefill(ids)
        return backend.settled_cache()

    prefill(first)
    assert backend.prompt_cache.tokens_run == len(first)
    prefill(later)                                           # the same conversation, one step on
    assert backend.prompt_cache.tokens_run == len(later)
    prefill(other)                                           # a new conversation: the system text is kept
    assert backend.prompt_cache.tokens_run == len(later) + len(other) - system_end
    prefill(other)                                           # the same prompt again runs nothing
    assert backend.prompt_cache.tokens_run == len(later) + len(other) - system_end


def test_the_cache_forgets_the_least_recently_used():
    model, tok = tiny_sprout(causal=False, seed=4), tiny_tokenizer()
    cache = PromptCache(size=2)
    ids = [torch.tensor([tok.encode(f"item {i} of the list")]) for i in range(3)]
    for t in ids:
        cache.prefill(model, t)
    run = cache.tokens_run
    cache.prefill(model, ids[0])                             # evicted: runs again
    assert cache.tokens_run == run + ids[0].shape[1]
    cache.prefill(model, ids[2])                             # kept: runs nothing
    assert cache.tokens_run == run + ids[0].shape[1]


@pytest.mark.parametrize("causal", [False, True])
def test_agent_episodes_are_the_same_with_and_without_the_cache(causal):
    tok = tiny_tokenizer()
    model = tiny_sprout(causal=causal, seed=5)
    cls = SproutARBackend if causal else SproutBackend
    cached, reference = cls(model, tok), cls(model, tok)
    reference.prompt_cache = WholePrefill()
    config = GenerationConfig(gen_length=32, block_size=8, steps=8, sampler="threshold", threshold=0.6)
    for task in load_heldout_tasks()[:4]:
        runs = [run_episode(backend, task, config, max_replies=3) for backend in (cached, reference)]
        replies = [[step.result.token_ids for step in transcript.steps] for transcript in runs]
        assert replies[0] and replies[0] == replies[1]
    assert cached.prompt_cache.tokens_run < reference.prompt_cache.tokens_run
