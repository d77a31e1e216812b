"""Hostile JSON, as a CLI: how the input checks scale, and whether the page stays up under them.

    python -m bench hostile [--max-mb 8] [--seconds 10] [--senders 4] [--json]

1. The nesting scan (engine/json_limits.py) on texts built to make a scanner work hard, from
   64 KB up to --max-mb: seconds (median of 3) and work (characters handed to C) per character,
   next to the scan it replaced on the red team's text at small sizes (it grew 4x per doubling).
2. A served playground (no model is loaded: hostile bodies never reach one): the page `/` is
   fetched every 200 ms alone for --seconds / 2, then while --senders processes post the red
   team's unterminated string for --seconds to /v1/chat/completions (1 MB, the body limit) and
   /apps/api/s/ID/call (64 KB), and each wait is timed. Target (issue 47): no wait over 1 s.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
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


# The senders and the poller run as processes of their own, so their Python does not share the
# server's GIL (in one process a client thread building 1 MB bodies is what the page waits for).
_SENDER = """
import sys, time, httpx
url, size, start, until = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
head = sys.argv[5].encode()
body = head + b'\\\\"' * ((size - len(head)) // 2 - 8)
codes = {}
time.sleep(max(0.0, start - time.time()))
with httpx.Client(timeout=120) as client:
    while time.time() < until:
        code = client.post(url, content=body, headers={"content-type": "application/json"}).status_code
        codes[code] = codes.get(code, 0) + 1
print(repr(codes))
"""
_POLLER = """
import json, sys, time, httpx
url, start, until, pause = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
waits = []
time.sleep(max(0.0, start - time.time()))
with httpx.Client(timeout=60) as client:
    while time.time() < until:
        started = time.perf_counter()
        client.get(url).raise_for_status()
        waits.append(time.perf_counter() - started)
        time.sleep(pause)
print(json.dumps(waits))
"""


STARTUP_S = 10.0          # the helper processes start (Python, httpx) before the measured window opens


def _poll(url: str, start: float, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _POLLER, url, str(start), str(start + seconds), str(POLL_S)],
                            stdout=subprocess.PIPE, text=True)


def _waits(poller: subprocess.Popen) -> dict[str, float]:
    waits = json.loads(poller.communicate(timeout=600)[0])
    return {"polls": len(waits), "median_s": statistics.median(waits), "max_s": max(waits)}


def serve_rows(seconds: float, senders: int) -> dict[str, Any]:
    import httpx

    from app.api import ApiOptions
    from app.state import AppContext
    from app.ui import build_app
    from launch import serve

    folder = tempfile.mkdtemp(prefix="dp-hostile-")
    ctx = AppContext.create(f"{folder}/sessions.db", watch=False)
    demo = build_app(ctx)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = serve(demo, "127.0.0.1", port, block=False, ctx=ctx, api=ApiOptions()).rstrip("/")
    try:
        session = httpx.post(root + "/apps/api/sessions", headers={"content-type": "application/json"},
                             timeout=60).json()["session"]
        targets = [(root + "/v1/chat/completions", 1_000_000,
                    '{"model": "sprout-bd", "messages": [{"role": "user", "content": "'),
                   (f"{root}/apps/api/s/{session}/call", 64 * 1024, '{"name": "view_cart", "arguments": {"a": "')]
        httpx.get(root + "/", timeout=60)                       # warm: the first page build is not the test
        quiet = _waits(_poll(root + "/", time.time() + STARTUP_S, seconds / 2))   # the page alone, this machine now
        start = time.time() + STARTUP_S
        sending = [subprocess.Popen([sys.executable, "-c", _SENDER, targets[i % 2][0], str(targets[i % 2][1]),
                                     str(start), str(start + seconds), targets[i % 2][2]], stdout=subprocess.PIPE,
                                    text=True) for i in range(senders)]
        attacked = _waits(_poll(root + "/", start + 1.0, seconds - 1.0))          # once the first bodies are in
        answered = [ast.literal_eval(p.communicate(timeout=600)[0].strip() or "{}") for p in sending]
    finally:
        demo.close()
        ctx.close()
    statuses: dict[str, int] = {}
    for i, codes in enumerate(answered):
        for code, count in codes.items():
            key = f"{'v1' if i % 2 == 0 else 'apps'} {code}"
            statuses[key] = statuses.get(key, 0) + count
    return {"page_alone": quiet, "page_under_attack": attacked, "hostile_statuses": statuses,
            "hostile_requests": sum(statuses.values()), "senders": senders, "seconds": seconds,
            "target_s": TARGET_S, "met": attacked["max_s"] <= TARGET_S}


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
        alone, attacked = s["page_alone"], s["page_under_attack"]
        print(f"\nthe page alone: {alone['polls']} polls, wait median {alone['median_s'] * 1000:.0f} ms, max "
              f"{alone['max_s'] * 1000:.0f} ms")
        print(f"the page under {s['senders']} processes sending hostile bodies for {s['seconds']:g} s: "
              f"{attacked['polls']} polls, wait median {attacked['median_s'] * 1000:.0f} ms, max "
              f"{attacked['max_s'] * 1000:.0f} ms (target <= {TARGET_S * 1000:.0f} ms: "
              f"{'met' if s['met'] else 'MISSED'}); {s['hostile_requests']} hostile requests answered: "
              + ", ".join(f"{k}: {v}" for k, v in sorted(s["hostile_statuses"].items())))
    return 0
