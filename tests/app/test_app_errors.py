"""What reaches API callers and the page's HTTP responses: errors are plain text for
gradio_client (no HTML entities), escaped only in the event stream a browser reads; a run that
fails before its first forward stores nothing; the page carries its Content-Security-Policy."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from gradio_client import Client

from app.csp import add_nonce, policy
from app.toasts import escape_event
from tests.e2e.app_fakes import fake_backends, fake_context, running_app
from tests.fakes import FakeDiffusionBackend


class FailsAtFirstForward(FakeDiffusionBackend):
    def denoise(self, *args):
        raise RuntimeError("CUDA error: device-side assert triggered")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    backends = {**fake_backends(), "fake-broken": FailsAtFirstForward("never", name="fake-broken")}
    ctx = fake_context(tmp_path_factory.mktemp("errors"), backends=backends)
    with running_app(ctx) as (_demo, url):
        yield ctx, url, Client(url, analytics_enabled=False, verbose=False)
    ctx.close()


# the Chat tab's inputs by label (as the page shows them), so the order can change freely
CHAT_INPUTS = {"Message": "hi", "Model": "fake-bd", "System prompt": "", "Random seed": False, "Tools run in": "world",
               "Generation length": 64, "Block size": 16, "Steps per block": 8, "Sampler": "threshold",
               "Threshold": 0.9, "Factor": 1.0, "Entropy bound": 0.5, "Temperature": 0.0, "Top-p": 1.0, "Top-k": 0,
               "Playback pace": 0, "Seed": 0, "Edit threshold": 0.9, "Max post steps": 16, "Remasking": "off",
               "Remask rounds": 2, "Remask count": 2, "Cache": "none", "JSON schema": "",
               # the uniform-noise canvas's controls (app/noise_controls.py), read only by that driver
               "Lowest temperature": 0.4, "Highest temperature": 0.8, "Stability": 1, "Confidence": 0.005,
               "Argmax draws": False}


def chat_args(client: Client, **by_label) -> list:
    values = {**CHAT_INPUTS, **{k.replace("_", " "): v for k, v in by_label.items()}}
    parameters = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/chat"]["parameters"]
    labels = [p["label"] for p in parameters]
    picked = [next(v for k, v in values.items() if label.startswith(k)) for label in labels]
    return picked


def error_text(client: Client, *args, api_name: str) -> str:
    with pytest.raises(Exception) as caught:
        client.predict(*args, api_name=api_name)
    return str(caught.value)


def test_unknown_model_arrives_as_plain_text(app):
    _ctx, _url, client = app
    text = error_text(client, *chat_args(client, Model="nope"), api_name="/chat")
    assert "There is no model 'nope'" in text
    assert "&#39;" not in text and "&#x27;" not in text and "&amp;" not in text


def test_markup_in_an_error_arrives_as_typed(app):
    _ctx, _url, client = app
    text = error_text(client, "nope <b>&", api_name="/models_load")
    assert "There is no model 'nope <b>&'" in text


def test_seed_overflow_is_a_sentence_and_stores_nothing(app):
    ctx, _url, client = app
    before = len(ctx.store.list_conversations(limit=1000))
    text = error_text(client, *chat_args(client, Seed=10**30), api_name="/chat")
    assert "Seed must be a whole number from 0 to 9,223,372,036,854,775,807" in text
    assert "Overflow" not in text and "Traceback" not in text
    assert len(ctx.store.list_conversations(limit=1000)) == before


def test_page_has_the_policy_and_nonces_on_its_inline_scripts(app):
    _ctx, url, _client = app
    first, second = httpx.get(url), httpx.get(url)
    header = first.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", header).group(1)
    assert nonce != re.search(r"'nonce-([^']+)'", second.headers["content-security-policy"]).group(1)
    for directive in ("img-src 'self' data: blob:", "connect-src 'self'", "object-src 'none'", "form-action 'self'"):
        assert directive in header
    assert "'unsafe-inline'" not in header.split("script-src")[1].split(";")[0]
    inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", first.text)
    assert inline and all(f'nonce="{nonce}"' in tag for tag in inline)


def test_nonce_goes_on_inline_scripts_only():
    html = b'<script>a</script><script type="module" src="/x.js"></script><SCRIPT data-x>b</SCRIPT><scripts>'
    out = add_nonce(html, "N")
    assert out == (b'<script nonce="N">a</script><script type="module" src="/x.js"></script>'
                   b'<script nonce="N" data-x>b</SCRIPT><scripts>')
    assert "'nonce-N'" in policy("N")


def test_browser_events_escape_message_fields_only():
    event = (b'data: {"msg": "process_completed", "output": {"error": "Unknown model \'<img src=x>\'", '
             b'"title": "Cannot <b>"}, "success": false}')
    data = json.loads(escape_event(event)[len(b"data: "):])
    assert data["output"] == {"error": "Unknown model &#x27;&lt;img src=x&gt;&#x27;", "title": "Cannot &lt;b&gt;"}
    assert data["msg"] == "process_completed" and data["success"] is False
    log = json.loads(escape_event(b'data: {"msg": "log", "log": "a < b", "level": "warning"}')[6:])
    assert log == {"msg": "log", "log": "a &lt; b", "level": "warning"}
    assert escape_event(b": ping") == b": ping"


def test_a_run_that_fails_at_its_first_forward_stores_nothing(app):
    ctx, _url, client = app
    before = len(ctx.store.list_conversations(limit=1000))
    text = error_text(client, *chat_args(client, Model="fake-broken"), api_name="/chat")
    assert "RuntimeError" in text and "Traceback" not in text
    assert len(ctx.store.list_conversations(limit=1000)) == before


def test_a_chat_exchange_is_saved_in_one_transaction(app, monkeypatch):
    """The chat's save goes through save_exchange: the per-turn writes are not used at all."""
    ctx, _url, client = app

    def refuse(*args, **kwargs):
        raise AssertionError("a chat must not save turn by turn")

    monkeypatch.setattr(ctx.store, "add_turn", refuse)
    monkeypatch.setattr(ctx.store, "create_conversation", refuse)
    before = {c["id"] for c in ctx.store.list_conversations(limit=1000)}
    client.predict(*chat_args(client, Message="Say hi"), api_name="/chat")
    new = [c for c in ctx.store.list_conversations(limit=1000) if c["id"] not in before]
    assert len(new) == 1
    assert [t["role"] for t in ctx.store.get_conversation(new[0]["id"])["turns"]] == ["user", "assistant"]


def test_only_the_page_gets_nonces_other_html_runs_no_inline_script():
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from app.csp import ContentSecurityPolicy

    page = "<html><script>config()</script></html>"
    routes = [Route("/", lambda r: HTMLResponse(page)), Route("/file=answer.html", lambda r: HTMLResponse(page)),
              Route("/info", lambda r: JSONResponse({"a": 1}))]
    client = TestClient(Starlette(routes=routes, middleware=[Middleware(ContentSecurityPolicy)]))
    root, exported, info = client.get("/"), client.get("/file=answer.html"), client.get("/info")
    nonce = re.search(r"'nonce-([^']+)'", root.headers["content-security-policy"]).group(1)
    assert root.text == f'<html><script nonce="{nonce}">config()</script></html>'
    assert root.headers["content-length"] == str(len(root.content))
    assert exported.text == page and "nonce" not in exported.headers["content-security-policy"]
    assert "script-src 'self' 'unsafe-eval';" in exported.headers["content-security-policy"]
    assert "content-security-policy" not in info.headers and info.json() == {"a": 1}
