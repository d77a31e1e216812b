"""What every `transformers`-backed backend shares: loading a model + tokenizer as one
sentence-or-success step, the chat / decode / token-piece text helpers, special ids,
and a single `call_model` that hides the differences between model forward signatures
(`cache=` in transformers 5, `past_key_values=` in remote code) and 4-D mask formats."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from engine.backends.base import BackendError, pick_dtype, pick_placement

# Tokens that end an assistant turn in common chat formats (Qwen, Llama 3, LLaDA, SDAR, Phi).
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<|end|>", "<|role_end|>")
# Config fields that hold the context length, in the order models use them.
CONTEXT_FIELDS = ("max_position_embeddings", "max_sequence_length", "n_positions", "seq_length")
DEFAULT_CONTEXT = 4096
LOADERS = ("AutoModel", "AutoModelForCausalLM")
# Any one of these in a folder means a tokenizer was saved there (fast, sentencepiece or BPE files).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


# ---------------------------------------------------------------------------- loading

def load_pretrained(
    source: str, *, label: str, loader: str = "AutoModelForCausalLM", trust_remote_code: bool = False,
    device: str = "auto", local_files_only: bool = True,
) -> tuple[torch.nn.Module, Any, torch.device]:
    """Model (eval mode, on its device, bf16 on CUDA / fp32 elsewhere), tokenizer and device.

    `source` is a folder or a hub id; every failure becomes one BackendError sentence."""
    import transformers

    if loader not in LOADERS:
        raise BackendError(f"Unknown loader {loader!r} for model '{label}'; use one of {', '.join(LOADERS)}.")
    folder = Path(source)
    if folder.is_dir() and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise BackendError(f"Model '{label}' ({source}) could not be loaded: the folder has no tokenizer "
                           f"(none of {', '.join(TOKENIZER_FILES)}); save the tokenizer next to the weights.")
    dev, device_map = pick_placement(device)
    dtype = pick_dtype(dev)
    auto = getattr(transformers, loader)
    spread = {"device_map": device_map} if device_map else {}                 # several GPUs: accelerate
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            source, trust_remote_code=trust_remote_code, local_files_only=local_files_only)
        model = auto.from_pretrained(
            source, dtype=dtype, trust_remote_code=trust_remote_code, local_files_only=local_files_only, **spread)
    except BackendError:
        raise
    except Exception as exc:  # noqa: BLE001 - every loader failure becomes a sentence
        raise BackendError(f"Model '{label}' ({source}) could not be loaded: {short_reason(exc)}") from exc
    if not device_map:
        model.to(dev)
    return model.eval(), tokenizer, dev


def short_reason(exc: BaseException, limit: int = 200) -> str:
    """First line of an exception, trimmed: enough to recognise, short enough for a toast."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if not text.endswith((".", "!", "?")):
        text += "."
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def read_config(folder: str | Path) -> dict[str, Any]:
    """config.json of a model folder as a dict; a sentence when it is missing or unreadable."""
    import json

    path = Path(folder) / "config.json"
    if not path.is_file():
        raise BackendError(f"Folder {folder} has no config.json: it is not a model folder.")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackendError(f"Model folder {folder} could not be loaded: config.json is unreadable ({exc}).") from exc
    if not isinstance(config, dict):
        raise BackendError(f"Model folder {folder} could not be loaded: config.json holds a JSON "
                           f"{type(config).__name__.replace('NoneType', 'null')}, not an object of settings.")
    return config


# ---------------------------------------------------------------------------- ids and sizes

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


def context_length(model: torch.nn.Module, tokenizer: Any) -> int:
    """Tokens the model can take (prompt + generated)."""
    config = getattr(model, "config", None)
    for name in CONTEXT_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < 10_000_000:
        return value
    return DEFAULT_CONTEXT


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


# ---------------------------------------------------------------------------- the text side

class HFTextMixin:
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


# ---------------------------------------------------------------------------- the model side

def as_batch(ids: torch.Tensor) -> torch.Tensor:
    """(T,) or (1, T) ids -> (1, T) long."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids[None] if ids.dim() == 1 else ids


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    return next(model.parameters()).dtype


def format_mask(allowed: torch.Tensor, style: str, dtype: torch.dtype) -> torch.Tensor:
    """(Q, K) bool `allowed` -> a (1, 1, Q, K) mask in the form the model adds or selects with:
    `bool` (True = attend; SDPA-only models such as SDAR) or `additive` (0 / dtype min; works with
    both eager and SDPA attention in transformers, and with models that add the mask)."""
    allowed = allowed[None, None]                                   # (1, 1, Q, K)
    if style == "bool":
        return allowed
    if style == "additive":
        zero = torch.zeros((), dtype=dtype, device=allowed.device)
        return torch.where(allowed, zero, torch.finfo(dtype).min)
    raise BackendError(f"Unknown attention mask style {style!r}; use 'additive' or 'bool'.")


def _forward_params(model: torch.nn.Module) -> set[str]:
    return set(inspect.signature(model.forward).parameters)


def new_cache(model: torch.nn.Module) -> Any:
    """An empty DynamicCache (layers appear as they are written)."""
    from transformers import DynamicCache

    return DynamicCache()


def cache_length(cache: Any) -> int:
    return int(cache.get_seq_length()) if cache is not None else 0


def call_model(model: torch.nn.Module, input_ids: torch.Tensor, *, cache: Any = None, last_only: bool = False,
               **kwargs: Any) -> tuple[torch.Tensor, Any]:
    """One forward: (1, T) ids -> (logits (1, T, V) in the model's dtype, the cache after the call).
    `cache` goes in as `cache` (transformers 5) or `past_key_values` (remote code for 4.x);
    `last_only` asks models that support it for the last position only (logits (1, 1, V)):
    a long prompt's full logits would not fit. Other kwargs pass through."""
    params = _forward_params(model)
    if cache is not None:
        kwargs["cache" if "cache" in params else "past_key_values"] = cache
        kwargs.setdefault("use_cache", True)
    if last_only and "logits_to_keep" in params:
        kwargs["logits_to_keep"] = 1
    with torch.inference_mode():
        out = model(input_ids=input_ids, **kwargs)
    logits = out["logits"] if isinstance(out, Mapping) else out[0]
    returned = None
    if isinstance(out, Mapping):
        keys = set(out.keys())
        returned = out["cache"] if "cache" in keys else out["past_key_values"] if "past_key_values" in keys else None
    if returned is not None and hasattr(returned, "get_seq_length"):
        cache = returned
    return logits, cache


def restore_cache(cache: Any, length: int, snapshot: Any = None) -> Any:
    """Undo whatever a read-only forward appended: crop back to `length`, or fall back to a
    deep copy taken before the call for caches that cannot crop."""
    extra = cache_length(cache) - length
    if extra == 0:
        return cache
    if hasattr(cache, "crop") and extra > 0:
        cache.crop(-extra)  # a negative count removes that many tokens (transformers 4.x and 5.x)
        return cache
    if snapshot is not None:
        return snapshot
    raise BackendError("The model's cache cannot be cropped, so denoising would corrupt it; "
                       "run this model with use_cache disabled.")


def snapshot_if_needed(cache: Any) -> Any:
    """A deep copy only for caches without `crop` (DynamicCache crops in place)."""
    return None if hasattr(cache, "crop") else copy.deepcopy(cache)
