"""The /v1 routes on Gradio's FastAPI app: GET /v1/models and POST /v1/chat/completions
(JSON, or server-sent events with `stream: true`). Every answer that is not 200 is an OpenAI
error object; nothing of a traceback leaves the server (it goes to the server's log)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from engine import json_limits

from .. import cross_site
from ..conversation_world import speaks_world
from . import protocol, world
from .canvas import committed_text, diffusing_view, text_delta
from .protocol import ApiError, ChatRequest
from .service import ApiOptions, ChatService, internal_error

log = logging.getLogger("diffusion_playground.api")
# bodies parsed at once, each in a worker thread: a stream of hostile bodies queues here instead of
# taking every core and thread from the page (the scan and json.loads never run on the event loop)
PARSING = anyio.CapacityLimiter(2)
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Content-Encoding": "identity"}


def error_response(error: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


def _check_key(request: Request, options: ApiOptions) -> None:
    """401 without the configured key; then the cross-site rule (app/cross_site.py)."""
    if options.api_key and not cross_site.has_valid_key(request, options.api_key):
        raise ApiError(401, "A valid API key is needed: send the header 'Authorization: Bearer <key>' with the "
                            "key the server was started with.", "invalid_request_error", "invalid_api_key")
    refused = cross_site.refusal(request, options.allowed_origins, options.api_key)
    if refused is not None:
        raise ApiError(refused.status, refused.message, code=refused.code)


async def _read_json(request: Request, limit: int) -> Any:
    too_big = ApiError(413, f"The request body is larger than {limit} bytes; send a shorter conversation.",
                       "invalid_request_error", "request_too_large")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    body, size = bytearray(), 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise too_big
        body += part
    try:
        return await anyio.to_thread.run_sync(json_limits.loads, bytes(body), "The request body", limit,
                                              limiter=PARSING)
    except json_limits.JsonLimitError as error:
        raise ApiError(400, str(error)) from None


def _sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


async def _admit(service: ChatService, name: str) -> Any:
    """The model's lease, waited for in a worker thread. If this request is cancelled while it
    waits, the thread still finishes: the lease it got is handed back, never leaked."""
    got: list[Any] = []

    def wait() -> Any:
        got.append(service.admit(name))
        return got[0]

    try:
        return await run_in_threadpool(wait)
    except BaseException:
        for lease in got:
            lease.release()
        raise


def _start(service: ChatService, lease: Any, request: ChatRequest) -> tuple[asyncio.Queue, Any]:
    """Start the generation now, before the response is sent: a client that leaves before the
    stream begins still gets its model released when the run ends. -> (events, stop event)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()

    def emit(event: tuple) -> None:
        try:
            loop.call_soon_threadsafe(events.put_nowait, event)
        except RuntimeError:
            pass                               # the server is shutting down

    return events, service.start(lease, request, emit)


async def _stream(events: asyncio.Queue, stop: Any, backend: Any, request: ChatRequest) -> AsyncIterator[bytes]:
    """Chunks: the role, then content (committed text deltas, or whole canvases when diffusing),
    then the finish reason (with tool_calls), then usage when asked, then [DONE]. A model acting
    in its world (app/api/world.py) sends each call it ran as a `world_call` chunk, and its answer
    whole once it is read: the calls' markup is never content (diffusing canvases aside)."""
    cid, model = protocol.new_id(), request.model
    usage_extra = {"usage": None} if request.include_usage else {}
    acting, world_format = world.runs_world(backend, request), speaks_world(backend)

    def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> bytes:
        return _sse({**protocol.chunk(cid, model, delta, reason, **extra), **usage_extra})

    # with tools, or acting in the world, text is held until the calls are read
    sent, hold, steps, canvas = "", request.parse_tools or acting, 0, ""
    try:
        yield chunk({"role": "assistant", "content": ""})
        while True:
            event = await events.get()
            if event[0] == "frame":
                frame = event[1]
                if request.diffusing:
                    canvas, extension = diffusing_view(backend, frame)
                    yield chunk({"content": canvas}, diffusion={**extension, "step": steps} if acting else extension)
                elif not hold:
                    delta = text_delta(sent, committed_text(backend, frame))
                    if delta:
                        sent += delta
                        yield chunk({"content": delta})
                continue
            if event[0] == "step":
                steps += 1
                view = world.call_view(event[1])
                if view is not None:
                    yield chunk({}, world_call=view)
                continue
            if event[0] == "error":
                yield _sse(event[1].body())
                break
            answer: protocol.Reply = event[1]
            content = answer.content or ""
            delta: dict[str, Any] = {}
            if not request.diffusing:
                rest = content if hold else (content[len(sent):] if content.startswith(sent) else "")
                if rest:
                    delta["content"] = rest
            elif world_format and content and content != canvas:
                delta["content"] = content     # the answer replaces the last canvas (the call that held it)
            if answer.tool_calls:
                delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(answer.tool_calls)]
            yield chunk(delta, answer.finish_reason)
            if request.include_usage:
                yield _sse(protocol.usage_chunk(cid, model, answer.usage))
            break
        yield b"data: [DONE]\n\n"
    finally:
        stop.set()                             # a client that went away stops the model at its next frame


def make_router(service: ChatService) -> APIRouter:
    router = APIRouter()
    options = service.options

    @router.get("/v1/models")
    async def list_models(request: Request) -> JSONResponse:
        try:
            _check_key(request, options)
            rows = await run_in_threadpool(service.models)
            return JSONResponse({"object": "list", "data": rows})
        except ApiError as error:
            return error_response(error)
        except Exception:  # noqa: BLE001
            log.exception("GET /v1/models failed")
            return error_response(internal_error())

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        try:
            _check_key(request, options)
            body = await _read_json(request, options.max_body_bytes)
            chat = await run_in_threadpool(protocol.read_request, body, service.defaults_for)
            lease = await _admit(service, chat.model)
            if chat.stream:
                events, stop = _start(service, lease, chat)
                return StreamingResponse(_stream(events, stop, lease.backend, chat), media_type="text/event-stream",
                                         headers=SSE_HEADERS)
            answer = await run_in_threadpool(service.generate, lease, chat)
            return JSONResponse(protocol.completion(protocol.new_id(), chat, answer))
        except ApiError as error:
            return error_response(error)
        except Exception:  # noqa: BLE001
            log.exception("POST /v1/chat/completions failed")
            return error_response(internal_error())

    @router.api_route("/v1/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
    async def unknown(request: Request, rest: str) -> JSONResponse:
        try:
            _check_key(request, options)
        except ApiError as error:
            return error_response(error)
        known = {"models": "GET", "chat/completions": "POST"}
        if rest.strip("/") in known:
            return error_response(ApiError(405, f"/v1/{rest.strip('/')} takes {known[rest.strip('/')]}, not "
                                                f"{request.method}.", code="method_not_allowed"))
        return error_response(ApiError(404, f"There is no route /v1/{rest[:80]}; this server answers "
                                            "GET /v1/models and POST /v1/chat/completions.", code="unknown_url"))

    return router


def mount(app: FastAPI, ctx: Any, options: ApiOptions | None = None) -> ChatService:
    """Add /v1 to a running Gradio app (its FastAPI `demo.app`) and return the service behind it."""
    service = ChatService(ctx, options or ApiOptions())
    app.include_router(make_router(service))
    return service
