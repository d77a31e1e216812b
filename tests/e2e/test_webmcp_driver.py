"""The WebMCP driver on a page that is not ours: a small to-do list written here, which registers
unrelated tools (one withdrawn with its signal, one through the older provideContext), driven by a
scripted model through the agent loop. A tool that throws, one that never answers and one that
navigates come back as typed observations; the driver refuses an outside URL, and a page that tries
to leave the origin is stopped and reported.

Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.trace import GenerationConfig
from tests.e2e.chromium import BROWSER_MARKS, skip_without_native
from tests.e2e.static_site import static_site
from world.agent import act
from world.format import render_call, system_prompt
from world.webmcp.driver import OutsideOrigin, PageToolsOf, WebMCPDriver

pytestmark = BROWSER_MARKS
OUTSIDE = "http://127.0.0.2:9/steal"
ROOT = Path(__file__).resolve().parents[2]
TODO_MODEL = "py:tests.e2e.test_webmcp_driver:scripted_todo_model"

TODO_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>To-do</title></head><body>
<h1>To-do</h1><ul id="list"></ul>
<script>
const items = [];
const draw = () => { const ul = document.getElementById("list"); ul.replaceChildren(...items.map(i => {
  const li = document.createElement("li"); li.textContent = (i.done ? "[x] " : "[ ] ") + i.text; return li; })); };
const mc = document.modelContext;
mc.registerTool({name: "add_todo", title: "Add a to-do", description: "Add an item to the list.",
  inputSchema: {type: "object", properties: {text: {type: "string", minLength: 1}}, required: ["text"],
                additionalProperties: false},
  execute: async ({text}) => {
    items.push({id: items.length + 1, text, done: false}); draw(); return {id: items.length}; }});
mc.registerTool({name: "list_todos", description: "List the items.", annotations: {readOnlyHint: true},
  inputSchema: {type: "object", properties: {}}, execute: async () => items.map(i => ({...i}))});
mc.registerTool({name: "complete_todo", description: "Mark an item done.",
  inputSchema: {type: "object", properties: {id: {type: "integer"}}, required: ["id"]},
  execute: async ({id}) => { const item = items.find(i => i.id === id);
    if (!item) return {error: "no such item"}; item.done = true; draw(); return {ok: true}; }});
mc.registerTool({name: "explode", description: "Always throws.", inputSchema: {type: "object", properties: {}},
  execute: async () => { throw new Error("kaboom"); }});
mc.registerTool({name: "stall", description: "Never answers.", inputSchema: {type: "object", properties: {}},
  execute: () => new Promise(() => {})});
mc.registerTool({name: "open_archive", description: "Go to the archive page.",
  inputSchema: {type: "object", properties: {}},
  execute: async () => { location.href = "/archive"; await new Promise(() => {}); }});
mc.registerTool({name: "leave", description: "Tries to go elsewhere.", inputSchema: {type: "object", properties: {}},
  execute: async () => {
    location.href = "OUTSIDE"; await new Promise(r => setTimeout(r, 300)); return {left: false}; }});
const gone = new AbortController();
mc.registerTool({name: "withdrawn", description: "Registered, then withdrawn.", inputSchema: {type: "object"},
  execute: async () => ({})}, {signal: gone.signal});
gone.abort();
navigator.modelContext.provideContext({tools: [{name: "legacy_count", description: "How many items (older API).",
  inputSchema: {type: "object", properties: {}}, execute: async () => ({count: items.length})}]});
document.body.dataset.ready = "true";
</script></body></html>""".replace("OUTSIDE", OUTSIDE)

ARCHIVE_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Archive</title></head><body><script>
document.modelContext.registerTool({name: "restore_all", description: "Restore archived items.",
  inputSchema: {type: "object", properties: {}}, execute: async () => ({restored: 0})});
