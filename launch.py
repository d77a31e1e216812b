"""Start the Diffusion Playground: `python launch.py [--model NAME_OR_PATH] [--baseline NAME_OR_PATH]
[--host 127.0.0.1] [--port 7860] [--db PATH] [--device auto|cpu|cuda|cuda:N] [--no-api] [--api-key KEY]
[--no-store-api] [--allow-origin ORIGIN ...] [--allow-host NAME ...] [--allow-model-paths]
[--allow-remote-urls] [--trust-remote-code FOLDER ...]`.

The page and the OpenAI-compatible API (/v1, app/api/) are served together, on loopback unless
--host says otherwise; another host needs an API key (--api-key or $DP_API_KEY).

Defaults: the bundled Sprout-BD (models/sprout-bd) and its AR twin (models/sprout-ar), a session
database in the per-user data folder. Nothing here reaches the network: analytics are off, the
Hugging Face hub is offline, and there is no share link. A missing model or an unusable database
does not stop the app; the page says what is wrong.
"""

from __future__ import annotations

import os

# Before gradio / transformers are imported: they read these once.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from app.state import DEFAULT_BASELINE, DEFAULT_MODEL
    from sessions import default_db_path

    p = argparse.ArgumentParser(prog="python launch.py", description="Start the Diffusion Playground in a browser.")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"diffusion model: preset, folder or path ({DEFAULT_MODEL})")
    p.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"AR baseline for Compare ({DEFAULT_BASELINE})")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--db", default=str(default_db_path()), help="session database (default: %(default)s)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (auto: spread over the GPUs)")
    p.add_argument("--api", action=argparse.BooleanOptionalAction, default=True,
                   help="serve the OpenAI-compatible API at /v1 beside the page (default: on)")
    p.add_argument("--api-key", default=os.environ.get(API_KEY_ENV) or None,
                   help=f"require 'Authorization: Bearer KEY' on /v1 (default: ${API_KEY_ENV})")
    p.add_argument("--no-store-api", dest="store_api", action="store_false",
                   help="do not keep /v1 calls as sessions of kind 'api'")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web page origin (e.g. http://localhost:3000) besides the app's own that may use the "
                        "app's APIs (Gradio's, /v1, /apps) without the key; repeatable (app/origin_policy.py)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a name the server answers to besides the address it listens on (a proxy's or LAN "
                        "name); repeatable. Other Host headers are refused (DNS rebinding)")
    p.add_argument("--allow-model-paths", action="store_true",
                   help="let requests (/v1, the pickers) name any model folder by its path, not only presets, "
                        "folders under models/ and servers in models/servers.json (engine/model_access.py)")
    p.add_argument("--allow-remote-urls", action="store_true",
                   help="let requests name any openai:URL#MODEL server (it gets no API key)")
    p.add_argument("--trust-remote-code", action="append", default=[], metavar="NAME",
                   help="a model (preset, folder under models/, or path) whose own Python files may run when it "
                        "loads; repeatable (otherwise a person allows it in the Models tab)")
    return p.parse_args(argv)


API_KEY_ENV = "DP_API_KEY"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def api_refusal(args: argparse.Namespace) -> str | None:
    """Why these options must not start: an API open to the network with no key."""
    if args.api and not args.api_key and args.host not in LOOPBACK and not args.host.startswith("127."):
        return (f"--host {args.host} would open the API at /v1 to other machines without a key: pass "
                f"--api-key KEY (or set ${API_KEY_ENV}), or --no-api, or listen on 127.0.0.1.")
    return None


SERVED_WITHIN_S = 60.0


def own_start_check(demo) -> dict[str, bool]:
    """launch() keywords that turn off Gradio's check of its own page, which serve() makes itself
    (wait_served). Gradio's check is one HEAD request with a 3 s timeout, and a timeout ends the
    start at once with "When localhost is not accessible, a shareable link must be created": a
    busy machine fails to start (seen in an e2e test at a load of 9 on 2 cores, where the same
    HEAD usually takes 0.2 s). The switch is launch()'s private `_frontend` (gradio 6,
    blocks.py); when a Gradio release drops it, its own check stays on."""
    import inspect

    return {"_frontend": False} if "_frontend" in inspect.signature(demo.launch).parameters else {}


