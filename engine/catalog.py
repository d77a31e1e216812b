"""The model catalog: the preset table (engine/presets.py) plus every model folder under
`models/`, re-scanned on every call. `load_backend` turns a name or
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
from pathlib import Path
from typing import Any

import torch

from engine.backends.base import Backend, BackendError
from engine.backends.hf_loading import load_pretrained, read_config
from engine.backends.hf_text import resolve_mask_id
from engine.backends.remote import PREFIX as REMOTE_PREFIX
from engine.backends.remote import parse_spec
from engine.presets import AR_DEFAULTS, DRIVERS, OPTIONS, PLAYGROUND_KEYS, PRESETS, PRESETS_BY_NAME, Preset

# models/servers.json: models served elsewhere, listed in the pickers, each
# {"name", "url", "model"[, "kind", "api_key_env", "description"]}; `openai:URL#MODEL` needs no entry.
SERVERS_FILE = "servers.json"
SERVER_KEYS = ("name", "url", "model", "kind", "api_key_env", "description")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


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
        defaults = AR_DEFAULTS if causal else {"gen_length": 128, **model_decoding(folder)}
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
        defaults = dict(match.defaults)
        canvas = config.get("canvas_length")
        if match.driver == "uniform_noise" and isinstance(canvas, int) and canvas > 0:   # its own canvas length
            defaults.update(block_size=canvas, gen_length=canvas * max(1, defaults["gen_length"] // canvas))
        return dataclasses.replace(match, **base, defaults=defaults,
                                   description=f"{match.description} Local copy in {folder}.")
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
        "own_code": bool(preset.trust_remote_code),       # loading imports its own Python (engine/model_access.py)
    }


# ---------------------------------------------------------------------------- loading

def load_backend(name_or_path: str, device: str = "auto", access: Any = None) -> Backend:
    """A ready backend for a preset name or a model folder; a BackendError sentence otherwise.
    With `access` (engine/model_access.py ModelAccess; the app passes its own, `name_or_path`
    already its canonical key) a model's own Python runs only if access trusts it, and an
    `openai:` URL gets the remote key only if the operator configured that server."""
    preset = resolve(name_or_path)
    if preset.driver == "openai":
        from engine.backends import remote

        configured = preset.name in _server_names() or access is None or access.sends_key(preset.name)
        key_env = preset.options.get("api_key_env", remote.API_KEY_ENV) if configured else None
        return remote.load(preset.hf_id, name=preset.name, kind=preset.options.get("kind"), api_key_env=key_env)
    if preset.trust_remote_code and access is not None and not access.may_run_code(name_or_path):
        raise BackendError(untrusted_code_sentence(preset))
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


def _server_names() -> set[str]:
    try:
        return set(server_presets())
    except BackendError:
        return set()


def code_folder(preset: Preset) -> Path | None:
    """Where a model's own Python would be imported from: its folder, or its cached snapshot."""
    if preset.local_path:
        return Path(preset.local_path)
    return cached_snapshot(preset.hf_id) if preset.hf_id else None


# the launch flag that allows a model's own Python (launch.py; engine/model_access.py re-exports it)
TRUST_FLAG = "--trust-remote-code"


def code_files(folder: str | Path | None) -> list[str]:
    """The Python files of a model folder that loading it with trust_remote_code may import: the
    modules its config.json / tokenizer_config.json `auto_map` names, then every other .py file
    there (a named module may import its neighbours)."""
    if folder is None or not Path(folder).is_dir():
        return []
    folder = Path(folder)
    named: list[str] = []
    for config in ("config.json", "tokenizer_config.json"):
        try:
            data = json.loads((folder / config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        auto_map = data.get("auto_map") if isinstance(data, dict) else None
        for ref in (auto_map or {}).values() if isinstance(auto_map, dict) else ():
            for one in ref if isinstance(ref, list) else [ref]:
                if isinstance(one, str) and "." in one:
                    module = one.split("--")[-1].rsplit(".", 1)[0] + ".py"
                    if module not in named:
                        named.append(module)
    rest = sorted(p.name for p in folder.glob("*.py") if p.name not in named)
    return named + rest


def untrusted_code_sentence(preset: Preset) -> str:
    files = code_files(code_folder(preset))
    listed = ", ".join(files[:8]) + (" ..." if len(files) > 8 else "") if files else "the Python files its config names"
    return (f"Model '{preset.name}' runs Python of its own when it loads ({listed}); it is loaded only once you "
            f"allow that in the Models tab, or start the app with {TRUST_FLAG} {preset.name}.")


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
    if preset.driver == "uniform_noise":
        from engine.backends.uniform_noise import UniformNoiseCanvasBackend

        return UniformNoiseCanvasBackend(model, tokenizer, name=preset.name, device=device)
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