document.body.dataset.ready = "true";
</script></body></html>"""

SCRIPT = [("add_todo", {"text": "buy milk"}), ("add_todo", {"text": "call Ana"}), ("complete_todo", {"id": 1}),
          ("list_todos", {}), ("legacy_count", {}), ("explode", {}), ("stall", {}), ("open_archive", {}),
          ("restore_all", {}), ("finish", {"answer": "Milk is done."})]


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    """Every test here runs on the browser's own WebMCP and on the polyfill (conftest's `webmcp`)."""
    return webmcp_browser


@pytest.fixture(scope="module")
def todo_url():
    with static_site({"/": TODO_PAGE, "/archive": ARCHIVE_PAGE}) as url:
        yield url


def test_a_scripted_model_uses_a_third_party_page_through_the_agent_loop(browser, webmcp, todo_url):
    with WebMCPDriver(todo_url, browser=browser, timeout_s=0.5, webmcp=webmcp) as driver:
        assert driver.webmcp == webmcp
        driver.open(todo_url + "/")
        page_tools = PageToolsOf(driver)
        listed = {t["name"]: t for t in page_tools.tools.tools}
        assert list(listed) == ["add_todo", "list_todos", "complete_todo", "explode", "stall", "open_archive",
                                "leave", "legacy_count", "finish"]          # "withdrawn" went with its signal
        assert listed["list_todos"]["annotations"]["readOnlyHint"]
        assert not listed["add_todo"]["annotations"]["readOnlyHint"]
        prompt = system_prompt("full", page_tools.tools.tools)     # the tools as the page registered them
        assert '"name":"add_todo"' in prompt and "search_products" not in prompt

        def model(messages):
            return render_call(*SCRIPT[sum(m["role"] == "assistant" for m in messages)])

        steps = []
        messages = [{"role": "user", "content": "Tidy my list."}]
        answer, early = act(None, None, messages, GenerationConfig(), max_replies=len(SCRIPT), on_step=steps.append,
                            generate_fn=model, page_tools=page_tools)
        assert (answer, early) == ("Milk is done.", "")
        observations = [s.observation for s in steps[:-1]]
        assert observations[:5] == [{"id": 1}, {"id": 2}, {"ok": True},
                                    [{"id": 1, "text": "buy milk", "done": True},
                                     {"id": 2, "text": "call Ana", "done": False}], {"count": 2}]
        assert observations[5] == {"error": "page_error", "message": "kaboom"}
        assert observations[6] == {"error": "timeout", "seconds": 0.5}
        assert observations[7]["error"] == "navigation" and observations[7]["url"].endswith("/archive")
        assert observations[8] == {"restored": 0}                          # the new page's tools, after the move
        assert [m["role"] for m in messages][-2:] == ["tool", "assistant"]
        assert json.loads(messages[2]["content"]) == {"id": 1}              # observations are what the model reads


def test_the_driver_refuses_to_leave_the_apps_origin(browser, webmcp, todo_url):
    with WebMCPDriver(todo_url, browser=browser, webmcp=webmcp) as driver:
        with pytest.raises(OutsideOrigin, match="outside"):
            driver.open(OUTSIDE)
        assert driver.refused == [OUTSIDE] and driver.pages == []
        tab = driver.open(todo_url + "/")
        assert driver.call("leave", {}) == {"error": "outside_origin", "url": OUTSIDE}
        assert driver.pages[tab].url == todo_url + "/"
        assert driver.call("no_such_tool", {}) == {"error": "unknown_tool", "name": "no_such_tool"}


def test_tabs_open_side_by_side_and_a_tab_on_its_document_can_be_kept(browser, webmcp, todo_url):
    with WebMCPDriver(todo_url, browser=browser, webmcp=webmcp) as driver:
        driver.open_tabs([todo_url + "/", todo_url + "/archive"])
        assert [p.url for p in driver.pages] == [todo_url + "/", todo_url + "/archive"]
        assert {t.name for t in driver.tools()} >= {"add_todo", "restore_all"}   # each tab's own tools
        driver.call("add_todo", {"text": "buy milk"})
        driver.open_tabs([todo_url + "/#/later", todo_url + "/archive"], keep_open=True)     # the same documents
        assert driver.call("legacy_count", {}) == {"count": 1}                               # not loaded again
        driver.open_tabs([todo_url + "/", todo_url + "/archive"])
        assert driver.call("legacy_count", {}) == {"count": 0}                               # loaded afresh
        with pytest.raises(OutsideOrigin):
            driver.open_tabs([todo_url + "/", OUTSIDE])
        assert driver.refused[-1] == OUTSIDE


def scripted_todo_model():
    """For the CLI: a model that adds one item, lists the items, then answers in text."""
    from tests.fakes import FakeDiffusionBackend
    from tests.world.scripted import world_format

    replies = [render_call("add_todo", {"text": "call Ana"}), render_call("list_todos", {}),
               "There is one item: call Ana."]
    # the reply after as many tool responses as the prompt holds
    return world_format(FakeDiffusionBackend(lambda prompt: replies[prompt.count("<tool_response>")],
                                             max_length=8192, name="todo"))


def cli(*args: str) -> subprocess.CompletedProcess:
    """python -m world.webmcp, in a process of its own (this one's browser holds playwright's sync API)."""
    return subprocess.run([sys.executable, "-m", "world.webmcp", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_command_line_drives_a_third_party_page(webmcp, todo_url):
    skip_without_native(webmcp)
    ran = cli(todo_url + "/", "Add 'call Ana' to my list.", "--model", TODO_MODEL, "--system", "full", "--json",
              "--webmcp", webmcp)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert report["webmcp"] == webmcp
    assert {"add_todo", "list_todos", "legacy_count", "finish"} <= set(report["tools"])
    assert [s["call"]["name"] for s in report["steps"][:2]] == ["add_todo", "list_todos"]
    assert report["steps"][1]["observation"] == [{"id": 1, "text": "call Ana", "done": False}]
    assert report["answer"] == "There is one item: call Ana." and report["refused"] == []
    shown = cli(todo_url + "/", "Add 'call Ana' to my list.", "--model", TODO_MODEL, "--system", "full",
                "--webmcp", webmcp)
    assert shown.returncode == 0 and f"WebMCP: {webmcp}" in shown.stdout
    assert 'add_todo({"text": "call Ana"}) -> {"id": 1}' in shown.stdout
    assert shown.stdout.rstrip().endswith("answer: There is one item: call Ana.")


def test_the_command_line_says_what_cannot_run(todo_url):
    for args, words in (((todo_url + "/", "  ", "--model", TODO_MODEL), "instruction is empty"),
                        ((todo_url + "/", "Do it.", "--model", "no-such-model"), "no-such-model"),
                        ((todo_url + "/nowhere", "Do it.", "--model", TODO_MODEL, "--timeout", "0.5"),
                         "registered no WebMCP tools")):
        ran = cli(*args)
        assert ran.returncode == 2 and ran.stderr.startswith("error: ") and words in ran.stderr, ran.stderr
        assert "Traceback" not in ran.stderr
