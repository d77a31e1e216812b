"""Draw docs/memory-cost.png: the cost of the history by position in a conversation, from the
JSON of `python -m bench agent --task-set conversations --json` (its `by_position`).

    .venv/bin/python docs/memory_plot.py runs/eval-grown-conv.json [more.json ...] [--out docs/memory-cost.png]

Two panels: median seconds per request and median model milliseconds per forward, at positions
1..6 of their conversations, one colour per model, named with what it read. plotly draws the
figure (its script inlined: nothing is fetched) and headless Chromium takes the picture, as
docs/screenshot.py does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]


READS = {"conversation": "whole conversation", "latest_request": "latest request only"}


def figure(reports: list[dict]) -> go.Figure:
    titles = ("median seconds per request", "median ms of model time per forward")
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles)
    palette = iter(qualitative.D3)
    for report in reports:
        for name, cost in report["by_position"].items():
            rows = cost["positions"]
            x = [r["position"] for r in rows]
            label = f"{Path(name).name} ({READS.get(cost.get('reads', ''), 'reads ?')})"
            colour = next(palette)
            hover = [f"{r['requests']} requests, {r['median_history_tokens']:.0f} history tokens" for r in rows]
            for col, key in ((1, "median_request_s"), (2, "median_forward_ms")):
                fig.add_trace(go.Scatter(x=x, y=[r[key] for r in rows], mode="lines+markers", name=label,
                                         legendgroup=label, showlegend=col == 1, line=dict(color=colour),
                                         hovertext=hover), row=1, col=col)
    fig.update_xaxes(title_text="position of the request in its conversation", dtick=1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(width=1100, height=420, margin=dict(l=50, r=20, t=40, b=90),
                      legend=dict(orientation="h", y=-0.28), template="plotly_white")
    return fig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="bench JSON reports with by_position")
    parser.add_argument("--out", default=str(ROOT / "docs" / "memory-cost.png"))
    args = parser.parse_args()
    reports = [json.loads(Path(p).read_text()) for p in args.reports]
    if not all("by_position" in r for r in reports):
        print("error: give reports of --task-set conversations (they carry by_position)", file=sys.stderr)
        return 2
    html = Path(tempfile.mkdtemp()) / "memory.html"
    figure(reports).write_html(html, include_plotlyjs=True, full_html=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1120, "height": 440})
        page.goto(html.as_uri())
        page.wait_for_selector(".main-svg")
        page.screenshot(path=args.out)
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
