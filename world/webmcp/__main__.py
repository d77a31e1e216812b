"""Drive any WebMCP page with a model, from the command line:

    python -m world.webmcp http://localhost:3000/ "Add 'call Ana' to my list" --model sprout-bd [--webmcp native]

Opens the page in headless Chromium (the driver stays on that page's origin: a request elsewhere is
refused and reported), lists the tools the page registered (document.modelContext), and runs the
agent loop (world.agent.act) on them until the model answers in text or calls finish. Each step
prints as it lands (the call and the page's answer); --json prints one object at the end instead.
Sprout knows only the playground's own shop and office tools; a page with other tools wants a
model that reads a tool list (`--system full`, the default for models without the world format).

--webmcp picks whose WebMCP runs the page's tools: native (the browser's own: Chromium 156 or newer,
launched with --enable-features=WebMCP), polyfill (world/webmcp/polyfill.js), or auto (native where
the browser has it; the default). The report says which ran (`webmcp`).

Exit status: 0 when the model answered, 1 when it gave no answer, 2 for input that cannot run
(an empty instruction, an unknown model, a page that does not load or has no tools).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from engine.errors import BackendError
from engine.trace import GenerationConfig
from world.agent import DEFAULT_MAX_REPLIES, act, default_system
from world.format import system_prompt
from world.webmcp.driver import CHROMIUM, MODES, PageToolsOf, WebMCPDriver, WebMCPUnavailable, first_line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m world.webmcp",
                                     description="Let a model use the tools a WebMCP page registers.")
    parser.add_argument("url", help="the page (its origin is the only one the browser may reach)")
    parser.add_argument("instruction", help="what the model should do on the page")
    parser.add_argument("--model", default="sprout-bd", help="catalog name, model folder, or py:module:function")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--system", choices=("auto", "full", "none"), default="auto",
                        help="the system prompt: full lists the page's tools; auto is none for models trained on "
                             "the playground's world format, full for others")
    parser.add_argument("--max-replies", type=int, default=DEFAULT_MAX_REPLIES)
    parser.add_argument("--gen-length", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a tool call may take in the page")
    parser.add_argument("--webmcp", choices=MODES, default="auto",
                        help="whose WebMCP runs the tools: the browser's own (native), polyfill.js, or auto "
                             "(native where the browser has it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the steps")
    return parser.parse_args(argv)


def load(spec: str, device: str) -> Any:
    """A catalog name or folder, or py:module:function (a factory: tests, custom backends)."""
    if spec.startswith("py:"):
        module, _, function = spec[3:].partition(":")
        return getattr(importlib.import_module(module), function)()
    from engine.catalog import load_backend

    return load_backend(spec, device)


def run(args: argparse.Namespace, say: Any = print) -> dict[str, Any]:
    """Open the page, run the loop; returns what --json prints. Raises ValueError with a sentence
    for input that cannot run."""
    if not args.instruction.strip():
        raise ValueError("The instruction is empty: say what the model should do on the page.")
    try:
        backend = load(args.model, args.device)
    except BackendError as error:               # an unknown name, a broken folder: a sentence already
        raise ValueError(str(error)) from None
    except (OSError, ImportError, AttributeError) as error:
        raise ValueError(f"The model {args.model!r} could not be loaded ({first_line(error)}).") from None
    config = GenerationConfig(gen_length=args.gen_length)
    try:
        driver = WebMCPDriver(args.url, timeout_s=args.timeout, webmcp=args.webmcp).__enter__()
    except WebMCPUnavailable as error:          # --webmcp native on a browser without it: a sentence already
        raise ValueError(str(error)) from None
    except Exception as error:  # noqa: BLE001 - playwright's errors: no browser, or one that cannot start
        raise ValueError(f"The browser could not start ({first_line(error)}; it is looked for at {CHROMIUM}).") \
            from None
    try:
        return on_page(driver, args, backend, config, say)
    finally:
        driver.close()


def on_page(driver: WebMCPDriver, args: argparse.Namespace, backend: Any, config: GenerationConfig,
            say: Any) -> dict[str, Any]:
    """The page opened in `driver`, its tools listed, and the loop run on them."""
    try:
        driver.open(args.url, ready=None)
    except Exception as error:  # noqa: BLE001 - playwright's errors: a page that does not load
        raise ValueError(f"The page did not load ({first_line(error)}).") from None
    if not driver.wait_for_tools(0, args.timeout):
        raise ValueError(f"{args.url[:120]} registered no WebMCP tools ({driver.webmcp} WebMCP).")
    say(f"WebMCP: {driver.webmcp}")
    tools = PageToolsOf(driver)
    listed = tools.tools.tools
    system = default_system(backend) if args.system == "auto" else (None if args.system == "none" else "full")
    messages = ([{"role": "system", "content": system_prompt(system, listed)}] if system else [])
    messages.append({"role": "user", "content": args.instruction})
    steps: list[dict[str, Any]] = []

    def show(step: Any) -> None:
        steps.append({"call": step.call, "error": step.error, "observation": step.observation})
        if step.call is not None and step.observation is not None:
            say(f"{step.call['name']}({json.dumps(step.call['arguments'])}) -> {json.dumps(step.observation)}")
        elif step.error is not None:
            say(f"(not a call: {step.error.get('message', step.error.get('kind'))})")

    answer, early = act(backend, None, messages, config, max_replies=args.max_replies, text_answers=True,
                        on_step=show, page_tools=tools)
    return {"url": args.url, "webmcp": driver.webmcp, "tools": [t["name"] for t in listed], "steps": steps,
            "answer": answer, "ended_early": early, "refused": list(driver.refused),
            "page_errors": list(driver.page_errors)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = run(args, say=(lambda _line: None) if args.json else print)
    except ValueError as error:                 # OutsideOrigin is one: a URL the driver cannot open
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report))
    elif report["answer"] is not None:
        print(f"answer: {report['answer']}")
    else:
        print(f"no answer{': ' + report['ended_early'] if report['ended_early'] else ''}")
    return 0 if report["answer"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
