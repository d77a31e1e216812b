"""Tiny, seeded, randomly initialised stand-ins for the real models, built in code (nothing is
downloaded): a char-level tokenizer with pad/unk/bos/eos/mask, a bidirectional masked LM
(LLaDA-like; Dream-like is the same network read with a logit shift), a causal LM that the
block-causal backend drives with 4-D masks (SDAR / Fast-dLLM v2-like), and a plain causal LM.
All are Qwen2 networks: hidden 32, 2 layers, vocab 100."""

from __future__ import annotations

import json
from pathlib import Path

import torch

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>", "<mask>")
CHARS = ("\n",) + tuple(chr(c) for c in range(32, 126))   # newline + printable ASCII but "~": 95
VOCAB_SIZE = len(SPECIAL_TOKENS) + len(CHARS)         # 100
PAD_ID, UNK_ID, BOS_ID, EOS_ID, MASK_ID = range(5)
CHAT_TEMPLATE = (
    "{% for m in messages %}<bos>{{ m['role'] }}: {{ m['content'] }}<eos>{% endfor %}"
    "{% if add_generation_prompt %}<bos>assistant: {% endif %}"
)


def tiny_tokenizer(chat_template: bool = True):
    """Char-level PreTrainedTokenizerFast, 100 ids, specials first (pad 0 ... mask 4)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>",
        eos_token="<eos>", mask_token="<mask>", clean_up_tokenization_spaces=False,
    )
    if chat_template:
        tok.chat_template = CHAT_TEMPLATE
    return tok


def _qwen2(causal: bool, seed: int, attn: str):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=VOCAB_SIZE, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID, is_causal=causal,
        initializer_range=0.5,  # large weights: logits far apart, so argmax ties never happen
    )
    config._attn_implementation = attn
    return Qwen2ForCausalLM(config).eval()


def tiny_masked_lm(seed: int = 0, attn: str = "sdpa"):
    """Bidirectional (config.is_causal=False) Qwen2: the LLaDA / Dream stand-in."""
    return _qwen2(causal=False, seed=seed, attn=attn)


def tiny_block_lm(seed: int = 1, attn: str = "sdpa"):
    """Causal Qwen2 that takes custom 4-D masks: the SDAR / Fast-dLLM v2 stand-in."""
    return _qwen2(causal=True, seed=seed, attn=attn)


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
