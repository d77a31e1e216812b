"""Tiny, seeded, randomly initialised stand-ins for the real models, built in code (nothing is
downloaded): a char-level tokenizer with pad/unk/bos/eos/mask, a bidirectional masked LM
(LLaDA-like; Dream-like is the same network read with a logit shift), a causal LM that the
block-causal backend drives with 4-D masks (SDAR / Fast-dLLM v2-like), and a plain causal LM.
All are Qwen2 networks: hidden 32, 2 layers, vocab 100."""

from __future__ import annotations

import json
from pathlib import Path

from reference.tiny import (  # noqa: F401  (the tests read them from here)
    BOS_ID,
    CHARS,
    CHAT_TEMPLATE,
    EOS_ID,
    MASK_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    VOCAB_SIZE,
    random_qwen2,
    tiny_tokenizer,
)


def _qwen2(causal: bool, seed: int, attn: str):
    # large weights (initializer_range 0.5): logits far apart, so argmax ties never happen
    return random_qwen2(causal=causal, hidden=32, layers=2, seed=seed, heads=4, kv_heads=2, intermediate=64,
                        initializer_range=0.5, attn=attn, max_positions=256)


def tiny_masked_lm(seed: int = 0, attn: str = "sdpa"):
    """Bidirectional (config.is_causal=False) Qwen2: the LLaDA / Dream stand-in."""
    return _qwen2(causal=False, seed=seed, attn=attn)


def tiny_block_lm(seed: int = 1, attn: str = "sdpa"):
    """Causal Qwen2 that takes custom 4-D masks: the SDAR / Fast-dLLM v2 stand-in."""
    return _qwen2(causal=True, seed=seed, attn=attn)


def tiny_block_backend(seed: int, logit_shift: bool):
    """The block-causal backend over a tiny_block_lm whose mask logit is damped (as trained
    dLLMs give the mask ~0 probability): the SDAR / Fast-dLLM v2 stand-in the engine drives."""
    import torch

    from engine.backends.block_causal import BlockCausalBackend
    from reference.noise import damp_mask_logit

    model = damp_mask_logit(tiny_block_lm(seed=seed), MASK_ID)
    return BlockCausalBackend(model, tiny_tokenizer(), name="tiny", mask_id=MASK_ID, logit_shift=logit_shift,
                              device=torch.device("cpu"), mask_style="additive")


def tiny_causal_lm(seed: int = 2, attn: str = "sdpa"):
    """Plain causal Qwen2: the AR baseline stand-in."""
    return _qwen2(causal=True, seed=seed, attn=attn)


def save_tiny(folder: str | Path, model, tokenizer, playground: dict | None = None) -> Path:
    """save_pretrained model + tokenizer into `folder` (safetensors), plus playground.json when
    given (how the catalog drives a folder it cannot recognise by model_type)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if playground is not None:
        (folder / "playground.json").write_text(json.dumps(playground, indent=2), encoding="utf-8")
    return folder
