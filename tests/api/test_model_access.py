"""Issue 47, findings 2, 3 and 6, replayed against a served app: a request names a model, never
code or a place to connect to; a model's own Python runs only once allowed; one folder is one
model however it is spelled; the remote key goes only where it was configured; and bad input is a
4xx sentence, never a 500."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from engine import catalog
from engine.backends.base import BackendError
from engine.model_access import ModelAccess, canonical, code_files

pytestmark = pytest.mark.slow
MESSAGES = [{"role": "user", "content": "hi"}]


def _evil_folder(root: Path, marker: Path) -> Path:
    """The red team's folder: a LLaDA config with an auto_map, a tokenizer config whose auto_map
    names a .py file in the folder, and that file, which leaves a marker when imported."""
    folder = root / "evil"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llada", "auto_map": {"AutoConfig": "configuration_evil.EvilConfig",
                                            "AutoModel": "modeling_evil.EvilModel"}}))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}}))
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    for name in ("configuration_evil.py", "modeling_evil.py", "tokenization_evil.py"):
        (folder / name).write_text(code)
    return folder


def _post(served, model: str, **extra) -> httpx.Response:
    return httpx.post(served[2] + "/chat/completions", json={"model": model, "messages": MESSAGES, **extra}, timeout=60)


def test_a_folder_named_by_path_is_a_404_and_runs_nothing(served, tmp_path):
    marker = tmp_path / "ran"
    folder = _evil_folder(tmp_path, marker)
    for spelling in (str(folder), str(folder) + "/", f"{folder}/./", os.path.relpath(folder)):
        response = _post(served, spelling)
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        assert "catalog" in error["message"] and "--allow-model-paths" in error["message"]
        assert error["code"] == "model_not_found"
    assert not marker.exists()


def test_a_folder_under_models_runs_its_code_only_once_allowed(served, tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path))
    marker = tmp_path / "ran"
    _evil_folder(tmp_path, marker)
    response = _post(served, "evil")
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    for words in ("runs Python of its own", "configuration_evil.py", "tokenization_evil.py", "Models tab",
                  "--trust-remote-code evil"):
        assert words in message
    assert not marker.exists()
    assert "evil" not in served[0].registry.loaded_names()


def test_trusting_a_folder_is_what_lets_its_code_load(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path))
    _evil_folder(tmp_path, tmp_path / "ran")
    calls = []

    def fake_load(source, **kwargs):
        calls.append(kwargs["trust_remote_code"])
        raise BackendError("stop here")

    monkeypatch.setattr(catalog, "load_pretrained", fake_load)
    access = ModelAccess()
    with pytest.raises(BackendError, match="runs Python of its own"):
        catalog.load_backend("evil", "cpu", access=access)
    assert calls == []
    access.trust("evil")
    with pytest.raises(BackendError, match="stop here"):
        catalog.load_backend("evil", "cpu", access=access)
    assert calls == [True]
    assert code_files(tmp_path / "evil") == ["configuration_evil.py", "modeling_evil.py", "tokenization_evil.py"]


def test_twenty_spellings_of_one_folder_are_one_loaded_model(monkeypatch):
    from app.state import ModelRegistry

    folder = catalog.models_dir() / "sprout-bd"
    spellings = ["sprout-bd", str(folder), str(folder) + "/", f"{folder}/./", f"{folder}/././", f"{folder}//",
                 f"{folder}/../sprout-bd", f"{folder}/./././", os.path.relpath(folder), os.path.relpath(folder) + "/",
                 os.path.relpath(folder) + "/./", f"{catalog.models_dir()}/./sprout-bd", f"{folder}/.//./",
                 f" {folder} ", f"{folder}/./../sprout-bd/", f"{catalog.models_dir()}//sprout-bd",
                 f"{catalog.models_dir()}/../models/sprout-bd", f"{folder}/../../models/sprout-bd/.",
                 os.path.relpath(folder) + "/././", f"{folder}/.///"]
    assert len(spellings) == 20
    loads = []
    registry = ModelRegistry(device="cpu", loader=lambda name, device: loads.append(name) or object(),
                             access=ModelAccess())
    backends = {id(registry.get(s)) for s in spellings}
    assert loads == ["sprout-bd"] and len(backends) == 1
    assert {canonical(s, allow_paths=False, allow_urls=False) for s in spellings} == {"sprout-bd"}


class _Listener:
    """A port that records each request's Authorization header and answers 404."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                seen.append(self.headers.get("authorization"))
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_openai_url_in_a_request_connects_nowhere(served, monkeypatch):
    monkeypatch.setenv("DP_REMOTE_API_KEY", "remote-secret")
    listener = _Listener()
    try:
        response = _post(served, f"openai:http://127.0.0.1:{listener.port}/v1#m")
        assert response.status_code == 404 and "--allow-remote-urls" in response.json()["error"]["message"]
        assert listener.seen == []
    finally:
        listener.close()


