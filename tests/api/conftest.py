"""A launched app (page + /v1) on loopback over fake backends and the bundled Sprout twins,
shared by the API tests; each test reaches it with the official `openai` client."""

from __future__ import annotations

import json
import re

import openai
import pytest

from app.api import ApiOptions
from tests.e2e.app_fakes import Slow, free_port
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.noise_models import tiny_noise_backend
from tests.world.scripted import world_format
from world.format import render_call

ANSWER = "The answer is 42, decided a few tokens per round by a diffusion model."
AR_ANSWER = "Hello from the AR twin, one token per forward."
JSON_ANSWER = '{"product":"rain jacket","colour":"blue","quantity":2,"gift":false}'


WORLD_HELLO = "Hello! I am Sprout, a small agent for a web shop and a back office."


def world_target(prompt: str) -> str:
    """A scripted world-format model (as Sprout writes): every reply one call. Asked for caps, it
    searches and then names the first product of the response; asked to go on forever, it views
    the cart every turn; otherwise it answers at once with finish."""
    asked = prompt.rsplit("<|user|>", 1)[-1]
    responses = [json.loads(r) for r in re.findall(r"<tool_response>(.*?)</tool_response>", asked)]
    if "cap" in asked:
        if responses:
            return render_call("finish", {"answer": f"Found {responses[-1][0]['id']} in size M."})
        return render_call("search_products", {"query": "cap", "size": "M"})
    if "forever" in asked:
        return render_call("view_cart", {})
    return render_call("finish", {"answer": WORLD_HELLO})


def users_seen(prompt: str) -> str:
    """A world-format model that answers with how many user messages its prompt holds."""
    return render_call("finish", {"answer": f"{prompt.count('<|user|>')} user message(s)"})


def one_request(backend):
    backend.one_request_per_chat = True          # as Sprout was before issue 49: one request per conversation
    return backend


def tool_target(prompt: str) -> str:
    """A scripted agent: search first; once a tool response is in the chat, finish."""
    if "tool: " in prompt:
        return render_call("finish", {"answer": "Found P-1."})
    return "Let me look. " + render_call("search_products", {"query": "hoodie", "color": "pink"})


class Broken(FakeDiffusionBackend):
    def denoise(self, canvas, block):
        raise RuntimeError("secret internal detail /etc/passwd")


def backends() -> dict:
    return {
        "fake-bd": FakeDiffusionBackend(ANSWER, name="fake-bd"),
        "fake-ar": FakeARBackend(AR_ANSWER, name="fake-ar"),
        "tool-bd": FakeDiffusionBackend(tool_target, name="tool-bd"),
        "slow-bd": Slow(FakeDiffusionBackend(ANSWER, name="slow-bd"), 0.05),
        "broken-bd": Broken(ANSWER, name="broken-bd"),
        "json-bd": FakeDiffusionBackend(JSON_ANSWER, name="json-bd"),   # response_format (test_v1_response_format.py)
        "json-ar": FakeARBackend(JSON_ANSWER, name="json-ar"),
        "world-bd": world_format(FakeDiffusionBackend(world_target, name="world-bd")),   # test_v1_world.py
        "world-ar": world_format(FakeARBackend(world_target, name="world-ar")),
        "users-bd": world_format(FakeDiffusionBackend(users_seen, name="users-bd")),
        "one-users-bd": one_request(world_format(FakeDiffusionBackend(users_seen, name="one-users-bd"))),
        "hermes-bd": FakeDiffusionBackend(world_target, name="hermes-bd"),   # the same text, not a world model
        "slow-world-bd": Slow(world_format(FakeDiffusionBackend(world_target, name="slow-world-bd")), 0.05),
        "tiny-gemma": tiny_noise_backend("tiny-gemma"),     # a random DiffusionGemma (test_v1_noise_canvas.py)
    }


@pytest.fixture(scope="package")
def served(tmp_path_factory):
    """(ctx, options, base_url): options is the live ApiOptions, so a test may change it."""
    from app.state import AppContext
    from app.ui import build_app
    from launch import serve

    ctx = AppContext.create(tmp_path_factory.mktemp("api") / "sessions.db", model="fake-bd", baseline="fake-ar",
                            preloaded=backends(), watch=False)
    options = ApiOptions()
    demo = build_app(ctx)
    url = serve(demo, "127.0.0.1", free_port(), block=False, ctx=ctx, api=options)
    yield ctx, options, url.rstrip("/") + "/v1"
    demo.close()
    ctx.close()


@pytest.fixture
def client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served[2], api_key="unused", max_retries=0, timeout=120)
