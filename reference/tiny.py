"""Tiny randomly initialised stand-ins for the real dLLMs, built in code (nothing is
downloaded): a char-level tokenizer with pad/unk/bos/eos/mask (100 ids, specials first) and
Qwen2 networks, bidirectional (LLaDA / Dream) or causal driven with block-causal 4-D masks
(SDAR / Fast-dLLM v2 / LLaDA2). The decode benchmark and the tests both build theirs here."""

from __future__ import annotations

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


def random_qwen2(*, causal: bool, hidden: int, layers: int, seed: int, heads: int | None = None,
                 kv_heads: int | None = None, intermediate: int | None = None,
                 initializer_range: float = 0.02, attn: str = "sdpa", max_positions: int = 1024):
    """A seeded random Qwen2ForCausalLM over the tiny vocabulary (eval mode, float32, CPU)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    heads = heads or max(1, hidden // 32)
    config = Qwen2Config(
        vocab_size=VOCAB_SIZE, hidden_size=hidden, intermediate_size=intermediate or 4 * hidden,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads or heads,
        max_position_embeddings=max_positions, bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
        is_causal=causal, initializer_range=initializer_range,
    )
    config._attn_implementation = attn
    return Qwen2ForCausalLM(config).eval()
