"""Which models a request may name, and whose own Python may run.

A request (a /v1 call, a model picker or the Models tab's box) names a model; it never names code
or a place to connect to. So a running app loads only what its catalog lists: the presets, the
folders directly under models/, and the servers in models/servers.json. A filesystem path or an
`openai:URL#MODEL` in a request is an unknown model (one sentence, a 404 on /v1) unless the
operator started the app with --allow-model-paths / --allow-remote-urls. What the operator named
at launch (--model, --baseline) is loaded as given.

A model whose loading would run Python from its own files (transformers' trust_remote_code: the
`auto_map` of its config.json or tokenizer_config.json) is loaded only once a person has allowed
that model: in the Models tab, or with --trust-remote-code NAME at launch. Until then loading it
is a sentence that names the files that would run (`code_files`).

Every spelling of one model is one key (`canonical`): `models/sprout-bd/./`, an absolute path
to it and `sprout-bd` are all `sprout-bd`, so they share one loaded copy.

Remote keys: an `openai:` URL named in a request gets no API key. $DP_REMOTE_API_KEY (or the
variable a servers.json entry names) goes only to the servers the operator configured: the
servers.json entries and a URL given with --model / --baseline.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from engine.backends.base import BackendError
from engine.backends.remote import PREFIX as REMOTE_PREFIX
from engine.backends.remote import parse_spec
from engine.catalog import TRUST_FLAG, code_files  # noqa: F401  (re-exported; they live with the catalog)

PATHS_FLAG, URLS_FLAG = "--allow-model-paths", "--allow-remote-urls"


@dataclass
class ModelAccess:
    allow_paths: bool = False            # --allow-model-paths: a request may name any model folder
    allow_urls: bool = False             # --allow-remote-urls: a request may name any openai: URL (no key sent)
    operator: set[str] = field(default_factory=set)   # keys named at launch: loaded as given, keys sent
    trusted: set[str] = field(default_factory=set)    # keys whose own Python may run
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls) -> ModelAccess:
        """Everything allowed, every model's code trusted: the command line tools (engine.cli,
        bench), where the person typing is the operator."""
        return cls(allow_paths=True, allow_urls=True, trusted={"*"})

    def add_operator(self, names: Iterable[str]) -> None:
        for name in names:
            try:
                self.operator.add(canonical(name, allow_paths=True, allow_urls=True))
            except BackendError:
                pass                 # a name that cannot load: the app says so where it is used

    def trust(self, name: str, as_operator: bool = False) -> str:
        """Let `name`'s own Python run from now on; returns its key."""
        key = self.canonical(name) if not as_operator else canonical(name, allow_paths=True, allow_urls=True)
        with self._lock:
            self.trusted.add(key)
        return key

    def may_run_code(self, key: str) -> bool:
        return "*" in self.trusted or key in self.trusted

    def sends_key(self, key: str) -> bool:
        """Whether an openai: model may get the remote API key: only a server the operator named."""
        return "*" in self.trusted or key in self.operator

    def canonical(self, name: str) -> str:
        """The one key of a model a request names; BackendError (an unknown model) otherwise."""
        key = canonical(name, allow_paths=True, allow_urls=True)
        if key in self.operator:
            return key
        return canonical(name, allow_paths=self.allow_paths, allow_urls=self.allow_urls)


def canonical(name: str, allow_paths: bool, allow_urls: bool) -> str:
    """A preset's name for a preset (or its hub id), a servers.json name, a folder's name for a
    folder directly under models/ however it is spelled, `openai:URL#MODEL` tidied, or (when
    allowed) the absolute path of another folder."""
    try:
        return _canonical(name, allow_paths, allow_urls)
    except BackendError:
        raise
    except (OSError, ValueError, RuntimeError):    # a name too long, a NUL byte, ~user unknown: no such folder
        raise _unknown(str(name), None) from None


def _canonical(name: str, allow_paths: bool, allow_urls: bool) -> str:
    from engine import catalog
    from engine.presets import PRESETS, PRESETS_BY_NAME

    key = (name or "").strip()
    if not key:
        raise BackendError("Choose a model first: the model box is empty.")
    if key.startswith(REMOTE_PREFIX):
        if not allow_urls:
            raise _unknown(key, f"a URL; the operator may allow URLs with {URLS_FLAG}")
        url, model = parse_spec(key)
        return f"{REMOTE_PREFIX}{url}#{model}"
    if key in PRESETS_BY_NAME:
        return key
    preset = next((p for p in PRESETS if p.hf_id == key), None)
    if preset is not None:
        return preset.name
    root = catalog.models_dir()
    if _plain_name(key) and (root / key / "config.json").is_file():
        return key
    try:
        if key in catalog.server_presets():
            return key
    except BackendError:
        pass
    path = Path(key).expanduser()
    resolved = path.resolve()
    if resolved.parent == root.resolve() and (resolved / "config.json").is_file():
        return resolved.name                 # models/sprout-bd/./, /abs/.../models/sprout-bd/ -> sprout-bd
    if _plain_name(key):
        raise _unknown(key, None)
    if not allow_paths:
        raise _unknown(key, f"a folder outside models/; the operator may allow paths with {PATHS_FLAG}")
    return str(resolved)


def _plain_name(key: str) -> bool:
    return key not in (".", "..") and "/" not in key and "\\" not in key


def _unknown(key: str, why: str | None) -> BackendError:
    said = f"; it looks like {why}" if why else ""
    return BackendError(f"There is no model '{key[:120]}' in this server's catalog (the presets, the folders "
                        f"under models/ and the servers in models/servers.json){said}.")


