"""What the app holds while it runs: the model registry (backends loaded on first use, one lock
per model), the session store, the watchdog observer on models/, and the startup notices.

Handlers get an AppContext; tests build one with fake backends (`preloaded`) and a temporary
database, so nothing here needs a server.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from engine import catalog
from engine.backends.base import BackendError
from engine.model_access import ModelAccess
from sessions import SessionStore, StoreError
from world.webapps.sessions import WorldSessions

from .conversation_world import DEFAULT_WORLD, world_from_spec
from .page_venue import PageBrowser
from .runs import RunBoard
from .world_page import WorldPages

DEFAULT_MODEL, DEFAULT_BASELINE = "sprout-bd", "sprout-ar"
BUSY_TIMEOUT_S = 60.0
Loader = Callable[[str, str], Any]


class ModelRegistry:
    """Backends by name, loaded lazily through the catalog (or handed in ready, for tests)."""

    def __init__(self, device: str = "auto", loader: Loader | None = None,
                 preloaded: dict[str, Any] | None = None, access: ModelAccess | None = None) -> None:
        self.device = device
        # what a request may name and whose code may run (engine/model_access.py); None: anything
        self.access = access
        self._loader = loader or (lambda name, device: catalog.load_backend(name, device, access=self.access))
        self._preloaded = dict(preloaded or {})
        self._loaded: dict[str, Any] = {}
        self._run_locks: dict[str, threading.Lock] = {}
        self._load_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._listing: list[dict[str, Any]] | None = None
        self.version = 0                  # bumped whenever the set of models may have changed

    # -- loading ------------------------------------------------------------------------------
    def _lock_for(self, table: dict[str, threading.Lock], name: str) -> threading.Lock:
        with self._guard:
            return table.setdefault(name, threading.Lock())

    def get(self, name: str) -> Any:
        """The backend called `name` (a preset, a folder under models/, or a path); BackendError otherwise."""
        name = (name or "").strip()
        if not name:
            raise BackendError("Choose a model first: the model box is empty.")
        if name in self._preloaded:
            return self._preloaded[name]
        name = self.key(name)
        with self._lock_for(self._load_locks, name):
            if name not in self._loaded:
                try:
                    self._loaded[name] = self._loader(name, self.device)
                except BackendError as exc:
                    if name in (DEFAULT_MODEL, DEFAULT_BASELINE) and not (catalog.models_dir() / name).exists():
                        raise BackendError(f"{exc} The bundled model appears as models/{name} once it is trained; "
                                           "until then pick another model.") from exc
                    raise
                except Exception as exc:  # noqa: BLE001 - a broken checkpoint must become a sentence
                    raise BackendError(f"Model '{name}' could not be loaded ({type(exc).__name__}: {exc}). "
                                       "Check its folder, or pick another model in the Models tab.") from exc
            return self._loaded[name]

    def key(self, name: str) -> str:
        """The one name of a model however it is spelled (a BackendError for a name a request may
        not use); a handed-in backend's name as it is."""
        name = (name or "").strip()
        if name in self._preloaded or self.access is None:
            return name
        return self.access.canonical(name)

    @contextmanager
    def using(self, name: str, timeout_s: float = BUSY_TIMEOUT_S) -> Iterator[Any]:
        """The backend, held for one generation: a backend's cache serves one run at a time."""
        backend = self.get(name)
        lock = self._lock_for(self._run_locks, self.key(name))
        if not lock.acquire(timeout=timeout_s):
            raise BackendError(f"Model '{name}' is busy with another generation for more than {timeout_s:g} s; "
                               "press Stop there or try again.")
        try:
            yield backend
        finally:
            lock.release()

    def loaded_names(self) -> list[str]:
        return sorted(set(self._preloaded) | set(self._loaded))

    # -- what can be picked -------------------------------------------------------------------
    def listing(self) -> list[dict[str, Any]]:
        """Every model the pickers offer: handed-in backends first, then the catalog."""
        if self._listing is None:
            rows = [{"name": n, "kind": b.kind, "driver": "uniform_noise" if b.uniform_noise else None,
                     "source": "in memory", "available": True,
                     "description": f"{b.kind} backend handed to the app", "path": None}
                    for n, b in self._preloaded.items()]
            try:
                rows += catalog.list_models()
            except Exception as exc:  # noqa: BLE001 - a bad folder must not hide every other model
                rows.append({"name": "(catalog error)", "kind": "unknown", "driver": None, "source": "local",
                             "available": False, "description": f"Scanning models/ failed: {exc}", "path": None})
            self._listing = rows
        return self._listing

    def choices(self, kinds: tuple[str, ...] = ("diffusion", "autoregressive")) -> list[tuple[str, str]]:
        """(label, name) pairs for a dropdown, models that are on this machine first."""
        rows = [row for row in self.listing() if row["kind"] in kinds and row["name"] != "(catalog error)"]
        rows.sort(key=lambda row: (not row["available"], row["source"] != "in memory", row["source"] != "local"))
        out = []
        for row in rows:
            note = row["kind"] if row["available"] else f"{row['kind']}, not on this machine"
            out.append((f"{row['name']} ({note})", row["name"]))
        return out

    def models_changed(self, folders: set[str]) -> None:
        """models/<folder> changed: forget backends loaded from it, rescan, bump the version."""
        root = catalog.models_dir().resolve()
        changed = {(root / f).resolve() for f in folders}
        with self._guard:
            for name in list(self._loaded):
                path = Path(name).expanduser()
                target = path.resolve() if path.is_absolute() or path.exists() else (root / name).resolve()
                if name in folders or any(target == c or c in target.parents for c in changed):
                    del self._loaded[name]
            self._listing = None
            self.version += 1

    def rescan(self) -> None:
        with self._guard:
            self._listing = None
            self.version += 1


