"""The tokenizer side of the transformers backends: special ids (EOS, end of turn, pad, mask)
and the chat / decode / token-piece helpers with the one context check (`HFTextMixin`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from engine.backends.base import BackendError, Capabilities
from engine.backends.hf_loading import context_length

# Tokens that end an assistant turn in common chat formats (Qwen, Llama 3, LLaDA, SDAR, Phi).
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<|end|>", "<|role_end|>",
                      "<end_of_turn>", "<turn|>")   # the last two: Gemma 3, Gemma 4 (and DiffusionGemma)


def special_ids(tokenizer: Any, model: torch.nn.Module | None = None) -> tuple[frozenset[int], int | None]:
    """(eos_ids, pad_id): EOS from tokenizer, generation config and model config, plus any
    end-of-turn token the vocabulary knows."""
    eos: set[int] = set()

    def add(value: Any) -> None:
        if value is None:
            return
        if isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                add(v)
        else:
            eos.add(int(value))

    add(getattr(tokenizer, "eos_token_id", None))
    if model is not None:
        add(getattr(getattr(model, "generation_config", None), "eos_token_id", None))
        add(getattr(getattr(model, "config", None), "eos_token_id", None))
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    for token in END_OF_TURN_TOKENS:
        if token in vocab:
            eos.add(int(vocab[token]))
    pad = getattr(tokenizer, "pad_token_id", None)
    return frozenset(eos), (int(pad) if pad is not None else None)


def resolve_mask_id(tokenizer: Any, *, label: str, mask_id: int | None = None, mask_token: str | None = None) -> int:
    """The mask id of a diffusion model: given directly, or looked up from its token string."""
    if mask_id is not None:
        return int(mask_id)
    if mask_token is None:
        token = getattr(tokenizer, "mask_token", None)
        if token is None:
            raise BackendError(f"Model '{label}' names no mask token and its tokenizer has none: "
                               f"set mask_token or mask_id in its preset or playground.json.")
        mask_token = token
    vocab = tokenizer.get_vocab()
    if mask_token not in vocab:
        raise BackendError(f"Model '{label}': mask token {mask_token!r} is not in its tokenizer's vocabulary.")
    return int(vocab[mask_token])


class HFTextMixin(Capabilities):
    """encode_chat / decode / token_piece over a transformers tokenizer (`self.tokenizer`).
    Backends set `self.mask_id` (diffusion) or leave it None (autoregressive)."""

    tokenizer: Any
    mask_id: int | None = None

    def _init_diffusion(self, model: Any, tokenizer: Any, name: str, device: torch.device, mask_id: int,
                        logit_shift: bool, max_length: int | None) -> None:
        """The attributes every transformers diffusion backend shares."""
        self.model, self.tokenizer, self.name, self.device = model, tokenizer, name, device
        self.mask_id, self.logit_shift = int(mask_id), bool(logit_shift)
        self.eos_ids, self.pad_id = special_ids(tokenizer, model)
        if self.pad_id == self.mask_id:  # pad must differ from mask, or padding reads as "undecided"
            self.pad_id = min(self.eos_ids) if self.eos_ids else None
        self.max_length = int(max_length or context_length(model, tokenizer))

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """Prompt ids ending where the assistant speaks: the chat template when the tokenizer
        has one, else plain `role: content` lines."""
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, Mapping) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
            if ids and isinstance(ids[0], list):  # a batch of one
                ids = ids[0]
            return [int(i) for i in ids]
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return [int(i) for i in tok.encode(text)]

    def _check_length(self, total: int) -> None:
        """The one context check of the transformers backends: prompt plus generation must fit."""
        if total > self.max_length:
            raise BackendError(f"Prompt plus generation is {total} tokens, more than the {self.max_length} that "
                               f"'{self.name}' can take: shorten the prompt or the generation length.")

    def decode(self, ids: list[int]) -> str:
        """Text of a span, special tokens removed (decode spans, never glue byte-level pieces)."""
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)

    def token_piece(self, token_id: int) -> str:
        """Display text of one token; special tokens (mask included) show as their token string."""
        tok = self.tokenizer
        token_id = int(token_id)
        token = tok.convert_ids_to_tokens(token_id)
        if token is None:
            return f"<{token_id}>"
        if token_id == self.mask_id or token_id in set(getattr(tok, "all_special_ids", ())):
            return str(token)
        return tok.convert_tokens_to_string([token])
