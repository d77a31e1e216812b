"""The model catalog: a table of presets (the open dLLMs and AR baselines people use) plus
every model folder under `models/`, re-scanned on every call. `load_backend` turns a name or
a folder into a ready backend, or raises one BackendError sentence saying what to do.

Nothing here touches the network: a preset is used only when its weights are already in the
Hugging Face cache (or in models/<preset name>/); set DP_ALLOW_DOWNLOAD=1 to let transformers
fetch a missing one. A folder that transformers cannot recognise by its model_type can carry a
playground.json (keys: PLAYGROUND_KEYS) that says which driver serves it and with what mask.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine.backends.base import Backend, BackendError
from engine.backends.hf_loading import load_pretrained, read_config
from engine.backends.hf_text import resolve_mask_id
from engine.backends.remote import PREFIX as REMOTE_PREFIX
from engine.backends.remote import parse_spec

# How a model is driven: which backend class serves it and how it is loaded. A backend's `kind`
# (diffusion or autoregressive) follows from the driver (Preset.kind).
DRIVERS = ("full_attention", "block_causal", "causal", "sprout", "openai")
# Backend knobs a preset may set (see the backend modules for what each means).
OPTIONS = {
    "full_attention": ("attention",),
    "block_causal": ("mask_style", "store_flag", "use_cache"),
    "causal": (),
    "sprout": (),
    "openai": ("kind", "api_key_env"),     # a model behind an OpenAI-compatible server (backends/remote.py)
}
# models/servers.json: models served elsewhere, listed in the pickers, each
# {"name", "url", "model"[, "kind", "api_key_env", "description"]}; `openai:URL#MODEL` needs no entry.
SERVERS_FILE = "servers.json"
SERVER_KEYS = ("name", "url", "model", "kind", "api_key_env", "description")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


@dataclass(frozen=True)
class Preset:
    name: str
    driver: str                         # one of DRIVERS
    hf_id: str                          # hub id ("org/name"); for a local model, its folder
    mask_token: str | None = None       # diffusion: the mask token string ...
    mask_id: int | None = None          # ... or its id
    logit_shift: bool = False           # position i predicted from hidden i-1 (Dream, Fast-dLLM v2)
    trust_remote_code: bool = False
    loader: str = "AutoModelForCausalLM"  # or "AutoModel"
    chat_template: str = "the tokenizer's own"
    defaults: Mapping[str, Any] = field(default_factory=dict)   # GenerationConfig fields
    description: str = ""
    model_types: tuple[str, ...] = ()   # config.json model_type values (lower case) of this model
    options: Mapping[str, Any] = field(default_factory=dict)    # backend knobs, see OPTIONS
    local_path: str | None = None       # set when the weights come from a folder
    follows: str | None = None          # the DECODINGS entry its defaults reproduce, if any

    @property
    def kind(self) -> str:
        if self.driver == "openai":
            return self.options.get("kind", "autoregressive")
        if self.driver == "sprout":
            return "autoregressive" if self.options.get("causal") else "diffusion"
        return {"causal": "autoregressive", "full_attention": "diffusion", "block_causal": "diffusion"}.get(
            self.driver, "unknown")


_AR_DEFAULTS = {"gen_length": 128, "temperature": 0.0}


@dataclass(frozen=True)
class Decoding:
    """How an upstream codebase decodes, as GenerationConfig fields, and where that was read."""

    name: str
    upstream: str                       # repository, file and commit the settings follow
    settings: Mapping[str, Any]
    tested: str                         # which test compares the engine with a reference loop


# Upstream rules that differ from ours (engine/samplers.py): confidence from the untempered
# logits, the mask logit kept in the softmax, threshold/factor loops that run until the block
# is done (steps is no cap). Early stop at an EOS block stays on: it changes only positions
# after the first EOS, which the answer drops.
_UPSTREAM_RULES = {"untempered_confidence": True, "keep_mask_logit": True, "steps_cap": False}
DECODINGS: dict[str, Decoding] = {d.name: d for d in (
    Decoding("llada", "ML-GSAI/LLaDA generate.py @ b7e6c3565f194352da44b38dd12b6970597309f3",
             {**_UPSTREAM_RULES, "sampler": "low_confidence"}, "tests/reference/test_upstream_llada.py"),
    Decoding("fast_dllm_threshold", "NVlabs/Fast-dLLM llada/generate.py @ 24cc59e75f20a6384bae8c905965bb090b96388e",
             {**_UPSTREAM_RULES, "sampler": "threshold", "threshold": 0.9}, "tests/reference/test_upstream_llada.py"),
    Decoding("fast_dllm_factor", "NVlabs/Fast-dLLM llada/generate.py get_transfer_index_dynamic (after 24cc59e)",
             {**_UPSTREAM_RULES, "sampler": "factor", "factor": 1.0}, "tests/reference/test_upstream_llada.py"),
    # SDAR: tempered confidence, strict > threshold or the scheduled top k (not capped at the masks
    # left: decided tokens may be re-sampled, as SDAR's code does), blocks aligned to the prompt,
    # probabilities in the model's dtype (SDAR's lm_head output is not cast).
    Decoding("sdar", "JetAstra/SDAR generate.py block_diffusion_generate @ c2041a8333333d685f6e15122c84f60f51f85ebd",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "threshold_or_top_k_uncapped",
              "model_dtype_probs": True, "threshold": 0.85},
             "tests/reference/test_upstream_sdar.py"),
    # Fast-dLLM v2: SDAR's alignment, plus the greedy first token, 8-token sub-blocks, and its
    # block count (gen_length // block + P // block: the prompt's tail counts toward gen_length),
    # sampling in the logits' dtype (bf16) with its nucleus on the probabilities.
    Decoding("fast_dllm_v2", "NVlabs/Fast-dLLM v2/generation_functions.py batch_sample (published after 24cc59e)",
             {"keep_mask_logit": True, "aligned_blocks": True, "greedy_first_token": True, "sub_block_size": 8,
              "tail_in_length": True, "steps_cap": False, "sampler": "threshold_strict", "threshold": 0.9,
              "top_p": 0.95, "model_dtype_probs": True},
             "tests/reference/test_upstream_fast_dllm_v2.py"),
    # LLaDA2.0: SDAR's rule (top k capped at the masks left) over the whole sequence, no cache,
    # probabilities in the logits' dtype (its forward casts them to float32).
    Decoding("llada2", "inclusionAI/LLaDA2.0-mini modeling_llada2_moe.py generate (hub; copy @ f1cb636 in "
             "yks23/Information-Gain-Sampler)",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "threshold_or_top_k",
              "model_dtype_probs": True, "threshold": 0.95},
             "tests/reference/test_upstream_llada2.py"),
    # LLaDA2.1: LLaDA2.0's layout and dtype, its draft-then-edit rule (joint_threshold) with the
    # quality mode's thresholds (speedy mode: threshold 0.5, edit threshold 0.0) and 16 post steps.
    Decoding("llada21", "lingjiechen2/dllm dllm/pipelines/llada21/models/modeling_llada21_moe.py generate @ "
             "7520f3c (sampler.py @ 9268328)",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "joint_threshold",
              "model_dtype_probs": True, "threshold": 0.7, "edit_threshold": 0.5, "max_post_steps": 16},
             "tests/reference/test_upstream_llada21.py"),
    # Dream: the whole canvas as one block (block_size = gen_length), Dream's truncating schedule.
    Decoding("dream", "Dream-org/Dream-v0-Instruct-7B generation_utils.py _sample (hub; read from copies), "
             "alg='entropy' as DreamLM/Dream @ fac0a7f demo_completion.py calls it",
             {"keep_mask_logit": True, "sampler": "entropy", "schedule": "dream"},
             "tests/reference/test_upstream_dream.py"),
)}

# Caches: LLaDA's generate.py and Dream's demo_completion.py decode without one, so these presets
# say cache "none". Fast-dLLM v1's demos add the prefix or dual cache (GenerationConfig.cache), but
# through their own modeling files: the hub's LLaDA code keeps no keys and values and is refused
# with a sentence (engine/backends/kv_window.py says what a model needs).
PRESETS: tuple[Preset, ...] = (
    Preset("LLaDA-8B-Instruct", "full_attention", "GSAI-ML/LLaDA-8B-Instruct", mask_id=126336,
           trust_remote_code=True, loader="AutoModel", model_types=("llada",),
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["llada"].settings, "cache": "none"},
           description="LLaDA 8B instruct: masked diffusion, full attention, no KV cache.", follows="llada"),
    Preset("Dream-v0-Instruct-7B", "full_attention", "Dream-org/Dream-v0-Instruct-7B", mask_id=151666,
           logit_shift=True, trust_remote_code=True, loader="AutoModel", model_types=("dream",),
           defaults={"gen_length": 128, "block_size": 128, "steps": 128, **DECODINGS["dream"].settings,
                     "temperature": 0.2, "top_p": 0.95, "cache": "none"},
           description="Dream 7B instruct: diffusion adapted from Qwen2.5, full attention, shifted logits.",
           follows="dream"),
    Preset("Fast_dLLM_v2_1.5B", "block_causal", "Efficient-Large-Model/Fast_dLLM_v2_1.5B", mask_id=151665,
           logit_shift=True, trust_remote_code=True, model_types=("fast_dllm_qwen",),
           options={"mask_style": "block_size", "store_flag": "update_past_key_values"},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["fast_dllm_v2"].settings},
           follows="fast_dllm_v2",
           description="Fast-dLLM v2 1.5B: block diffusion from Qwen2.5, KV cache, shifted logits."),
    Preset("Fast_dLLM_v2_7B", "block_causal", "Efficient-Large-Model/Fast_dLLM_v2_7B", mask_id=151665,
           logit_shift=True, trust_remote_code=True, model_types=("fast_dllm_qwen",),
           options={"mask_style": "block_size", "store_flag": "update_past_key_values"},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["fast_dllm_v2"].settings},
           follows="fast_dllm_v2",
           description="Fast-dLLM v2 7B: block diffusion from Qwen2.5, KV cache, shifted logits."),
    Preset("SDAR-1.7B-Chat", "block_causal", "JetLM/SDAR-1.7B-Chat", mask_token="<|MASK|>",
           trust_remote_code=True, model_types=("sdar",), options={"mask_style": "bool", "store_flag": "store_kv"},
           defaults={"gen_length": 128, "block_size": 4, "steps": 4, **DECODINGS["sdar"].settings, "threshold": 0.9},
           description="SDAR 1.7B chat: block diffusion from Qwen3, KV cache, small blocks.", follows="sdar"),
    Preset("SDAR-4B-Chat", "block_causal", "JetLM/SDAR-4B-Chat", mask_token="<|MASK|>",
           trust_remote_code=True, model_types=("sdar",), options={"mask_style": "bool", "store_flag": "store_kv"},
           defaults={"gen_length": 128, "block_size": 4, "steps": 4, **DECODINGS["sdar"].settings, "threshold": 0.9},
           description="SDAR 4B chat: block diffusion from Qwen3, KV cache, small blocks.", follows="sdar"),
    # LLaDA2's own generate recomputes the prefix under an additive block mask, without a cache.
    Preset("LLaDA2.0-mini", "block_causal", "inclusionAI/LLaDA2.0-mini", mask_id=156895,
           trust_remote_code=True, model_types=("llada2_moe",),
           options={"mask_style": "additive", "use_cache": False},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["llada2"].settings},
           description="LLaDA2.0 mini (16B MoE, 1.4B active): block diffusion, additive block-causal mask.",
           follows="llada2"),
    # LLaDA2.1 runs LLaDA2.0's network (the same mask id and block-causal mask) and edits as it decodes.
    Preset("LLaDA2.1-mini", "block_causal", "inclusionAI/LLaDA2.1-mini", mask_id=156895,
           trust_remote_code=True, model_types=("llada21_moe",),
           options={"mask_style": "additive", "use_cache": False},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, "temperature": 0.0,
                     **DECODINGS["llada21"].settings},
           description="LLaDA2.1 mini (16B MoE): LLaDA2.0's block diffusion that also rewrites decided tokens "
                       "(draft, then edit).",
           follows="llada21"),
    Preset("Qwen2.5-1.5B-Instruct", "causal", "Qwen/Qwen2.5-1.5B-Instruct", defaults=_AR_DEFAULTS,
           description="Qwen2.5 1.5B instruct: the autoregressive baseline (KV cache)."),
    Preset("Qwen2.5-7B-Instruct", "causal", "Qwen/Qwen2.5-7B-Instruct", defaults=_AR_DEFAULTS,
           description="Qwen2.5 7B instruct: the autoregressive baseline (KV cache)."),
    Preset("Qwen3-1.7B", "causal", "Qwen/Qwen3-1.7B", defaults=_AR_DEFAULTS,
           description="Qwen3 1.7B: the autoregressive baseline (KV cache)."),
)
PRESETS_BY_NAME = {p.name: p for p in PRESETS}
# playground.json: the Preset fields a folder may set for itself.
PLAYGROUND_KEYS = ("driver", "mask_token", "mask_id", "logit_shift", "trust_remote_code", "loader",
                   "chat_template", "defaults", "description", "options")


# ---------------------------------------------------------------------------- where weights live

def models_dir() -> Path:
    """<repo>/models, or $DP_MODELS_DIR."""
    env = os.environ.get("DP_MODELS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "models"


def _hub_cache_dir() -> str:
    """The HF hub cache, read from the environment now (huggingface_hub reads it once at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _has_weights(folder: Path) -> bool:
    return folder.is_dir() and any(f.name.endswith(WEIGHT_SUFFIXES) for f in folder.iterdir())


SAFETENSORS_HEADER_MAX = 100 * 2**20   # the safetensors format caps its JSON header at 100 MB


def weights_problem(folder: Path) -> str | None:
    """Why the weight files of `folder` cannot be loaded, read from their first bytes (a
    safetensors file starts with an 8-byte little-endian header length, then that much JSON);
    None when they look loadable. Cheap: no tensor is read."""
    for path in sorted(folder.iterdir()):
        if not path.name.endswith(WEIGHT_SUFFIXES):
            continue
        try:
            size = path.stat().st_size
            if not path.is_file():
                return f"{path.name} is not a file."
            if size == 0:
                return f"{path.name} is empty."
            if path.name.endswith(".safetensors"):
                with path.open("rb") as handle:
                    length = int.from_bytes(handle.read(8), "little")
                    if size < 8 + length or length > SAFETENSORS_HEADER_MAX:
                        return f"{path.name} is not a complete safetensors file (cut short or corrupt)."
                    json.loads(handle.read(length))
            else:
                with path.open("rb") as handle:
                    handle.read(1)
        except OSError as exc:
            return f"{path.name} cannot be read ({exc.strerror or exc})."
        except ValueError:
            return f"{path.name} has a corrupt safetensors header."
    return None


def cached_snapshot(hf_id: str) -> Path | None:
    """The snapshot folder of `hf_id` in the local HF cache when it holds config + weights; offline."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(hf_id, "config.json", cache_dir=_hub_cache_dir())
    except Exception:  # noqa: BLE001 - a malformed id or cache is simply "not here"
        return None
    if not isinstance(hit, str):
        return None
    snapshot = Path(hit).parent
    return snapshot if _has_weights(snapshot) else None


def local_folders() -> list[Path]:
    """Model folders (with a config.json) directly under models_dir(), by name."""
    root = models_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "config.json").is_file())


# ---------------------------------------------------------------------------- resolving names

def _read_json(path: Path, default: Any) -> Any:
    """A JSON file's value, `default` when there is no such file; a sentence when it cannot be read."""
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackendError(f"{path} is unreadable ({exc}).") from exc


def _read_playground(folder: Path) -> dict[str, Any]:
    data = _read_json(folder / "playground.json", {})
    if not isinstance(data, dict):
        raise BackendError(f"{folder / 'playground.json'} must hold a JSON object of settings.")
    data = renamed_keys(data)
    unknown = sorted(set(data) - set(PLAYGROUND_KEYS))
    if unknown:
        raise BackendError(f"Folder {folder}: playground.json has unknown key(s) {', '.join(unknown)}; "
                           f"known keys are {', '.join(PLAYGROUND_KEYS)}.")
    return data


def renamed_keys(settings: dict[str, Any]) -> dict[str, Any]:
    """playground.json as this version names it: the key `family` (written before it was renamed)
    is read as `driver`; a file that sets both keeps `driver`."""
    if "family" not in settings:
        return settings
    settings = dict(settings)
    old = settings.pop("family")
    settings.setdefault("driver", old)
    return settings


def bundled_decoding() -> dict[str, Any]:
    """How the bundled Sprout-BD decodes by default (playground, bench): the `decoding` section
    of the repository's models/sprout-bd/playground.json."""
    return model_decoding(Path(__file__).resolve().parents[1] / "models" / "sprout-bd")


def model_decoding(folder: Path) -> dict[str, Any]:
    """A Sprout folder's decoding defaults (GenerationConfig fields): its playground.json
    `decoding` section, else the bundled Sprout-BD's."""
    path = folder / "playground.json"
    settings = _read_json(path, {})
    decoding = settings.get("decoding") if isinstance(settings, dict) else None
    if decoding is None:
        bundled = Path(__file__).resolve().parents[1] / "models" / "sprout-bd"
        if folder.resolve() == bundled.resolve():
            raise BackendError(f"{path} has no `decoding` section: the bundled model's defaults are missing.")
        return bundled_decoding()
    if not isinstance(decoding, dict):
        raise BackendError(f"Folder {folder}: playground.json `decoding` must be an object of generation settings.")
    return dict(decoding)


def local_preset(folder: str | Path, name: str | None = None) -> Preset:
    """How to drive a model folder: its playground.json, else a preset whose model_type it
    shares, else a plain causal LM when its architecture says so."""
    folder = Path(folder).resolve()
    config = read_config(folder)
    model_type = str(config.get("model_type", "")).lower()
    name = name or folder.name
    base = dict(name=name, hf_id=str(folder), local_path=str(folder), model_types=(model_type,))
    if model_type == "sprout":
        causal = bool(config.get("causal", False))
        defaults = _AR_DEFAULTS if causal else {"gen_length": 128, **model_decoding(folder)}
        return Preset(driver="sprout", options={"causal": causal}, defaults=defaults,
                      description=f"Sprout, the bundled model ({folder.name}).", **base)
    extra = _read_playground(folder)
    match = next((p for p in PRESETS if model_type in p.model_types), None)
    if extra:
        if extra.get("driver") not in DRIVERS:
            raise BackendError(f"Folder {folder}: playground.json must set driver to one of {', '.join(DRIVERS)}.")
        extra.setdefault("description", f"Local {extra['driver']} model in {folder}.")
        return Preset(**base, **extra)
    if match is not None:
        return dataclasses.replace(match, **base, description=f"{match.description} Local copy in {folder}.")
    archs = config.get("architectures") or []
    if any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return Preset(driver="causal", description=f"Local causal LM ({model_type or 'unknown type'}) in {folder}.",
                      **base)
    return Preset(driver="unknown", description=f"Local model of type '{model_type}' in {folder}.", **base)


def resolve(name_or_path: str) -> Preset:
    """A preset name, a preset's hub id, a folder name under models/, or a folder path -> Preset."""
    key = str(name_or_path).strip()
    if key.startswith(REMOTE_PREFIX):
        parse_spec(key)
        return Preset(key, "openai", key, description="A model behind an OpenAI-compatible server.")
    if key in PRESETS_BY_NAME or any(p.hf_id == key for p in PRESETS):
        preset = PRESETS_BY_NAME.get(key) or next(p for p in PRESETS if p.hf_id == key)
        copy = models_dir() / preset.name
        if (copy / "config.json").is_file():
            return dataclasses.replace(preset, local_path=str(copy.resolve()))
        return preset
    for candidate in (Path(key).expanduser(), models_dir() / key):
        if key and candidate.is_dir():
            return local_preset(candidate)
    servers = server_presets()
    if key in servers:
        return servers[key]
    names = ", ".join(p.name for p in PRESETS)
    raise BackendError(f"Unknown model '{key}': not a preset (choose one of {names}) and not a folder.")


def list_models() -> list[dict[str, Any]]:
    """Every preset and every folder under models/, scanned afresh (cheap: no weights are read)."""
    out = []
    for preset in PRESETS:
        resolved = resolve(preset.name)
        available = _has_weights(Path(resolved.local_path)) if resolved.local_path else (
            cached_snapshot(preset.hf_id) is not None)
        out.append(_describe(resolved, "preset", available))
    preset_names = set(PRESETS_BY_NAME)
    for folder in local_folders():
        if folder.name in preset_names:
            continue  # models/<preset name>/ is that preset's local copy, listed above
        try:
            preset = local_preset(folder)
            problem = weights_problem(folder)
        except BackendError as exc:
            problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - one bad folder must not hide the others
            problem = f"Folder {folder} cannot be read as a model ({type(exc).__name__}: {exc})."[:300]
        if problem is not None:
            out.append({"name": folder.name, "driver": "unknown", "kind": "unknown", "source": "local",
                        "available": False, "description": f"Broken: {problem}", "path": str(folder),
                        "defaults": {}, "broken": problem})
            continue
        out.append(_describe(preset, "local", _has_weights(folder)))
    try:
        out += [_describe(p, "remote", True) for p in server_presets().values()]
    except BackendError as exc:
        out.append({"name": SERVERS_FILE, "driver": "openai", "kind": "unknown", "source": "remote",
                    "available": False, "description": f"Broken: {exc}", "path": None, "defaults": {},
                    "broken": str(exc)})
    return out


def server_presets() -> dict[str, Preset]:
    """The entries of models/servers.json by name (none when the file is absent)."""
    path = models_dir() / SERVERS_FILE
    rows = _read_json(path, [])
    out = {}
    for row in rows if isinstance(rows, list) else [None]:
        if not isinstance(row, dict) or not {"name", "url", "model"} <= set(row) or set(row) - set(SERVER_KEYS):
            raise BackendError(f"{path}: each entry needs name, url and model (and may set kind, api_key_env, "
                               "description), nothing else.")
        spec = f"{REMOTE_PREFIX}{str(row['url']).rstrip('/')}#{row['model']}"
        parse_spec(spec)
        options = {k: row[k] for k in ("kind", "api_key_env") if k in row}
        out[row["name"]] = Preset(row["name"], "openai", spec, options=options,
                                  description=row.get("description") or f"{row['model']} served at {row['url']}.")
    return out


def _describe(preset: Preset, source: str, available: bool) -> dict[str, Any]:
    return {
        "name": preset.name, "driver": preset.driver, "kind": preset.kind, "source": source,
        "available": bool(available), "description": preset.description, "hf_id": preset.hf_id,
        "path": preset.local_path, "defaults": dict(preset.defaults), "broken": None,
    }


# ---------------------------------------------------------------------------- loading

def load_backend(name_or_path: str, device: str = "auto") -> Backend:
    """A ready backend for a preset name or a model folder; a BackendError sentence otherwise."""
    preset = resolve(name_or_path)
    if preset.driver == "openai":
        from engine.backends import remote

        return remote.load(preset.hf_id, name=preset.name, kind=preset.options.get("kind"),
                           api_key_env=preset.options.get("api_key_env", remote.API_KEY_ENV))
    if preset.driver == "sprout":
        return _load_sprout(preset, device)
    if preset.driver not in DRIVERS:
        raise BackendError(
            f"Folder {preset.local_path} holds a model of type '{preset.model_types[0] if preset.model_types else '?'}'"
            f" that the playground does not know how to drive: add a playground.json naming its driver "
            f"({', '.join(DRIVERS[:3])}) and, for diffusion, its mask token.")
    source, local_only = _weights_source(preset)
    model, tokenizer, dev = load_pretrained(
        source, label=preset.name, loader=preset.loader, trust_remote_code=preset.trust_remote_code,
        device=device, local_files_only=local_only)
    return build_backend(preset, model, tokenizer, dev)


def _weights_source(preset: Preset) -> tuple[str, bool]:
    """(folder or hub id, local_files_only): never reaches the network unless DP_ALLOW_DOWNLOAD=1."""
    if preset.local_path:
        return preset.local_path, True
    snapshot = cached_snapshot(preset.hf_id)
    if snapshot is not None:
        return str(snapshot), True
    if os.environ.get("DP_ALLOW_DOWNLOAD") == "1" and os.environ.get("HF_HUB_OFFLINE", "0") in ("", "0"):
        return preset.hf_id, False
    raise BackendError(
        f"Model '{preset.name}' ({preset.hf_id}) is not on this machine and cannot be downloaded here: run "
        f"`huggingface-cli download {preset.hf_id}` on a machine with internet, or pass a local folder.")


def build_backend(preset: Preset, model: torch.nn.Module, tokenizer: Any, device: torch.device) -> Backend:
    """Wrap a loaded model + tokenizer in the backend of the preset's driver."""
    from engine.backends.block_causal import BlockCausalBackend
    from engine.backends.causal_lm import CausalLMBackend
    from engine.backends.full_attention import FullAttentionBackend

    options = dict(preset.options)
    unknown = sorted(set(options) - set(OPTIONS.get(preset.driver, ())))
    if unknown:
        raise BackendError(f"Model '{preset.name}': unknown option(s) {', '.join(unknown)} for the {preset.driver} "
                           f"driver; known: {', '.join(OPTIONS.get(preset.driver, ())) or 'none'}.")
    if preset.driver == "causal":
        return CausalLMBackend(model, tokenizer, name=preset.name, device=device)
    mask_id = resolve_mask_id(tokenizer, label=preset.name, mask_id=preset.mask_id, mask_token=preset.mask_token)
    common = dict(name=preset.name, mask_id=mask_id, logit_shift=preset.logit_shift, device=device)
    if preset.driver == "full_attention":
        return FullAttentionBackend(model, tokenizer, attention=options.get("attention"), **common)
    if preset.driver == "block_causal":
        return BlockCausalBackend(model, tokenizer, mask_style=options.get("mask_style", "additive"),
                                  store_flag=options.get("store_flag"), use_cache=options.get("use_cache", True),
                                  **common)
    raise BackendError(f"Model '{preset.name}' has driver '{preset.driver}', which no backend serves.")


def _load_sprout(preset: Preset, device: str) -> Backend:
    """Sprout folders are served by engine/backends/sprout.py, imported only when one is loaded."""
    from engine.backends import sprout

    return sprout.load(preset.local_path, device)
