"""Issue 47, finding 4, replayed: another origin on this machine cannot read, rename or delete the
sessions through Gradio's API, cannot upload, gets no CORS allowance from any route, and a
DNS-rebinding page (a foreign Host) is refused; a named --allow-origin gets exactly CORS, no more."""

from __future__ import annotations

import httpx
import pytest

from app.origin_policy import host_names, hostname_of

pytestmark = pytest.mark.slow
FOREIGN = ["http://localhost:3000", "http://127.0.0.1:9", "http://evil.example", "null"]
ROUTES = ["/gradio_api/info", "/gradio_api/upload", "/gradio_api/queue/join", "/gradio_api/call/sessions_rename",
          "/v1/chat/completions", "/v1/models", "/apps/api/sessions", "/"]


def _root(served) -> str:
    return served[2].rsplit("/v1", 1)[0]


def _cors(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.lower().startswith("access-control")}


@pytest.mark.parametrize("origin", FOREIGN)
@pytest.mark.parametrize("path", ROUTES)
def test_no_preflight_from_another_origin_is_allowed(served, path, origin):
    response = httpx.options(_root(served) + path, headers={
        "origin": origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type"})
    assert response.status_code == 403 and _cors(response) == {}


@pytest.mark.parametrize("origin", FOREIGN)
def test_gradio_api_reads_and_writes_from_another_origin_are_refused(served, origin):
    """The red team renamed and deleted conversations and read the list through Gradio's API with
    Origin http://localhost:3000; now every such request ends at the policy, before Gradio."""
    ctx = served[0]
    root = _root(served)
    before = ctx.store.list_conversations(limit=1000)
    join = httpx.post(root + "/gradio_api/queue/join", json={"data": [], "fn_index": 0, "session_hash": "x"},
                      headers={"origin": origin})
    info = httpx.get(root + "/gradio_api/info", headers={"origin": origin})
    config = httpx.get(root + "/config", headers={"origin": origin})
    for response in (join, info, config):
        assert response.status_code == 403, response.text
        assert "may not use this server" in response.json()["error"] and _cors(response) == {}
    assert ctx.store.list_conversations(limit=1000) == before


@pytest.mark.parametrize("origin", ["http://evil.example", "null"])
def test_an_upload_from_another_origin_writes_nothing(served, origin, tmp_path):
    response = httpx.post(_root(served) + "/gradio_api/upload", files={"files": ("x.txt", b"planted")},
                          headers={"origin": origin})
    assert response.status_code == 403 and "planted" not in response.text


def test_the_app_itself_and_clients_without_an_origin_still_upload(served):
    root = _root(served)
    own = httpx.post(root + "/gradio_api/upload", files={"files": ("x.txt", b"mine")}, headers={"origin": root})
    bare = httpx.post(root + "/gradio_api/upload", files={"files": ("x.txt", b"mine")})
    assert own.status_code == bare.status_code == 200 and own.json()[0].endswith("x.txt")


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.nip.io", "10.0.0.5"])
def test_a_foreign_host_header_is_refused(served, host):
    """DNS rebinding: evil.example re-pointed at 127.0.0.1 reaches the port with its own name."""
    for path in ("/", "/gradio_api/info", "/v1/models", "/apps/shop/"):
        response = httpx.get(_root(served) + path, headers={"host": host})
        assert response.status_code == 421 and "does not answer to the name" in response.text


def test_a_named_origin_gets_cors_and_nothing_else_does(served):
    _ctx, options, base = served
    root = _root(served)
    options.allowed_origins = ("http://tools.example",)
    try:
        preflight = httpx.options(base + "/chat/completions", headers={
            "origin": "http://tools.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, authorization"})
        assert preflight.status_code == 204
        assert _cors(preflight)["access-control-allow-origin"] == "http://tools.example"
        assert "access-control-allow-credentials" not in _cors(preflight)
        models = httpx.get(base + "/models", headers={"origin": "http://tools.example"})
        assert models.status_code == 200 and models.headers["access-control-allow-origin"] == "http://tools.example"
        other = httpx.get(root + "/gradio_api/info", headers={"origin": "http://localhost:3000"})
        assert other.status_code == 403 and _cors(other) == {}
    finally:
        options.allowed_origins = ()


def test_the_page_answers_its_own_origin_without_cors_headers(served):
    root = _root(served)
    page = httpx.get(root + "/", headers={"origin": root})
    assert page.status_code == 200 and _cors(page) == {}


def test_host_names():
    assert host_names("127.0.0.1") >= {"127.0.0.1", "localhost", "::1"}
    assert host_names("192.168.1.5", ["box.lan"]) == {"192.168.1.5", "box.lan"}
    assert "localhost" in host_names("0.0.0.0")
    assert [hostname_of(h) for h in ("a.b:80", "[::1]:7860", "LOCALHOST", "::1")] == ["a.b", "::1", "localhost", "::1"]
