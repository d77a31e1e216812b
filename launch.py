"""Start the Diffusion Playground: `python launch.py [--model NAME_OR_PATH] [--baseline NAME_OR_PATH]
[--host 127.0.0.1] [--port 7860] [--db PATH] [--device auto|cpu|cuda]`.

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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from app.state import DEFAULT_BASELINE, DEFAULT_MODEL
    from sessions import default_db_path

    p = argparse.ArgumentParser(prog="python launch.py", description="Start the Diffusion Playground in a browser.")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"diffusion model: preset, folder or path ({DEFAULT_MODEL})")
    p.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"AR baseline for Compare ({DEFAULT_BASELINE})")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--db", default=str(default_db_path()), help="session database (default: %(default)s)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    return p.parse_args(argv)


def serve(demo, host: str, port: int, block: bool = True) -> str:
    """Launch a built app (shared with the tests); returns its local URL."""
    from app.ui import launch_kwargs

    demo.queue(default_concurrency_limit=4)
    _app, url, _share = demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True,
                                    run_history=False, **launch_kwargs())
    if block:
        print(f"Diffusion Playground is running at {url} (Ctrl+C to stop).", flush=True)
        demo.block_thread()
    return url


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from app.state import AppContext
    from app.ui import build_app
    from engine.backends.base import BackendError, pick_device

    try:
        pick_device(args.device)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ctx = AppContext.create(args.db, model=args.model, baseline=args.baseline, device=args.device)
    for notice in ctx.notices:
        print(f"note: {notice}", file=sys.stderr)
    demo = build_app(ctx)
    try:
        serve(demo, args.host, args.port)
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
