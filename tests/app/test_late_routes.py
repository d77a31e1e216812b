"""Requests for /v1 and /apps/ that reach the server before launch.serve has added those routes
wait for them (app/late_routes.py) instead of answering 404; other paths are never held."""

from __future__ import annotations

import threading
import time

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app import late_routes
from app.late_routes import LateRoutes


def app_with_gate(mounted: threading.Event) -> Starlette:
    return Starlette(routes=[Route("/", lambda r: JSONResponse({"page": True}))],
                     middleware=[Middleware(LateRoutes, mounted=mounted)])


def test_a_request_for_v1_waits_for_the_route_added_after_start():
    mounted = threading.Event()
    app = app_with_gate(mounted)

    def mount_later() -> None:
        time.sleep(0.3)
        app.router.routes.append(Route("/v1/models", lambda r: JSONResponse({"data": ["sprout-bd"]})))
        mounted.set()

    threading.Thread(target=mount_later, daemon=True).start()
    with TestClient(app) as client:
        answer = client.get("/v1/models")                   # sent before the route exists
    assert answer.status_code == 200 and answer.json() == {"data": ["sprout-bd"]}


def test_other_paths_pass_while_the_routes_are_missing():
    mounted = threading.Event()
    with TestClient(app_with_gate(mounted)) as client:
        assert client.get("/").json() == {"page": True}       # Gradio's own checks go through before mounting
        assert not mounted.is_set()


@pytest.mark.parametrize("path", ["/v1/models", "/apps/shop/"])
def test_routes_that_never_come_give_a_sentence_not_a_hang(monkeypatch, path):
    monkeypatch.setattr(late_routes, "HOLD_S", 0.1)
    with TestClient(app_with_gate(threading.Event())) as client:
        answer = client.get(path)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = answer.json()["error"]               # in the shape of the routes it waited for
    message = error["message"] if path.startswith("/v1/") else error
    assert message == "The playground is still starting; try again in a few seconds."


def test_once_mounted_a_missing_route_is_a_plain_404():
    mounted = threading.Event()
    mounted.set()
    with TestClient(app_with_gate(mounted)) as client:
        assert client.get("/v1/nothing").status_code == 404
