"""The web apps' routes: the pages, their assets, and a small JSON API over the session's world.

    GET  /apps/shop/?session=ID     the shop page        GET /apps/office/?session=ID  the office page
    GET  /apps/assets/NAME          the pages' scripts and styles (world/webapps/pages/)
    GET  /apps/api/tools?app=shop   the app's tools: the registry's definitions (name, title,
                                    description, inputSchema, annotations)
    POST /apps/api/sessions         a new session on a fresh world -> {"session": ID}
    GET  /apps/api/s/ID/state?app=  what the page draws (world/webapps/apps.py page_state)
    POST /apps/api/s/ID/call        {"name", "arguments"} -> the tool's response, exactly what
                                    world.tools.call_tool returns for the same call;
                                    with ?state=APP: {"answer": that response, "state": the page
                                    state after it}, one round trip instead of two

A call is validated as the agent loop validates a model's call (world.format.parse_call:
the registry's JSON schema), so a page that skipped its own check still cannot put a bad value
into the world. The pages carry their own Content-Security-Policy (PAGE_POLICY): scripts, styles
and requests from this origin only, no inline script, no eval, nothing framed, forms posted
nowhere. `routes(sessions, guard)` builds them; the playground mounts them with app/cross_site.py
as the guard, the benchmark's own server (`serve_in_thread`) with `same_origin_json`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from engine.json_limits import JsonLimitError, loads
from world.format import ParseError, dumps, parse_call
from world.tools import call_tool
from world.webapps.apps import APP_TOOLS, app_of, page_state, tools_of
from world.webapps.sessions import WorldSessions

PAGES = Path(__file__).parent / "pages"
PREFIX = "/apps"
MAX_CALL_BYTES = 64 * 1024
PARSING = anyio.CapacityLimiter(2)     # calls read and run at once, each in a worker thread
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
               "font-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'self'; object-src 'none'")
ASSET_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
SECURITY_HEADERS = {"content-security-policy": PAGE_POLICY, "x-content-type-options": "nosniff",
                    "referrer-policy": "no-referrer", "cache-control": "no-store"}

# guard(request) -> None (it may act) or (status, code, message): who may change a world
Guard = Callable[[Request], "tuple[int, str, str] | None"]


def same_origin_json(request: Request) -> tuple[int, str, str] | None:
    """The guard of a server with no --allow-origin and no key: a page of another origin may not
    act, and a body must be JSON (which no other site can send without a CORS preflight)."""
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    if origin is not None and origin.rstrip("/").lower() != own:
        return 403, "cross_site_request", "Pages of another origin may not act on these apps."
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return 415, "unsupported_media_type", "The body must be sent as Content-Type application/json."
    return None


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "code": code}, status_code=status, headers=SECURITY_HEADERS)


def _json(value: Any) -> Response:
    # dumps keeps the registry's key order, so the page reads what the built-in world returns
    return Response(dumps(value), media_type="application/json", headers=SECURITY_HEADERS)


def routes(sessions: WorldSessions, guard: Guard = same_origin_json) -> list[BaseRoute]:
    """The routes under /apps, over `sessions`."""

    def page(app: str) -> Callable[[Request], Response]:
        async def serve(_request: Request) -> Response:
            return FileResponse(PAGES / f"{app}.html", media_type="text/html; charset=utf-8",
                                headers=SECURITY_HEADERS)
        return serve

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        path = PAGES / name
        if "/" in name or path.suffix not in ASSET_TYPES or not path.is_file():
            return _error(404, "not_found", f"There is no asset {name[:60]!r}.")
        return FileResponse(path, media_type=ASSET_TYPES[path.suffix], headers=SECURITY_HEADERS)

    async def tools(request: Request) -> Response:
        app = request.query_params.get("app", "")
        if app not in APP_TOOLS:
            return _error(404, "unknown_app", f"There is no app {app[:40]!r}; choose shop or office.")
        return _json({"app": app, "tools": tools_of(app)})

    async def new_session(request: Request) -> Response:
        refused = guard(request)
        if refused is not None:
            return _error(*refused)
        return _json({"session": sessions.add()})

    async def state(request: Request) -> Response:
        found = sessions.get(request.path_params["session"])
        app = request.query_params.get("app", "")
        if found is None:
            return _error(404, "unknown_session", "This session does not exist (any more); open the app anew.")
        if app not in APP_TOOLS:
            return _error(404, "unknown_app", f"There is no app {app[:40]!r}; choose shop or office.")
        with found.lock:
            return _json(page_state(found.world, app))

    async def call(request: Request) -> Response:
        refused = guard(request)
        if refused is not None:
            return _error(*refused)
        found = sessions.get(request.path_params["session"])
        if found is None:
            return _error(404, "unknown_session", "This session does not exist (any more); open the app anew.")
        app = request.query_params.get("state")
        if app is not None and app not in APP_TOOLS:
            return _error(404, "unknown_app", f"There is no app {app[:40]!r}; choose shop or office.")
        raw = bytearray()
        async for part in request.stream():
            raw += part
            if len(raw) > MAX_CALL_BYTES:      # refused as it arrives, not after all of it is held
                break
        # reading the body and running the tool happen in a worker thread (at most PARSING at once):
        # neither a hostile body nor a tool holds the event loop that serves every other request
        return await anyio.to_thread.run_sync(_answer, found, bytes(raw), app, limiter=PARSING)

    return [Mount(PREFIX, routes=[
        Route("/shop/", page("shop")), Route("/office/", page("office")),
        Route("/assets/{name}", asset),
        Route("/api/tools", tools),
        Route("/api/sessions", new_session, methods=["POST"]),
        Route("/api/s/{session}/state", state),
        Route("/api/s/{session}/call", call, methods=["POST"]),
    ])]


def _answer(found: Any, raw: bytes, app: str | None) -> Response:
    """One call on a session's World: the body read (bounded: engine/json_limits.py), the tool run."""
    try:
        body = loads(raw, "The call", max_bytes=MAX_CALL_BYTES)
    except JsonLimitError as error:
        return _error(400, "bad_request", str(error))
    if not isinstance(body, dict) or app_of(str(body.get("name"))) is None:
        return _error(400, "bad_request", 'Send {"name": a tool of the shop or the office, "arguments": {...}}.')
    parsed = parse_call(dumps({"name": body["name"], "arguments": body.get("arguments", {})}))
    with found.lock:
        if isinstance(parsed, ParseError):
            answer = parsed.observation()
        else:
            try:
                answer = call_tool(found.world, parsed.name, parsed.arguments)
            except Exception as error:  # noqa: BLE001 - as the agent loop: a tool bug is an answer, not a 500
                answer = {"error": f"tool failed: {type(error).__name__}"}
        return _json(answer if app is None else {"answer": answer, "state": page_state(found.world, app)})


@contextmanager
def serve_in_thread(sessions: WorldSessions, host: str = "127.0.0.1") -> Iterator[str]:
    """The apps alone on a free loopback port, in a background thread, for the block; yields the
    base URL (http://127.0.0.1:PORT). What the WebMCP benchmark and the tests drive."""
    from starlette.applications import Starlette

    with serve_app_in_thread(Starlette(routes=routes(sessions)), host) as url:
        yield url


@contextmanager
def serve_app_in_thread(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Any ASGI app on a free loopback port in a background thread, for the block."""
    import socket

    import uvicorn

    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, name="webapps", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise OSError(f"The web apps could not listen on {host}:{port}.")
        threading.Event().wait(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=5)
