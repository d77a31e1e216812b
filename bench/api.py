"""`python -m bench api`: load on an OpenAI-compatible server (this playground's /v1,
vLLM, SGLang). For each number of concurrent clients, `--requests` streamed chat completions
are shared among that many threads; each request records its time to the first streamed
content, its total time, its completion tokens (the server's usage) and whether it failed.

Per client count it prints requests/s and tokens/s (over the level's wall time), p50/p95 time
to first token and p50/p95 total time, and errors. One request before the first level warms
the server up (loads the model) and is not counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.report import percentile

PROMPT = "Add 2 pink hoodies in size XL."


def one_request(client: Any, model: str, prompt: str, max_tokens: int | None) -> dict[str, Any]:
    """One streamed completion: {ttft_s, total_s, tokens, error}."""
    started = time.perf_counter()
    first, tokens = None, 0
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], "stream": True,
                            "stream_options": {"include_usage": True}, "temperature": 0}
    if max_tokens:
        body["max_tokens"] = max_tokens
    try:
        for chunk in client.chat.completions.create(**body):
            if chunk.usage is not None:
                tokens = int(chunk.usage.completion_tokens or 0)
            delta = chunk.choices[0].delta if chunk.choices else None
            if first is None and delta is not None and (delta.content or delta.tool_calls):
                first = time.perf_counter() - started
    except Exception as error:  # noqa: BLE001 - a failed request is counted, not fatal
        return {"ttft_s": None, "total_s": time.perf_counter() - started, "tokens": 0,
                "error": f"{type(error).__name__}: {str(error)[:160]}"}
    return {"ttft_s": first, "total_s": time.perf_counter() - started, "tokens": tokens, "error": None}


def run_level(client: Any, model: str, clients: int, requests: int, prompt: str,
              max_tokens: int | None) -> dict[str, Any]:
    """`requests` completions over `clients` threads; the numbers of this level."""
    barrier = threading.Barrier(clients)

    def worker(share: int) -> list[dict[str, Any]]:
        barrier.wait()                                   # every client starts together
        return [one_request(client, model, prompt, max_tokens) for _ in range(share)]

    shares = [requests // clients + (i < requests % clients) for i in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        done = [r for rs in pool.map(worker, shares) for r in rs]
    wall = time.perf_counter() - started
    ok = [r for r in done if r["error"] is None]
    ttft = [r["ttft_s"] for r in ok if r["ttft_s"] is not None]
    total = [r["total_s"] for r in ok]
    tokens = sum(r["tokens"] for r in ok)

    def pct(values: list[float], q: float) -> float | None:
        return round(percentile(values, q), 4) if values else None

    return {"clients": clients, "requests": len(done), "ok": len(ok), "errors": len(done) - len(ok),
            "error_examples": sorted({r["error"] for r in done if r["error"]})[:3],
            "wall_s": round(wall, 3), "requests_per_s": round(len(ok) / wall, 3) if wall > 0 else 0.0,
            "ttft_p50_s": pct(ttft, 50), "ttft_p95_s": pct(ttft, 95),
            "total_p50_s": pct(total, 50), "total_p95_s": pct(total, 95),
            "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 2) if wall > 0 else 0.0}


def run_benchmark(url: str, model: str, clients: list[int], requests: int, prompt: str = PROMPT,
                  max_tokens: int | None = None, api_key: str | None = None, warmup: bool = True) -> dict[str, Any]:
    import httpx
    import openai

    client = openai.OpenAI(base_url=url.rstrip("/"), api_key=api_key or "none", max_retries=0,
                           timeout=httpx.Timeout(600.0, connect=10.0),
                           http_client=httpx.Client(limits=httpx.Limits(max_connections=max(clients) + 2)))
    if warmup:
        first = one_request(client, model, prompt, max_tokens)
        if first["error"]:
            raise RuntimeError(f"The warm-up request to {url} ({model}) failed: {first['error']}")
    levels = [run_level(client, model, c, requests, prompt, max_tokens) for c in clients]
    return {"url": url, "model": model, "prompt": prompt, "max_tokens": max_tokens, "requests_per_level": requests,
            "levels": levels}


def table(report: dict[str, Any]) -> str:
    head = (f"{'clients':>7} {'req/s':>7} {'TTFT p50':>9} {'TTFT p95':>9} {'total p50':>10} {'total p95':>10} "
            f"{'tok/s':>8} {'errors':>7}")
    rows = [f"{report['model']} at {report['url']}, {report['requests_per_level']} requests per level", head,
            "-" * len(head)]

    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for lv in report["levels"]:
        rows.append(f"{lv['clients']:>7} {lv['requests_per_s']:>7.2f} {s(lv['ttft_p50_s']):>9} "
                    f"{s(lv['ttft_p95_s']):>9} {s(lv['total_p50_s']):>10} {s(lv['total_p95_s']):>10} "
                    f"{lv['tokens_per_s']:>8.1f} {lv['errors']:>7}")
    return "\n".join(rows)


def _clients(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--clients takes whole numbers separated by commas, got {text!r}.") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--clients needs numbers of at least 1, got {text!r}.")
    return values


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m bench api", description=__doc__.split("\n\n")[0])
    cli.add_argument("--url", required=True, help="the server's base URL, e.g. http://127.0.0.1:7860/v1")
    cli.add_argument("--model", required=True, help="a model id the server lists at GET /models")
    cli.add_argument("--clients", type=_clients, default=[1, 4, 8], help="concurrent clients per level (1,4,8)")
    cli.add_argument("--requests", type=int, default=16, help="requests per level (16)")
    cli.add_argument("--prompt", default=PROMPT)
    cli.add_argument("--max-tokens", type=int, default=None, help="max_tokens of each request (the model's default)")
    cli.add_argument("--api-key-env", default="DP_REMOTE_API_KEY", help="environment variable holding the key")
    cli.add_argument("--no-warmup", action="store_true")
    cli.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = cli.parse_args(argv)
    if args.requests < 1:
        print("error: --requests must be at least 1.", file=sys.stderr)
        return 2
    from bench.report import print_report

    return print_report(lambda: run_benchmark(args.url, args.model, args.clients, args.requests, args.prompt,
                                              args.max_tokens, os.environ.get(args.api_key_env),
                                              warmup=not args.no_warmup),
                        args.json, table)
