"""/v1 against hostile input and other web pages: deep JSON is a 400 that stores nothing, a
cross-site request cannot act without the key, and every path under /v1 answers OpenAI errors."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.slow
BODY = {"model": "fake-bd", "messages": [{"role": "user", "content": "hi"}], "gen_length": 16, "block_size": 16}


def _stored(ctx) -> int:
    return len(ctx.store.list_conversations(kind="api", limit=1000))


def _schema(depth: int) -> str:
    """A JSON schema nested `depth` objects deep, written as text (json.dumps itself recurses)."""
    return '{"type":"object","properties":{"a":' * depth + '{"type":"string"}' + "}}" * depth


def _with(field: str, value: str) -> str:
    return json.dumps(BODY)[:-1] + f', "{field}": {value}}}'


DEEP = {
    "response-format-900": _with("response_format", '{"type":"json_schema","json_schema":{"name":"x","schema":'
                                 + _schema(450) + "}}"),
    "tool-parameters-2500": _with("tools", '[{"type":"function","function":{"name":"f","parameters":'
                                  + _schema(2500) + "}}]"),
    "100k-brackets": "[" * 100_000,
    "tool-message-5000": json.dumps({**BODY, "messages": [
        {"role": "user", "content": "hi"}, {"role": "tool", "content": "[" * 5000 + "]" * 5000}]}),
}


@pytest.mark.parametrize("body", DEEP.values(), ids=DEEP.keys())
def test_deep_json_is_a_400_sentence_and_stores_nothing(served, body):
    ctx, _options, base = served
    before = _stored(ctx)
    response = httpx.post(base + "/chat/completions", content=body, headers={"content-type": "application/json"},
                          timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert "levels deep" in error["message"] and error["type"] == "invalid_request_error"
    assert _stored(ctx) == before


def _post(base: str, content_type: str, origin: str | None, key: str | None = None) -> httpx.Response:
    headers = {"content-type": content_type}
    if origin is not None:
        headers["origin"] = origin
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    return httpx.post(base + "/chat/completions", content=json.dumps(BODY), headers=headers, timeout=60)


def test_cross_site_requests_cannot_act_without_the_key(served):
    ctx, options, base = served
    before = _stored(ctx)
    plain = _post(base, "text/plain", "http://evil.example")
    foreign = _post(base, "application/json", "http://evil.example")
    assert (plain.status_code, foreign.status_code) == (403, 403)
    assert "evil.example" in foreign.json()["error"]["message"] and "Access-Control-Allow-Origin" not in foreign.headers
    no_origin_plain = _post(base, "text/plain", None)
    assert no_origin_plain.status_code == 415 and "application/json" in no_origin_plain.json()["error"]["message"]
    assert _stored(ctx) == before
    own = base.rsplit("/v1", 1)[0]
    assert _post(base, "application/json", own).status_code == 200           # the page itself
    assert _post(base, "application/json", None).status_code == 200          # curl, SDKs
    options.allowed_origins = ("http://tools.example",)
    try:
        assert _post(base, "application/json", "http://tools.example").status_code == 200
    finally:
        options.allowed_origins = ()


def test_with_the_key_a_cross_site_request_is_accepted(served):
    _ctx, options, base = served
    options.api_key = "sesame"
    try:
        # refused before the route by the origin policy (app/origin_policy.py): no key, another page
        assert _post(base, "text/plain", "http://evil.example").status_code == 403
        assert _post(base, "application/json", None).status_code == 401
        assert _post(base, "text/plain", "http://evil.example", key="sesame").status_code == 200
        assert _post(base, "application/json", "http://evil.example", key="sesame").status_code == 200
    finally:
        options.api_key = None


@pytest.mark.parametrize("method, path", [("POST", "//v1/chat/completions"), ("GET", "///v1/models"),
                                          ("GET", "/v1"), ("HEAD", "/v1/models"), ("OPTIONS", "/v1/chat/completions"),
                                          ("DELETE", "/v1/nothing/here")])
def test_every_path_under_v1_answers_openai_errors(served, method, path):
    root = served[2].rsplit("/v1", 1)[0]
    response = httpx.request(method, root + path, timeout=30)
    assert response.status_code in (404, 405)
    if method != "HEAD":
        assert set(response.json()["error"]) >= {"message", "type", "code"}


@pytest.mark.parametrize("field, value", [("temperature", 1e308), ("top_p", -1), ("top_k", 10**40),
                                          ("seed", -1), ("steps", 10**20), ("threshold", 1e308)])
def test_absurd_settings_are_400_sentences(served, field, value):
    response = httpx.post(served[2] + "/chat/completions", content=json.dumps({**BODY, field: value}),
                          headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 400 and "must be" in response.json()["error"]["message"]


def _held_check(monkeypatch, module, attribute: str, what: str):
    """Replace the body check `module.attribute` with one that, for bodies named `what`, says it
    has started and then waits until the test has fetched the page (or 60 s): if the check ran on
    the event loop, the page could not answer in between."""
    import threading

    real = getattr(module, attribute)
    started, page_answered, outcome = threading.Event(), threading.Event(), []

    def held(data, name, *args, **kwargs):
        if name == what:
            started.set()
            outcome.append(page_answered.wait(60))
        return real(data, name, *args, **kwargs)

    monkeypatch.setattr(module, attribute, held)
    return started, page_answered, outcome


RED_TEAM = '"' + '\\"' * 20_000          # the unterminated string of \" pairs


@pytest.mark.parametrize("route", ["v1", "apps"])
def test_the_page_answers_while_a_hostile_body_is_being_checked(served, monkeypatch, route):
    """Issue 47, finding 1, by the order of events, not a clock: a /v1 body or an /apps call is
    checked in a worker thread, so the page is served while the check is still under way."""
    import threading

    from engine import json_limits
    from world.webapps import server

    root = served[2].rsplit("/v1", 1)[0]
    if route == "v1":
        started, page_answered, outcome = _held_check(monkeypatch, json_limits, "loads", "The request body")
        url, body = served[2] + "/chat/completions", '{"model": "fake-bd", "messages": [{"role": "user", "content": ' \
            + RED_TEAM
    else:
        started, page_answered, outcome = _held_check(monkeypatch, server, "loads", "The call")
        session = httpx.post(root + "/apps/api/sessions", headers={"content-type": "application/json"}).json()
        url, body = f"{root}/apps/api/s/{session['session']}/call", '{"name": "view_cart", "arguments": ' + RED_TEAM
    answers = []
    sender = threading.Thread(target=lambda: answers.append(httpx.post(
        url, content=body, headers={"content-type": "application/json"}, timeout=120)))
    sender.start()
    assert started.wait(60), "the hostile body never reached its check"
    page = httpx.get(root + "/", timeout=50)
    page_answered.set()
    sender.join(120)
    assert page.status_code == 200 and outcome == [True]          # the check was still waiting when the page came
    assert answers[0].status_code == 400 and "not valid JSON" in answers[0].text
