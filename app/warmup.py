"""Warm the models at launch, so the first answer a person asks for does not pay the first-call
costs (loading weights, allocating buffers, lazy imports, first-touch kernels): measured on
Sprout-BD on this CPU, the first generation after loading took ~1-3 s for what takes ~0.05 s
warm.

`warm_up` loads each model and runs one short generation while holding the model's run lock
(ModelRegistry.using), so a request that arrives meanwhile waits for it instead of racing it;
`status` says what is going on, for a page that wants to show "loading".
"""

from __future__ import annotations

import threading
import time
from typing import Any

from engine.generate import run
from engine.trace import GenerationConfig

WARM_CONFIG = GenerationConfig(gen_length=16, block_size=16, steps=4, sampler="low_confidence")
WARM_PROMPT = [{"role": "user", "content": "Hello."}]


class WarmUp:
    """Loads and warms models in a background thread; `status` and `seconds` say how it went."""

    def __init__(self, registry: Any, names: list[str]) -> None:
        self.registry = registry
        self.names = [n for i, n in enumerate(names) if n and n not in names[:i]]
        self.status: dict[str, str] = {n: "waiting" for n in self.names}
        self.seconds: dict[str, float] = {}
        self.done = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Warm every model in turn; a model that cannot load is left to say so when it is used."""
        try:
            for name in self.names:
                self.status[name] = "loading"
                started = time.perf_counter()
                try:
                    with self.registry.using(name) as backend:
                        run(backend, backend.encode_chat(WARM_PROMPT), WARM_CONFIG)
                    self.status[name] = "ready"
                except Exception as exc:  # noqa: BLE001 - the tab that uses it reports the failure as a sentence
                    self.status[name] = f"failed ({type(exc).__name__})"
                self.seconds[name] = time.perf_counter() - started
        finally:
            self.done.set()

    def start(self) -> WarmUp:
        self._thread = threading.Thread(target=self.run, name="warm-up", daemon=True)
        self._thread.start()
        return self

    def loading(self, name: str) -> bool:
        """True while `name` is still being loaded or warmed (a request for it will wait)."""
        return self.status.get(name) in ("waiting", "loading")


def warm_up(ctx: Any, block: bool = False) -> WarmUp:
    """Warm the default model and the baseline of an AppContext (in the background unless block)."""
    warm = WarmUp(ctx.registry, [ctx.default_model, ctx.baseline_model])
    if block:
        warm.run()
        return warm
    return warm.start()


LOADING_PANEL = ('<div class="dp-panel dp-empty" data-mode="loading"><div class="dp-live-head" role="status" '
                 'aria-live="polite">Loading the model (first use): its weights are read and it is warmed up '
                 'once; the answer starts right after.</div></div>')


def is_loading(ctx: Any, name: str) -> bool:
    """True when a request for `name` would wait for loading: the launch warm-up is still on it,
    or it has never been loaded in this process."""
    warm = getattr(ctx, "warmup", None)
    if warm is not None and warm.loading(name):
        return True
    try:
        return name not in ctx.registry.loaded_names()
    except Exception:  # noqa: BLE001 - a registry that cannot say is not a reason to block a run
        return False
