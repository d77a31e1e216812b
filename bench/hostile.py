"""Hostile JSON, as a CLI: how the input checks scale, and whether the page stays up under them.

    python -m bench hostile [--max-mb 8] [--seconds 10] [--senders 4] [--json]

1. The nesting scan (engine/json_limits.py) on texts built to make a scanner work hard, from
   64 KB up to --max-mb: seconds (median of 3) and work (characters handed to C) per character,
   next to the scan it replaced on the red team's text at small sizes (it grew 4x per doubling).
2. A served playground (no model is loaded: hostile bodies never reach one) while --senders
   threads post hostile bodies for --seconds to /v1/chat/completions (1 MB, the body limit) and
   /apps/api/s/ID/call (64 KB): the page `/` is fetched every 200 ms and each wait is timed.
   Target (issue 47): no wait over 1 s.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import threading
import time
from typing import Any

from engine import json_limits

FAMILIES = {
    "escaped-quotes-unterminated": lambda n: '"' + '\\"' * (n // 2),
    "empty-strings": lambda n: "[" + '"",' * (n // 3) + '""]',
    "brackets": lambda n: "[]" * (n // 2),
}
OLD_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)   # the scan before issue 47
TARGET_S = 1.0
POLL_S = 0.2


def _old_scan(text: str) -> None:
    for _ in OLD_TOKENS.finditer(text):
        pass


def _seconds(fn: Any, *args: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def scan_rows(max_mb: float) -> list[dict[str, Any]]:
    rows, size = [], 64 * 1024
    while size <= max_mb * 1024 * 1024:
        for family, build in FAMILIES.items():
            text = build(size)
            _, work = json_limits.scan(text)
            rows.append({"family": family, "chars": len(text), "seconds": _seconds(json_limits.scan, text),
                         "work_per_char": work / len(text)})
        size *= 2
    for size in (4096, 8192, 16384):
        text = FAMILIES["escaped-quotes-unterminated"](size)
        rows.append({"family": "red-team text, the old scan", "chars": len(text),
                     "seconds": _seconds(_old_scan, text, repeat=1), "work_per_char": None})
    return rows


def _hostile_bodies() -> dict[str, bytes]:
    head = b'{"model": "sprout-bd", "messages": [{"role": "user", "content": "'
    return {"v1": head + b'\\"' * ((1_000_000 - len(head)) // 2 - 8),
            "apps": b'{"name": "view_cart", "arguments": {"a": "' + b'\\"' * 32_000}


def serve_rows(seconds: float, senders: int) -> dict[str, Any]:
    import httpx

    from app.api import ApiOptions
    from app.state import AppContext
    from app.ui import build_app
    from launch import serve

    folder = tempfile.mkdtemp(prefix="dp-hostile-")
    ctx = AppContext.create(f"{folder}/sessions.db", watch=False)
    demo = build_app(ctx)
    with __import__("socket").socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = serve(demo, "127.0.0.1", port, block=False, ctx=ctx, api=ApiOptions()).rstrip("/")
    bodies, stop, statuses, waits = _hostile_bodies(), threading.Event(), [], []
    session = httpx.post(root + "/apps/api/sessions", headers={"content-type": "application/json"}).json()["session"]
    targets = {"v1": root + "/v1/chat/completions", "apps": f"{root}/apps/api/s/{session}/call"}

    def send(which: str) -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                reply = client.post(targets[which], content=bodies[which], headers={"content-type": "application/json"})
                statuses.append((which, reply.status_code))

    threads = [threading.Thread(target=send, args=("v1" if i % 2 == 0 else "apps",), daemon=True)
               for i in range(senders)]
    try:
        httpx.get(root + "/", timeout=60)                       # warm: the first page build is not the test
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + seconds
        with httpx.Client(timeout=60) as client:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                client.get(root + "/").raise_for_status()
                waits.append(time.perf_counter() - started)
                time.sleep(POLL_S)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        demo.close()
        ctx.close()
    codes = sorted({f"{w} {c}" for w, c in statuses})
    return {"page_polls": len(waits), "page_wait_max_s": max(waits), "page_wait_median_s": statistics.median(waits),
            "hostile_requests": len(statuses), "hostile_statuses": codes, "senders": senders, "seconds": seconds,
            "target_s": TARGET_S, "met": max(waits) <= TARGET_S}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-mb", type=float, default=8.0, help="largest text scanned (MB; imports allow 32)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long hostile bodies are sent")
    parser.add_argument("--senders", type=int, default=4, help="threads sending hostile bodies")
    parser.add_argument("--no-server", action="store_true", help="only the scan table")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"scan": scan_rows(args.max_mb)}
    if not args.no_server:
        report["server"] = serve_rows(args.seconds, args.senders)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{'text':32} {'chars':>10} {'seconds':>9} {'work/char':>9}")
    for row in report["scan"]:
        work = "-" if row["work_per_char"] is None else f"{row['work_per_char']:.2f}"
        print(f"{row['family']:32} {row['chars']:>10,} {row['seconds']:>9.4f} {work:>9}")
    if "server" in report:
        s = report["server"]
        print(f"\nthe page under {s['senders']} senders of hostile bodies for {s['seconds']:g} s: {s['page_polls']} "
              f"polls, wait median {s['page_wait_median_s'] * 1000:.0f} ms, max {s['page_wait_max_s'] * 1000:.0f} ms "
              f"(target <= {TARGET_S * 1000:.0f} ms: {'met' if s['met'] else 'MISSED'}); "
              f"{s['hostile_requests']} hostile requests answered: {', '.join(s['hostile_statuses'])}")
    return 0