class ModelsWatcher(FileSystemEventHandler):
    """Watches models/ (recursively) and reports which top-level folders changed, debounced:
    a checkpoint write is many events (temp file, rename, tokenizer files)."""

    IGNORED = ("opened", "closed_no_write")   # reading a checkpoint is not a change

    def __init__(self, root: Path, on_change: Callable[[set[str]], None], debounce_s: float = 0.3) -> None:
        self.root, self.on_change, self.debounce_s = Path(root).resolve(), on_change, debounce_s
        self._pending: set[str] = set()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._observer: Any = None

    def _folder(self, path: str | bytes) -> str | None:
        path = Path(path.decode() if isinstance(path, bytes) else path).resolve()
        if path == self.root or self.root not in path.parents:
            return None
        return path.relative_to(self.root).parts[0]

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in self.IGNORED:
            return
        folders = {self._folder(p) for p in (event.src_path, getattr(event, "dest_path", "")) if p}
        folders.discard(None)
        if not folders:
            return
        with self._lock:
            self._pending |= folders
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            folders, self._pending, self._timer = self._pending, set(), None
        if folders:
            self.on_change(folders)

    def start(self) -> None:
        self._observer = Observer()
        self._observer.schedule(self, str(self.root), recursive=True)
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()


@dataclass
class AppContext:
    registry: ModelRegistry
    store: SessionStore | None
    default_model: str = DEFAULT_MODEL
    baseline_model: str = DEFAULT_BASELINE
    notices: list[str] = field(default_factory=list)   # shown at the top of the page
    store_problem: str | None = None                   # why there is no store, a sentence
    export_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="dp-exports-")))
    watcher: ModelsWatcher | None = None
    runs: RunBoard = field(default_factory=RunBoard)   # the running run of each (browser session, tab)
    # the worlds the web apps at /apps/ show: each tab's current World, and pages opened by hand
    world_pages: WorldPages = field(default_factory=lambda: WorldPages(
        WorldSessions(lambda: world_from_spec(DEFAULT_WORLD))))
    app_url: str = ""                                  # where the app is served (launch.serve): the pages' origin
    # the app's browser on its own pages, where Chat's and the Agent tab's tools run when a person
    # picks the pages: started on first use
    page_browser: PageBrowser = field(init=False)

    def __post_init__(self) -> None:
        self.page_browser = PageBrowser(self.world_pages, lambda: self.app_url)

    @classmethod
    def create(cls, db_path: str | Path, model: str = DEFAULT_MODEL, baseline: str = DEFAULT_BASELINE,
               device: str = "auto", preloaded: dict[str, Any] | None = None, watch: bool = True,
               loader: Loader | None = None, access: ModelAccess | None = None) -> AppContext:
        """Everything the app needs. Never fails for a missing model or an unusable database:
        those become notices on the page, and the rest of the app still works. `access`: what
        requests may name (default: the catalog only, no model's own code; `model` and `baseline`
        are the operator's and load as given)."""
        access = access if access is not None else ModelAccess()
        access.add_operator(n for n in (model, baseline) if n not in (preloaded or {}))
        registry = ModelRegistry(device=device, loader=loader, preloaded=preloaded, access=access)
        notices: list[str] = []
        store, store_problem = None, None
        try:
            store = SessionStore(db_path)
        except StoreError as exc:
            store_problem = f"{exc} Conversations are not saved until this is fixed; nothing stored before is touched."
            notices.append(store_problem)
        for role, flag, name in (("model", "--model", model), ("AR baseline", "--baseline", baseline)):
            problem = model_problem(registry, name)
            if problem:
                notices.append(f"The default {role} '{name}' is not available: {problem} Pick another model in the "
                               f"Models tab, or start with {flag} NAME_OR_PATH.")
        ctx = cls(registry=registry, store=store, default_model=model, baseline_model=baseline, notices=notices,
                  store_problem=store_problem)
        if watch:
            ctx.start_watching()
        return ctx

    def start_watching(self) -> None:
        root = catalog.models_dir()
        if not root.is_dir():
            self.notices.append(f"The models folder {root} does not exist, so new checkpoints are not picked up.")
            return
        self.watcher = ModelsWatcher(root, self.registry.models_changed)
        try:
            self.watcher.start()
        except OSError as exc:
            self.watcher = None
            self.notices.append(f"Cannot watch {root} for new checkpoints ({exc}); use Rescan in the Models tab.")

    def close(self) -> None:
        self.page_browser.close()
        if self.watcher is not None:
            self.watcher.stop()
        if self.store is not None:
            self.store.close()


