"""Sprout's tokenizer: a small byte-level BPE trained with `tokenizers` on the world corpus.

Digits are split one per token, so a model copies an id like "P3K7" digit by digit instead
of memorising number chunks. The chat markers and tool tags are single special tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from sprout.chat import EOS, MASK, PAD, SPECIAL_TOKENS


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """BPE over bytes, every special token atomic, one token per digit."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), min_frequency=2)
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, mask_token=MASK, eos_token=EOS, pad_token=PAD,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (MASK, EOS, PAD)])
    fast.model_max_length = 4096
    return fast


def load_tokenizer(folder: str | Path) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast.from_pretrained(str(folder))
