"""The catalog: presets are listed and valid, names resolve, every failure is one sentence,
and a tiny model saved to a folder under models/ loads and generates. Offline throughout."""

from __future__ import annotations

import json

import pytest

from engine import catalog
from engine.backends.base import BackendError
from engine.generate import run
from engine.trace import GenerationConfig
from tests import tiny_models as tm


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """Offline, an empty HF cache and an empty models/ folder of our own."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("DP_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path / "models"))
    (tmp_path / "models").mkdir()
    return tmp_path


@pytest.fixture(scope="module")
def tok():
    return tm.tiny_tokenizer()


def test_models_dir_default_and_override(monkeypatch, tmp_path):
    assert catalog.models_dir() == tmp_path / "models"
    monkeypatch.delenv("DP_MODELS_DIR")
    assert catalog.models_dir().name == "models" and (catalog.models_dir().parent / "engine").is_dir()


def test_presets_listed_with_valid_defaults():
    listed = {m["name"]: m for m in catalog.list_models()}
    expected = {
        "LLaDA-8B-Instruct": "full_attention", "Dream-v0-Instruct-7B": "full_attention",
        "Fast_dLLM_v2_1.5B": "block_causal", "Fast_dLLM_v2_7B": "block_causal",
        "SDAR-1.7B-Chat": "block_causal", "SDAR-4B-Chat": "block_causal", "LLaDA2.0-mini": "block_causal",
        "LLaDA2.1-mini": "block_causal",
        "Qwen2.5-1.5B-Instruct": "causal", "Qwen2.5-7B-Instruct": "causal", "Qwen3-1.7B": "causal",
        "DiffusionGemma-26B-A4B-it": "uniform_noise", "gemma-4-26B-A4B-it": "causal",
    }
    for name, driver in expected.items():
        entry = listed[name]
        assert (entry["driver"], entry["source"], entry["available"]) == (driver, "preset", False)
        assert entry["description"]
        GenerationConfig.from_dict(entry["defaults"])            # raises on a bad preset default
    shifted = {p.name for p in catalog.PRESETS if p.logit_shift}
    assert shifted == {"Dream-v0-Instruct-7B", "Fast_dLLM_v2_1.5B", "Fast_dLLM_v2_7B"}
    for preset in catalog.PRESETS:   # a mask exactly for the masked drivers (uniform noise has none)
        masked = preset.driver in ("full_attention", "block_causal")
        assert masked == (preset.mask_id is not None or preset.mask_token is not None)


def test_preset_available_from_hf_cache(_isolated):
    """A snapshot in the HF cache layout (refs/main -> snapshots/<rev>) makes a preset available."""
    repo = _isolated / "hub" / "models--GSAI-ML--LLaDA-8B-Instruct"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (snapshot / "config.json").write_text("{}")
    assert not {m["name"]: m for m in catalog.list_models()}["LLaDA-8B-Instruct"]["available"]
    (snapshot / "model.safetensors").write_bytes(b"")
    assert {m["name"]: m for m in catalog.list_models()}["LLaDA-8B-Instruct"]["available"]


def test_unknown_name_is_a_sentence():
    with pytest.raises(BackendError) as err:
        catalog.load_backend("foo")
    message = str(err.value)
    assert message.startswith("Unknown model 'foo': not a preset (choose one of LLaDA-8B-Instruct, ")
    assert message.endswith("and not a folder.")


def test_folder_without_config(_isolated):
    folder = _isolated / "empty"
    folder.mkdir()
    with pytest.raises(BackendError, match=r"^Folder .*empty has no config.json: it is not a model folder\.$"):
        catalog.load_backend(str(folder))


def test_missing_preset_names_the_model():
    with pytest.raises(BackendError) as err:
        catalog.load_backend("LLaDA-8B-Instruct", device="cpu")
    assert str(err.value) == (
        "Model 'LLaDA-8B-Instruct' (GSAI-ML/LLaDA-8B-Instruct) is not on this machine and cannot be downloaded "
        "here: run `huggingface-cli download GSAI-ML/LLaDA-8B-Instruct` on a machine with internet, or pass a "
        "local folder.")


def test_local_causal_folder_loads_and_generates(_isolated, tok):
    tm.save_tiny(_isolated / "models" / "tiny-ar", tm.tiny_causal_lm(), tok)
    listed = {m["name"]: m for m in catalog.list_models()}
    assert listed["tiny-ar"]["source"] == "local" and listed["tiny-ar"]["available"]
    assert listed["tiny-ar"]["driver"] == "causal" and listed["tiny-ar"]["kind"] == "autoregressive"
    backend = catalog.load_backend("tiny-ar", device="cpu")
    assert backend.kind == "autoregressive" and backend.name == "tiny-ar"
    result = run(backend, backend.encode_chat([{"role": "user", "content": "hi"}]),
                 GenerationConfig(gen_length=8, block_size=8, steps=1, stop_on_eos=False))
    assert result.stats.nfe == 8 and len(result.frames) == 8


@pytest.mark.parametrize(("driver", "shift"), [("full_attention", False), ("full_attention", True),
                                               ("block_causal", True)], ids=["llada", "dream", "fast-dllm"])
def test_local_diffusion_folder_with_playground_json(_isolated, tok, driver, shift):
    model = tm.tiny_masked_lm() if driver == "full_attention" else tm.tiny_block_lm()
    folder = tm.save_tiny(_isolated / "tiny-dllm", model, tok,
                          playground={"driver": driver, "mask_token": "<mask>", "logit_shift": shift})
    backend = catalog.load_backend(str(folder), device="cpu")        # a path, not under models/
    assert (backend.kind, backend.mask_id, backend.logit_shift) == ("diffusion", tm.MASK_ID, shift)
    config = GenerationConfig(gen_length=8, block_size=4, steps=4, sampler="low_confidence", stop_on_eos=False)
    result = run(backend, backend.encode_chat([{"role": "user", "content": "hi"}]), config)
    assert result.stats.nfe == 8 and tm.MASK_ID not in result.frames[-1].canvas


def test_playground_json_written_with_family_still_loads(_isolated, tok):
    """`family` was the key's name before `driver`: such a file is read as `driver`, never written."""
    assert catalog.renamed_keys({"family": "causal", "mask_id": 3}) == {"driver": "causal", "mask_id": 3}
    assert catalog.renamed_keys({"family": "causal", "driver": "block_causal"}) == {"driver": "block_causal"}
    tm.save_tiny(_isolated / "models" / "old-dllm", tm.tiny_masked_lm(), tok,
                 playground={"family": "full_attention", "mask_token": "<mask>"})
    preset = catalog.resolve("old-dllm")
    assert (preset.driver, preset.kind) == ("full_attention", "diffusion")
    listed = {m["name"]: m for m in catalog.list_models()}["old-dllm"]
    assert listed["driver"] == "full_attention" and "family" not in listed
    assert catalog.load_backend("old-dllm", device="cpu").mask_id == tm.MASK_ID