def test_an_allowed_url_gets_no_key_and_open_and_closed_ports_read_the_same(served, monkeypatch):
    monkeypatch.setenv("DP_REMOTE_API_KEY", "remote-secret")
    access = served[0].registry.access
    listener = _Listener()
    access.allow_urls = True
    try:
        open_port = _post(served, f"openai:http://127.0.0.1:{listener.port}/v1#m")
        closed_port = _post(served, "openai:http://127.0.0.1:9/v1#m")
    finally:
        access.allow_urls = False
        listener.close()
    assert listener.seen and all("remote-secret" not in (h or "") for h in listener.seen)
    assert open_port.status_code == closed_port.status_code == 404
    said = [r.json()["error"]["message"].replace(f":{listener.port}/", ":PORT/").replace(":9/", ":PORT/")
            for r in (open_port, closed_port)]
    assert said[0] == said[1] and "could not be used" in said[0]


def test_a_configured_server_still_gets_its_key(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("DP_REMOTE_API_KEY", "remote-secret")
    listener = _Listener()
    (tmp_path / "servers.json").write_text(json.dumps([
        {"name": "ours", "url": f"http://127.0.0.1:{listener.port}/v1", "model": "m"}]))
    try:
        with pytest.raises(BackendError):
            catalog.load_backend("ours", "cpu", access=ModelAccess())
        with pytest.raises(BackendError):                     # the same URL, named by a request: no key
            catalog.load_backend(f"openai:http://127.0.0.1:{listener.port}/v1#m", "cpu",
                                 access=ModelAccess(allow_urls=True))
    finally:
        listener.close()
    assert listener.seen == ["Bearer remote-secret", "Bearer none"]


@pytest.mark.parametrize("extra, param", [({"n": True}, "n"), ({"n": 1.0}, "n"), ({"n": "1"}, "n"),
                                          ({"stream_options": {"include_usage": "yes"}}, "stream_options")])
def test_a_value_of_the_wrong_type_is_a_400(served, extra, param):
    response = _post(served, "fake-bd", **extra)
    assert response.status_code == 400 and response.json()["error"]["param"] == param


@pytest.mark.parametrize("where", ["content", "role-name"])
def test_a_lone_surrogate_is_a_400_sentence_and_stores_nothing(served, where):
    ctx = served[0]
    before = len(ctx.store.list_conversations(kind="api", limit=1000))
    content = '"\\ud800"'
    body = {"content": f'{{"model": "fake-bd", "messages": [{{"role": "user", "content": {content}}}]}}',
            "role-name": '{"model": "fake-bd", "messages": [{"role": "user", "content": "hi", '
                         '"name": "\\udfff"}]}'}[where]
    response = httpx.post(served[2] + "/chat/completions", content=body.encode(),
                          headers={"content-type": "application/json"}, timeout=60)
    assert response.status_code == 400, response.text
    assert "lone surrogate" in response.json()["error"]["message"]
    assert len(ctx.store.list_conversations(kind="api", limit=1000)) == before


@pytest.mark.parametrize("model", ["x" * 5000, "a\x00b", "~no-such-user-here/x", "../" * 200 + "etc", "openai:x",
                                   "models/../../../../etc", ".", ".."])
def test_a_strange_model_name_is_a_404_sentence(served, model):
    response = _post(served, model)
    assert response.status_code in (400, 404), response.text
    assert response.json()["error"]["message"].endswith(".") and "Traceback" not in response.text
