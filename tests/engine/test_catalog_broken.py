"""A broken folder under models/ is listed as broken with its reason, and every other model stays
listed and selectable: an array config.json, an empty one, weights that cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import catalog

BUNDLED = ("sprout-bd", "sprout-ar")
REPO_MODELS = Path(__file__).resolve().parents[2] / "models"


def _folder(root: Path, name: str, config: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "config.json").write_text(config)
    return folder


def _broken_folders(root: Path) -> dict[str, str]:
    """name -> words its reason must contain."""
    _folder(root, "array-config", "[1, 2, 3]")
    _folder(root, "empty-config", "")
    _folder(root, "null-config", "null")
    causal = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    corrupt = _folder(root, "corrupt-weights", causal)
    (corrupt / "model.safetensors").write_bytes(b"\xff" * 8 + b"not json")
    garbage_header = _folder(root, "garbage-header", causal)
    (garbage_header / "model.safetensors").write_bytes((12).to_bytes(8, "little") + b"{not json!!}")
    empty = _folder(root, "empty-weights", causal)
    (empty / "pytorch_model.bin").write_bytes(b"")
    dangling = _folder(root, "dangling-weights", causal)
    (dangling / "model.safetensors").symlink_to(root / "nowhere.safetensors")
    return {"array-config": "JSON list", "empty-config": "unreadable", "null-config": "JSON null",
            "corrupt-weights": "safetensors", "garbage-header": "corrupt safetensors header",
            "empty-weights": "empty", "dangling-weights": "cannot be read"}


@pytest.fixture
def models(monkeypatch, tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    for name in BUNDLED:
        (root / name).symlink_to(REPO_MODELS / name, target_is_directory=True)
    monkeypatch.setenv("DP_MODELS_DIR", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return root


def test_each_broken_folder_is_listed_with_its_reason(models):
    expected = _broken_folders(models)
    listed = {m["name"]: m for m in catalog.list_models()}
    for name, words in expected.items():
        row = listed[name]
        assert row["available"] is False and row["kind"] == "unknown", row
        assert words in row["broken"] and row["description"].startswith("Broken: "), row
        assert "Traceback" not in row["broken"] and len(row["broken"]) < 400
    for name in BUNDLED:
        assert listed[name]["available"] is True and listed[name]["broken"] is None


def test_bundled_models_stay_selectable_next_to_broken_folders(models, tmp_path):
    from app.state import AppContext

    _broken_folders(models)
    ctx = AppContext.create(tmp_path / "sessions.db", model="sprout-bd", baseline="sprout-ar", watch=False)
    try:
        picked = [name for _label, name in ctx.registry.choices()]
        assert set(BUNDLED) <= set(picked)
        assert not set(picked) & {"array-config", "empty-config", "corrupt-weights", "dangling-weights"}
        assert not any("not available" in notice for notice in ctx.notices), ctx.notices
    finally:
        ctx.close()


def test_a_good_folder_has_no_weights_problem(models):
    assert catalog.weights_problem(REPO_MODELS / "sprout-bd") is None