def test_playground_json_unknown_key(_isolated, tok):
    folder = tm.save_tiny(_isolated / "models" / "odd", tm.tiny_masked_lm(), tok,
                          playground={"driver": "full_attention", "mask": "<mask>"})
    with pytest.raises(BackendError, match="unknown key.*mask"):
        catalog.load_backend(str(folder))
    assert {m["name"]: m for m in catalog.list_models()}["odd"]["available"] is False


def test_corrupt_safetensors(_isolated, tok):
    folder = tm.save_tiny(_isolated / "models" / "broken", tm.tiny_causal_lm(), tok)
    (folder / "model.safetensors").write_bytes(b"this is not a safetensors file" * 10)
    with pytest.raises(BackendError, match=r"^Model 'broken' \(.*broken\) could not be loaded: .+"):
        catalog.load_backend("broken", device="cpu")


def test_preset_local_copy_under_models(_isolated):
    """models/<preset name>/ serves that preset from the folder."""
    folder = _isolated / "models" / "Qwen3-1.7B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    preset = catalog.resolve("Qwen3-1.7B")
    assert preset.local_path == str(folder.resolve()) and preset.driver == "causal"
    names = [m["name"] for m in catalog.list_models()]
    assert names.count("Qwen3-1.7B") == 1


def test_model_type_matches_a_preset(_isolated):
    folder = _isolated / "models" / "my-sdar"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "sdar"}))
    preset = catalog.resolve("my-sdar")
    assert (preset.driver, preset.mask_token, preset.options["store_flag"]) == ("block_causal", "<|MASK|>", "store_kv")


def test_list_rescans_every_call(_isolated):
    assert "late" not in [m["name"] for m in catalog.list_models()]
    folder = _isolated / "models" / "late"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "mystery"}))
    listed = {m["name"]: m for m in catalog.list_models()}
    assert listed["late"]["driver"] == "unknown" and not listed["late"]["available"]
    with pytest.raises(BackendError, match="playground.json"):
        catalog.load_backend("late")


def test_sprout_folder_goes_to_sprout_backend(_isolated):
    from engine.backends.sprout import SproutARBackend, SproutBackend
    from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
    from training.checkpoints import save_model_folder

    for name, causal, cls in (("sprout-bd", False, SproutBackend), ("sprout-ar", True, SproutARBackend)):
        save_model_folder(tiny_sprout(causal=causal), tiny_tokenizer(), _isolated / "models" / name, {})
        assert {m["name"]: m for m in catalog.list_models()}[name]["driver"] == "sprout"
        assert isinstance(catalog.load_backend(name, device="cpu"), cls)
    broken = _isolated / "models" / "sprout-broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "sprout"}))
    with pytest.raises(BackendError, match="could not be loaded"):
        catalog.load_backend("sprout-broken", device="cpu")


def test_folder_without_tokenizer(_isolated):
    tm.tiny_causal_lm().save_pretrained(_isolated / "models" / "no-tokenizer")
    with pytest.raises(BackendError, match="could not be loaded: the folder has no tokenizer"):
        catalog.load_backend("no-tokenizer", device="cpu")