def wait_served(url: str, within_s: float = SERVED_WITHIN_S) -> None:
    """Return once `url` answers 200, asking again after each timeout or refusal; after
    `within_s`, say so in a sentence."""
    import time

    import httpx

    deadline, last = time.monotonic() + within_s, "no answer"
    while time.monotonic() < deadline:
        try:
            answer = httpx.head(url, timeout=10)
            if answer.status_code == 200:
                return
            last = f"status {answer.status_code}"
        except httpx.HTTPError as error:
            last = type(error).__name__
        time.sleep(0.25)
    raise RuntimeError(f"The playground's page at {url} did not answer within {within_s:.0f} s ({last}); "
                       "is something on this machine blocking connections to it?")


def serve(demo, host: str, port: int, block: bool = True, ctx=None, api=None, allow_hosts=(),
          allowed_origins=()) -> str:
    """Launch a built app (shared with the tests); returns its local URL. With `ctx` and `api`
    (app.api.ApiOptions), /v1 is served on the same app, models and session store. The shop and
    office web apps are served at /apps/ (app/web_apps.py), on ctx's page sessions: the worlds
    the tabs show beside their panels (app/world_page.py). Every request's Host and Origin are
    checked first (app/origin_policy.py): `allow_hosts` are names besides `host`, and the origins
    allowed are api.allowed_origins (read live), or `allowed_origins` without the API."""
    from types import SimpleNamespace

    from app import web_apps
    from app.csp import page_middleware
    from app.origin_policy import host_names, quiet_gradio_cors
    from app.ui import launch_kwargs

    demo.queue(default_concurrency_limit=4)
    # The page's Content-Security-Policy and browser-only escaping of toasts (app/csp.py,
    # app/toasts.py): middleware must be given when the app is built, not added once it runs.
    # /apps/ and /v1 can only be added once launch() returns; until then their requests wait
    # (app/late_routes.py) rather than meet a 404.
    mounted = threading.Event()
    settings = api if api is not None else SimpleNamespace(allowed_origins=tuple(allowed_origins), api_key=None)
    middleware = page_middleware(mounted, host_names(host, allow_hosts), settings)
    server, url, _share = demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True,
                                      run_history=False, app_kwargs={"middleware": middleware}, **launch_kwargs(),
                                      **own_start_check(demo))
    wait_served(url)
    if not quiet_gradio_cors(server):
        raise RuntimeError("Gradio's CORS middleware was not found; app/origin_policy.py needs updating.")
    try:
        web_apps.mount(server, settings.allowed_origins, settings.api_key,
                       sessions=ctx.world_pages.sessions if ctx is not None else None)
        if ctx is not None:
            ctx.app_url = url            # the origin the Agent tab's browser may act on (app/page_venue.py)
        if api is not None and ctx is not None:
            from app.api import mount

            mount(server, ctx, api)
    finally:
        mounted.set()
    if block:
        print(f"Diffusion Playground is running at {url} (Ctrl+C to stop).", flush=True)
        if api is not None:
            print(f"OpenAI-compatible API: {url.rstrip('/')}/v1", flush=True)
        demo.block_thread()
    return url


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    refusal = api_refusal(args)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    from app.api import ApiOptions
    from app.state import AppContext
    from app.ui import build_app
    from engine.backends.base import BackendError
    from engine.backends.placement import pick_device
    from engine.model_access import ModelAccess

    try:
        pick_device(args.device)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    access = ModelAccess(allow_paths=args.allow_model_paths, allow_urls=args.allow_remote_urls)
    try:
        for name in args.trust_remote_code:
            access.trust(name, as_operator=True)
    except BackendError as exc:
        print(f"error: --trust-remote-code: {exc}", file=sys.stderr)
        return 2
    ctx = AppContext.create(args.db, model=args.model, baseline=args.baseline, device=args.device, access=access)
    for notice in ctx.notices:
        print(f"note: {notice}", file=sys.stderr)
    from app.warmup import warm_up

    ctx.warmup = warm_up(ctx)          # load and warm the models now, not on the first request
    demo = build_app(ctx)
    try:
        api = (ApiOptions(api_key=args.api_key, store_calls=args.store_api, allowed_origins=tuple(args.allow_origin))
               if args.api else None)
        serve(demo, args.host, args.port, ctx=ctx, api=api, allow_hosts=args.allow_host,
              allowed_origins=args.allow_origin)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port} ({exc}); pass another --port.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
