"""The web apps' JSON API and pages without a browser (starlette's TestClient): the tools served are
the registry's, a call answers what call_tool answers and is validated as the agent loop validates,
the pages carry their own strict policy, and other sites, other media types, unknown sessions and
odd asset names are refused with a sentence."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from world.state import make_world
from world.tools import TOOLS_BY_NAME, call_tool
from world.webapps.apps import APP_TOOLS, page_state
from world.webapps.server import PAGE_POLICY, routes
from world.webapps.sessions import WorldSessions


@pytest.fixture
def served():
    sessions = WorldSessions(lambda: make_world(3, "heldout"))
    return sessions, TestClient(Starlette(routes=routes(sessions)), base_url="http://apps.test")


@pytest.mark.parametrize("app", ["shop", "office"])
def test_the_tools_served_are_the_registrys_own_definitions(served, app):
    _, client = served
    tools = client.get(f"/apps/api/tools?app={app}").json()["tools"]
    assert [t["name"] for t in tools] == list(APP_TOOLS[app])
    for tool in tools:
        registry = TOOLS_BY_NAME[tool["name"]]
        # the pages add the spec's hints (consequentialHint, untrustedContentHint) and the checkout
        # form's parameter descriptions (world/webapps/apps.py); the rest is the registry's own
        same = [k for k in registry if k not in ("annotations", "inputSchema")]
        assert {k: tool[k] for k in same} == {k: registry[k] for k in same} and tool["title"]
        assert tool["annotations"].items() >= registry.get("annotations", {}).items()
        assert set(tool["inputSchema"]["properties"]) == set(registry["inputSchema"]["properties"])


def test_a_call_answers_what_call_tool_answers_and_changes_the_same_world(served):
    sessions, client = served
    session = client.post("/apps/api/sessions", json={}).json()["session"]
    twin = make_world(3, "heldout")
    product = next(iter(twin.products))
    size = next(iter(twin.products[product]["stock"]))
    calls = [("search_products", {"query": twin.products[product]["style"]}),
             ("add_to_cart", {"product_id": product, "size": size, "quantity": 1}),
             ("add_to_cart", {"product_id": "P0Z0", "size": "S", "quantity": 1}),
             ("checkout_guest", {"name": "Ana Diaz", "email": "ana.diaz@mail.io", "address": "1 Oak St"}),
             ("checkout_guest", {"name": "Ana Diaz", "email": "ana.diaz@mail.io", "address": "1 Oak St"}),
             ("sum_amounts", {"amounts": [1.5, 2.25]})]
    for name, arguments in calls:
        answer = client.post(f"/apps/api/s/{session}/call", json={"name": name, "arguments": arguments})
        assert answer.status_code == 200
        assert answer.json() == call_tool(twin, name, arguments)
    assert sessions.get(session).world.end_state() == twin.end_state()
    assert client.get(f"/apps/api/s/{session}/state?app=shop").json() == page_state(twin, "shop")


def test_a_bad_call_gets_the_agent_loops_typed_error_and_changes_nothing(served):
    sessions, client = served
    session = client.post("/apps/api/sessions", json={}).json()["session"]
    before = sessions.get(session).world.end_state()
    url = f"/apps/api/s/{session}/call"
    bad = client.post(url, json={"name": "add_to_cart", "arguments": {"product_id": "P1", "size": "S", "quantity": 0}})
    assert bad.json() == {"error": "bad_arg_type", "args": ["quantity"]}
    missing = client.post(url, json={"name": "checkout_guest", "arguments": {"name": "A"}})
    assert missing.json()["error"] == "missing_arg"
    assert client.post(url, json={"name": "finish", "arguments": {"answer": "x"}}).status_code == 400
    assert client.post(url, json=["not", "a", "call"]).status_code == 400
    assert sessions.get(session).world.end_state() == before


def test_other_sites_other_media_types_and_unknown_sessions_are_refused(served):
    _, client = served
    session = client.post("/apps/api/sessions", json={}).json()["session"]
    url = f"/apps/api/s/{session}/call"
    call = {"name": "view_cart", "arguments": {}}
    foreign = client.post(url, json=call, headers={"origin": "http://evil.test"})
    assert foreign.status_code == 403 and "another origin" in foreign.json()["error"]
    assert client.post(url, json=call, headers={"origin": "http://apps.test"}).status_code == 200
    form = client.post(url, content=b"name=view_cart", headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415
    assert client.post("/apps/api/s/nope/call", json=call).status_code == 404
    assert client.get("/apps/api/s/nope/state?app=shop").status_code == 404
    assert client.get("/apps/api/tools?app=bank").status_code == 404
    assert client.post(url, content=b"[" * 100_000, headers={"content-type": "application/json"}).status_code == 400


@pytest.mark.parametrize("app", ["shop", "office"])
def test_the_pages_carry_their_own_strict_policy(served, app):
    _, client = served
    page = client.get(f"/apps/{app}/")
    assert page.status_code == 200 and page.headers["content-security-policy"] == PAGE_POLICY
    assert "'unsafe-inline'" not in PAGE_POLICY and "'unsafe-eval'" not in PAGE_POLICY
    assert "<script>" not in page.text and 'src="/apps/assets/' in page.text      # no inline script at all
    assert client.get("/apps/assets/webmcp-page.js").headers["content-type"].startswith("text/javascript")
    for name in ("..%2Fserver.py", "server.py", "missing.js"):
        assert client.get(f"/apps/assets/{name}").status_code == 404


def test_the_oldest_sessions_are_forgotten_past_the_limit():
    sessions = WorldSessions(lambda: make_world(0, "heldout"), limit=2)
    first, second = sessions.add(), sessions.add()
    sessions.get(first)                      # used: now the newest
    sessions.add()
    assert sessions.get(first) is not None and sessions.get(second) is None


def test_a_call_can_bring_the_pages_state_along(served):
    sessions, client = served
    session = client.post("/apps/api/sessions", json={}).json()["session"]
    answer = client.post(f"/apps/api/s/{session}/call?state=office",
                         json={"name": "register_course", "arguments": {"student_name": "Ana", "course_code": "ZZZ9"}})
    world = sessions.get(session).world
    assert answer.json() == {"answer": {"error": "unknown course"}, "state": page_state(world, "office")}
    assert client.post(f"/apps/api/s/{session}/call?state=bank", json={"name": "view_cart"}).status_code == 404
