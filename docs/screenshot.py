"""Take docs/playground.png: the Chat tab after one answer, in headless Chromium at 1440x960.

    .venv/bin/python docs/screenshot.py [--out docs/playground.png]
    .venv/bin/python docs/screenshot.py --scaffold        # docs/scaffold.png: the JSON schema example
    .venv/bin/python docs/screenshot.py --agent           # docs/agent-pages.png: a guest checkout, its page beside
    .venv/bin/python docs/screenshot.py --agent-demo      # docs/agent-demo.png: the black T-shirt scenario, its
                                                          # calls run in the shop page (WebMCP), the page's picture

Uses the bundled Sprout-BD when models/sprout-bd loads; otherwise a scripted stand-in backend
(tests/fakes.py) that "knows" one tool call (or, with --scaffold, the example order as JSON),
slowed down so the run looks like a real one.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_OFFLINE"] = "1"

PROMPT = "Please add a blue dress in size L to the cart."
# the held-out task "Order a blue sweater (L) for Zeno Price, ...": search, add, check out as a guest
ANSWER = '<tool_call>{"name":"search_products","arguments":{"query":"dress","color":"blue","size":"L"}}</tool_call>'
ORDER = '{"product":"rain jacket","colour":"blue","size":"M","quantity":2,"gift":false}'
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def backends(answer: str = ANSWER) -> tuple[dict, str]:
    from app.state import ModelRegistry
    from engine.backends.base import BackendError

    try:
        import torch

        torch.set_num_threads(1)        # a small model on a shared CPU: two threads only contend (docs/animate.py)
        return {"sprout-bd": ModelRegistry(device="cpu").get("sprout-bd")}, "sprout-bd"
    except BackendError:
        from tests.e2e.app_fakes import Slow
        from tests.fakes import FakeDiffusionBackend

        return {"stand-in-bd": Slow(FakeDiffusionBackend(answer, name="stand-in-bd"), 0.05)}, "stand-in-bd"


def agent_checkout(page) -> None:
    """The Agent tab runs a held-out guest checkout to its verdict; the page beside it reaches the order."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Agent").click()
    picker = page.locator("#agent-task input").first
    picker.click()
    picker.fill("blue sweater (L)")
    page.get_by_role("option").filter(has_text="Zeno Price").first.click()
    expect(page.locator("#agent-instruction textarea")).to_have_value(re.compile("blue sweater"), timeout=10_000)
    page.locator("#run-agent").click()
    expect(page.locator("#agent-verdict")).to_contain_text("Success", timeout=180_000)
    frame = page.frame_locator("#agent-world-page iframe")
    expect(frame.locator("#confirmation")).to_be_visible(timeout=15_000)
    page.wait_for_timeout(800)
    # the panel, the steps, the verdict and the page in one screen
    page.locator("#agent-status").evaluate("e => window.scrollTo(0, e.getBoundingClientRect().top + scrollY - 8)")
    page.wait_for_timeout(300)


def agent_demo(page) -> None:
    """The Agent tab's black T-shirt scenario with the tools in the web pages: the order confirmed in
    the frame, the verdict, and the picture the app's browser took of the final page."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Agent").click()
    page.locator("#agent-where").get_by_text("its web pages (WebMCP)").click()
    page.locator("#agent-scenario-black-tshirt").click()
    expect(page.locator("#agent-verdict")).to_contain_text(re.compile("Success|Failed"), timeout=600_000)
    expect(page.locator("#agent-page-shot img")).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)
    page.locator("#agent-status").evaluate("e => window.scrollTo(0, e.getBoundingClientRect().top + scrollY - 8)")
    page.wait_for_timeout(300)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="default: docs/playground.png (docs/scaffold.png with --scaffold)")
    parser.add_argument("--scaffold", action="store_true", help="answer the JSON schema box's example instead")
    parser.add_argument("--agent", action="store_true",
                        help="the Agent tab on a held-out guest checkout, the shop page beside it")
    parser.add_argument("--agent-demo", action="store_true",
                        help="the Agent tab's black T-shirt scenario, its tools run in the web pages")
    args = parser.parse_args()
    default = ("agent-demo.png" if args.agent_demo else "agent-pages.png" if args.agent
               else "scaffold.png" if args.scaffold else "playground.png")
    args.out = args.out or str(ROOT / "docs" / default)
    from playwright.sync_api import expect, sync_playwright

    from app.state import AppContext
    from app.warmup import warm_up
    from tests.e2e.app_fakes import running_app

    loaded, name = backends(ORDER if args.scaffold else ANSWER)
    ctx = AppContext.create(Path(tempfile.mkdtemp()) / "sessions.db", model=name, baseline=name, preloaded=loaded,
                            watch=False)
    ctx.notices.clear()
    warm_up(ctx, block=True)
    with running_app(ctx) as (_demo, url), sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 960})
        page.goto(url)
        if args.agent or args.agent_demo:
            (agent_demo if args.agent_demo else agent_checkout)(page)
            page.screenshot(path=args.out)
            browser.close()
            ctx.close()
            print(f"wrote {args.out} ({name})")
            return 0
        if args.scaffold:                # the example schema, its prompt and a length that fits it
            page.locator("#chat-schema-box").click()
            page.locator("#chat-schema-example").click()
            expect(page.locator("#chat-schema textarea")).not_to_have_value("", timeout=10_000)
        else:
            page.locator("#prompt textarea").fill(PROMPT)
        page.locator("#send").click()
        expect(page.locator('#live-panel [data-mode="done"]')).to_be_visible(timeout=120_000)
        expect(page.locator(".js-plotly-plot").nth(1)).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1500)
        # the first screen as a person sees it: the conversation, the message box and the live panel
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(300)
        page.screenshot(path=args.out)
        browser.close()
    ctx.close()
    print(f"wrote {args.out} ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
