"""What a /v1 call does between the wire and the engine: find the model, wait for it within a
queue limit, run one generation (in a worker thread, frames handed to the caller), and keep the
call as a session of kind `api`.

One model serves one generation at a time (its cache holds one run), exactly as in the page:
calls take the model's lock from the shared ModelRegistry, so the page and the API queue for
the same model together. At most `queue_limit` calls per model are admitted (running or
waiting); the next one is answered 503 at once instead of waiting behind them.

A model that writes its world's agent format (Sprout), asked without client tools, answers by
acting in its own world (app/api/world.py): several generations, one call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine import catalog
from engine.backends.base import BackendError
from engine.generate import run
from engine.presets import DECODINGS
from engine.trace import ConfigError, Frame
from sessions import StoreError, TurnRecord
from world.agent import Step, prompt_ids_for
from world.format import TOOL_CALLS

from ..conversation_world import speaks_world
from ..settings import DEFAULTS as PAGE_DEFAULTS
from ..steps import step_turns
from . import world
from .protocol import CONFIG_FIELDS, ApiError, ChatRequest, Reply, reply, split_tool_calls, tools_system_text

log = logging.getLogger("diffusion_playground.api")
# the page's controls (GenerationConfig fields only), for models outside the catalog
FALLBACK_DEFAULTS = {k: v for k, v in PAGE_DEFAULTS.items() if k in CONFIG_FIELDS}
STREAMED_KINDS = ("diffusion", "autoregressive")


@dataclass
class ApiOptions:
    api_key: str | None = None          # when set, every call needs `Authorization: Bearer <key>`
    store_calls: bool = True            # keep each call as a session of kind "api"
    queue_limit: int = 16               # calls per model admitted at once (running + waiting)
    wait_s: float = 120.0               # longest wait for the model before answering 503
    max_body_bytes: int = 1_000_000     # larger request bodies are answered 413
    allowed_origins: tuple[str, ...] = ()   # browser origins besides the app's own that may call (--allow-origin)


class Lease:
    """A model held for one call; `release()` (idempotent) hands it back."""

    def __init__(self, service: ChatService, name: str, backend: Any, held: Any) -> None:
        self.service, self.name, self.backend, self._held = service, name, backend, held
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            self._held.__exit__(None, None, None)
        finally:
            self.service._leave(self.name)


class ChatService:
    def __init__(self, ctx: Any, options: ApiOptions) -> None:
        self.ctx, self.options = ctx, options
        self._admitted: dict[str, int] = {}
        self._guard = threading.Lock()

    # -- models ---------------------------------------------------------------------------------
    def models(self) -> list[dict[str, Any]]:
        rows = [r for r in self.ctx.registry.listing() if r.get("available") and r.get("kind") in STREAMED_KINDS]
        return [{"id": r["name"], "object": "model", "created": 0, "owned_by": "diffusion-playground",
                 "kind": r["kind"]} for r in rows]

    def backend(self, name: str) -> Any:
        try:
            return self.ctx.registry.get(name)
        except BackendError as error:
            raise ApiError(404, str(error), "invalid_request_error", "model_not_found", "model") from None

    def defaults_for(self, name: str) -> dict[str, Any]:
        """The model's own decoding defaults (its catalog entry), after checking it exists (404)."""
        backend = self.backend(name)
        try:
            defaults = {k: v for k, v in catalog.resolve(name).defaults.items() if k in CONFIG_FIELDS}
            return defaults or dict(FALLBACK_DEFAULTS)
        except BackendError:
            if backend.uniform_noise:          # DiffusionGemma handed to the app: its decoding, its canvas
                return {**FALLBACK_DEFAULTS, **DECODINGS["diffusion_gemma"].settings,
                        "block_size": backend.canvas_length, "gen_length": backend.canvas_length}
            return dict(FALLBACK_DEFAULTS)     # a backend handed to the app, not in the catalog

    # -- admission -------------------------------------------------------------------------------
    def _leave(self, name: str) -> None:
        with self._guard:
            self._admitted[name] = max(0, self._admitted.get(name, 1) - 1)

    def admit(self, name: str) -> Lease:
        """Hold the model for one call, waiting up to wait_s; 503 past the queue limit or the wait."""
        backend = self.backend(name)
        with self._guard:
            if self._admitted.get(name, 0) >= self.options.queue_limit:
                raise ApiError(503, f"Model '{name}' already has {self.options.queue_limit} calls running or "
                                    "waiting; try again shortly.", "server_error", "model_busy")
            self._admitted[name] = self._admitted.get(name, 0) + 1
        held = self.ctx.registry.using(name, timeout_s=self.options.wait_s)
        try:
            held.__enter__()
        except BackendError as error:
            self._leave(name)
            raise ApiError(503, str(error), "server_error", "model_busy") from None
        except BaseException:
            self._leave(name)
            raise
        return Lease(self, name, backend, held)

    # -- one generation --------------------------------------------------------------------------
    def prompt_ids(self, backend: Any, request: ChatRequest) -> list[int]:
        messages = list(request.messages)
        if request.tools and not speaks_world(backend):
            # a model that has not learned the tools reads them from a system prompt; Sprout knows them
            tools = tools_system_text(request.tools)
            if messages and messages[0]["role"] == "system":
                messages[0] = {"role": "system", "content": f"{messages[0]['content']}\n\n{tools}"}
            else:
                messages.insert(0, {"role": "system", "content": tools})
        return self.encode(backend, messages)

    @staticmethod
    def encode(backend: Any, messages: list[dict[str, str]]) -> list[int]:
        try:
            return prompt_ids_for(backend, messages)
        except ValueError as error:
            raise ApiError(400, f"The messages cannot be put in this model's chat format ({error}).",
                           param="messages") from None

    def generate(self, lease: Lease, request: ChatRequest, on_frame: Callable[[Frame], None] | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 on_step: Callable[[Step], None] | None = None) -> Reply:
        """The call's Reply; the lease is released when this returns or raises. `on_step` hears
        each reply of a model acting in its world (app/api/world.py)."""
        backend, acting = lease.backend, world.runs_world(lease.backend, request)
        try:
            try:
                if acting:
                    acted = world.answer(backend, request, lambda messages: self.encode(backend, messages), on_frame,
                                         should_stop, on_step)
                else:
                    prompt = self.prompt_ids(backend, request)
                    result = run(backend, prompt, request.config, on_frame=on_frame, should_stop=should_stop,
                                 tools=TOOL_CALLS)
            except ConfigError as error:
                raise ApiError(400, str(error)) from None
            except BackendError as error:
                raise ApiError(500, str(error), "server_error") from None
        finally:
            lease.release()
        if acting:
            self.save(request, step_turns(acted.steps, request.config, request.model), {"world": acted.spec})
            return acted.reply
        calls = split_tool_calls(result.text)[1] if request.parse_tools else []
        self.save(request, [TurnRecord("assistant", result.text, result, request.config, request.model,
                                       [{"step": i, **c} for i, c in enumerate(calls)])])
        return reply(result, request, len(prompt), speaks_world(backend))

    def start(self, lease: Lease, request: ChatRequest, emit: Callable[[tuple], None]) -> threading.Event:
        """Run in a worker thread: emit(("frame", f)) per frame, ("step", step) per reply of a model
        acting in its world, then ("done", reply) or ("error", ApiError). Setting the returned event
        stops the generation after its frame."""
        stop = threading.Event()

        def work() -> None:
            try:
                answer = self.generate(lease, request, lambda f: emit(("frame", f)), stop.is_set,
                                       lambda step: emit(("step", step)))
                emit(("done", answer))
            except ApiError as error:
                emit(("error", error))
            except Exception:  # noqa: BLE001 - logged here; the client gets a sentence, not the traceback
                log.exception("a /v1 generation failed")
                emit(("error", internal_error()))

        threading.Thread(target=work, name="v1-generation", daemon=True).start()
        return stop

    # -- the session -----------------------------------------------------------------------------
    def save(self, request: ChatRequest, answer: list[TurnRecord], meta: dict[str, Any] | None = None) -> None:
        """Keep the call: the client's messages, then the answer's turns (one generation, or every
        step of a model acting in its world), in one transaction."""
        store = self.ctx.store
        if not self.options.store_calls or store is None:
            return
        users = [m["content"] for m in request.messages if m["role"] == "user"]
        title = " ".join((users[-1] if users else "API call").split())[:80] or "API call"
        turns = [TurnRecord(m["role"], m["content"]) for m in request.messages] + answer
        try:
            store.save_exchange(None, turns, kind="api", title=title, model=request.model,
                                meta={"stream": request.stream, "diffusing": request.diffusing,
                                      "tools": len(request.tools), **(meta or {})})
        except (StoreError, ValueError) as error:
            log.warning("an API call was answered but not stored: %s", error)


def internal_error() -> ApiError:
    return ApiError(500, "The server failed while answering; the details are in its log.", "server_error",
                    "internal_error")