def missing_weights(registry: ModelRegistry, name: str) -> str | None:
    """For a catalog preset whose weights are not on this machine: the sentence a person reads
    before anything is drawn for it, saying how to get them (else None: loadable, loaded, or not a
    preset, which the registry refuses in its own words)."""
    preset = catalog.PRESETS_BY_NAME.get(name)
    if preset is None or name in registry.loaded_names():
        return None
    problem = model_problem(registry, name)
    if problem is None:
        return None
    return (f"{name} cannot answer here: {problem} Get it with `huggingface-cli download {preset.hf_id}` "
            "on a machine with internet (then Rescan in the Models tab), or pick a model the list does not mark "
            "\"not on this machine\".")


def model_problem(registry: ModelRegistry, name: str) -> str | None:
    """Why `name` cannot be used, without loading weights; None when it looks usable."""
    if name in registry.loaded_names():
        return None
    try:
        if catalog.resolve(name).driver == "openai":
            return None            # a model on a server: the server is asked when it is first used
    except BackendError:
        pass
    folder = catalog.models_dir() / name
    if name not in catalog.PRESETS_BY_NAME and not folder.exists() and not Path(name).expanduser().exists():
        return f"there is no folder {folder} (nor a preset of that name) yet; the bundled model may still be training."
    try:
        preset = catalog.resolve(name)
    except BackendError as exc:
        return str(exc)
    if preset.local_path and not any(Path(preset.local_path).glob("*.safetensors")) and not any(
            Path(preset.local_path).glob("*.bin")):
        return f"its folder {preset.local_path} holds no weights yet."
    if not preset.local_path and catalog.cached_snapshot(preset.hf_id) is None:
        return f"its weights ({preset.hf_id}) are not on this machine."
    return None
