"""What a run writes: a model folder the playground loads (weights in bf16, tokenizer, config,
training.json), and any state file atomically (temp file, then os.replace), so a stopped run never
leaves half a file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

from sprout.modeling import SproutModel


def save_model_folder(model: SproutModel, tokenizer, out: Path, extra: dict) -> None:
    """bf16 weights + config + tokenizer into `out`, each file replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}-"))
    try:
        bf16 = SproutModel(model.config)
        bf16.load_state_dict(model.state_dict())
        bf16.to(torch.bfloat16).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "training.json").write_text(json.dumps(extra, indent=2))
        # the weights last, so a watcher that reacts to them finds config and tokenizer ready
        names = sorted(p.name for p in tmp.iterdir() if p.is_file())
        names.sort(key=lambda n: n.endswith(".safetensors"))
        for name in names:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)
