"""Loading a transformers model and tokenizer as one sentence-or-success step, and what a
folder's config says (its context length)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.placement import pick_dtype, pick_placement

# Config fields that hold the context length, in the order models use them.
CONTEXT_FIELDS = ("max_position_embeddings", "max_sequence_length", "n_positions", "seq_length")
DEFAULT_CONTEXT = 4096
LOADERS = ("AutoModel", "AutoModelForCausalLM", "AutoModelForImageTextToText")   # the last: DiffusionGemma
# Any one of these in a folder means a tokenizer was saved there (fast, sentencepiece or BPE files).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


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
