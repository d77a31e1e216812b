"""The `openai:URL#MODEL` backend against this project's own /v1 over real HTTP: diffusing
canvases become Frames round by round, plain streams become text frames, and the backend works
in Compare (handler level) and in `bench.agent agent --baseline openai:...` end to end."""

from __future__ import annotations

import inspect
import json
from functools import partial

import pytest

from engine.backends.base import BackendError
from engine.backends.remote import MASK, load
from engine.catalog import models_dir, resolve
from engine.generate import run as run_with
from engine.trace import ConfigError, GenerationConfig
from tests.api.conftest import ANSWER, AR_ANSWER
from world.format import TOOL_CALLS

pytestmark = pytest.mark.slow
run = partial(run_with, tools=TOOL_CALLS)   # as the agent loop calls it: the world's tools offered
CONFIG = GenerationConfig(gen_length=96, block_size=32, steps=8, sampler="low_confidence")
MESSAGES = [{"role": "user", "content": "What is the answer?"}]


def spec(served, model: str) -> str:
    return f"openai:{served[2]}#{model}"


def test_a_diffusion_model_on_v1_streams_its_rounds_as_frames(served):
    backend = load(spec(served, "fake-bd"))
    assert backend.kind == "diffusion" and backend.diffusing
    result = run(backend, backend.encode_chat(MESSAGES), CONFIG)
    assert result.text == ANSWER and result.stats.new_tokens == len(ANSWER)
    local = run(served[0].registry.get("fake-bd"), [5, 6, 7], CONFIG)       # the same decode, in process
    assert len(result.frames) == result.stats.nfe == local.stats.nfe
    masks = [f.canvas.count(MASK) for f in result.frames]
    assert masks[0] > 0 and masks[-1] == 0
    for far, near in zip(result.frames, local.frames):        # the same positions decided, round by round
        cut = next((i for i, t in enumerate(near.canvas) if t == 1), len(near.canvas))   # fakes: EOS 1, mask 2
        assert [t == MASK for t in far.canvas[:cut]] == [t == 2 for t in near.canvas[:cut]]
    assert backend.decode(result.token_ids) == ANSWER
    assert 0 < result.stats.first_token_s < result.stats.seconds and result.stats.tokens_per_s > 0


def test_an_ar_model_streams_text_frames_and_the_tools_go_out(served):
    backend = load(spec(served, "fake-ar"))
    assert backend.kind == "autoregressive"
    result = run(backend, backend.encode_chat(MESSAGES), CONFIG)
    assert result.text == AR_ANSWER and len(result.frames) > 2
    assert result.stats.nfe == len(AR_ANSWER) + 1                   # the server's forwards, the EOS step too
    assert [t["function"]["name"] for t in backend.request(MESSAGES, CONFIG, TOOL_CALLS)["tools"]][-1] == "finish"
    assert "tools" not in backend.request(MESSAGES, CONFIG)          # no tools given, none offered


def test_tool_calls_come_back_as_hermes_text(served):
    from world.format import parse_call

    backend = load(spec(served, "tool-bd"))
    result = run(backend, backend.encode_chat(MESSAGES), CONFIG.replace(gen_length=128))
    call = parse_call(result.text)
    assert (call.name, call.arguments) == ("search_products", {"query": "hoodie", "color": "pink"})


def test_problems_are_sentences(served):
    with pytest.raises(BackendError, match="does not serve 'nope'"):
        load(spec(served, "nope"))
    with pytest.raises(BackendError, match="Cannot reach"):
        load("openai:http://127.0.0.1:9/v1#x")
    # a URL a request named (no key): a server that serves other models and a port where nothing
    # listens read the same (issue 47: an error must not tell an open port from a closed one)
    with pytest.raises(BackendError, match="could not be used for 'nope'") as open_port:
        load(spec(served, "nope"), api_key_env=None)
    with pytest.raises(BackendError, match="could not be used for 'nope'") as closed_port:
        load("openai:http://127.0.0.1:9/v1#nope", api_key_env=None)
    assert str(open_port.value).replace(served[2], "URL") == str(closed_port.value).replace("http://127.0.0.1:9/v1",
                                                                                            "URL")
    with pytest.raises(BackendError, match="should look like"):
        resolve("openai:localhost#x")
    backend = load(spec(served, "fake-bd"))
    with pytest.raises(ConfigError, match="does not divide"):
        run(backend, backend.encode_chat(MESSAGES), _bad_config())


def _bad_config() -> GenerationConfig:
    """A config the server refuses (the local check is skipped the way a stale client would)."""
    config = GenerationConfig(gen_length=96, block_size=32)
    object.__setattr__(config, "block_size", 40)
    return config


def test_the_api_key_comes_from_the_environment_and_is_not_stored(served, monkeypatch):
    ctx, options, _base = served
    options.api_key = "key-that-must-not-be-stored"
    try:
        with pytest.raises(BackendError, match="DP_REMOTE_API_KEY"):
            load(spec(served, "fake-bd"))
        monkeypatch.setenv("DP_REMOTE_API_KEY", options.api_key)
        backend = load(spec(served, "fake-bd"))
        assert run(backend, backend.encode_chat(MESSAGES), CONFIG).text == ANSWER
    finally:
        options.api_key = None
    raw = ctx.store.path.read_bytes() + b"".join(p.read_bytes() for p in ctx.store.path.parent.glob("*-wal"))
    assert b"key-that-must-not-be-stored" not in raw


def test_compare_races_a_remote_model_against_a_local_one(served, monkeypatch):
    from app.compare import CompareHandlers

    ctx = served[0]
    # as --allow-remote-urls: a picker may name a URL (undone after the test: `served` is shared by
    # the whole session, and test_model_access needs URLs refused)
    monkeypatch.setattr(ctx.registry.access, "allow_urls", True)
    handlers = CompareHandlers(ctx, updates_per_second=1e9)
    remote = spec(served, "fake-bd")
    settings = {"gen_length": 96, "block_size": 32, "steps": 8, "sampler": "low_confidence", "threshold": 0.9,
                "temperature": 0.0, "seed": 0}
    # the handler takes the settings as keywords or positionally, depending on the page's version
    if "settings" in inspect.signature(handlers.run).parameters:
        updates = list(handlers.run("What is the answer?", remote, "fake-ar", settings=settings))
    else:
        updates = list(handlers.run("What is the answer?", remote, "fake-ar", *settings.values()))
    assert len(updates) > 2 and "Stored as comparison" in updates[-1][-1]
    stored = ctx.store.get_conversation(ctx.store.list_conversations(kind="compare")[0]["id"])
    answers = {t["model"]: t for t in stored["turns"][1:]}
    assert answers[remote]["content"] == ANSWER and answers["fake-ar"]["content"] == AR_ANSWER
    frames = answers[remote]["generation"].frames
    assert len(frames) > 2 and frames[0].canvas.count(MASK) > frames[-1].canvas.count(MASK) == 0


@pytest.mark.skipif(not (models_dir() / "sprout-bd" / "config.json").is_file(), reason="no bundled Sprout twins")
def test_bench_agent_with_remote_models_end_to_end(served, capsys):
    import bench

    diffusion, baseline = spec(served, "sprout-bd"), spec(served, "sprout-ar")
    code = bench.main(["agent", "--model", diffusion, "--baseline", baseline, "--tasks", "3", "--attempts", "1",
                       "--no-warmup", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    a, b = report["models"][diffusion], report["models"][baseline]
    assert a["successes"] == b["successes"] == a["attempts"] == 3
    assert a["tokens_per_forward"] > 2 and 0.9 < b["tokens_per_forward"] <= 1.0    # the server's forward counts
    assert report["median_ratio"] > 0


def test_servers_json_is_the_catalog_entry_form(served, tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MODELS_DIR", str(tmp_path))
    from engine import catalog

    (tmp_path / "servers.json").write_text(json.dumps([
        {"name": "our-bd", "url": served[2], "model": "fake-bd", "kind": "diffusion"}]))
    rows = {r["name"]: r for r in catalog.list_models()}
    assert rows["our-bd"]["kind"] == "diffusion" and rows["our-bd"]["source"] == "remote"
    from app.state import AppContext, ModelRegistry

    assert ("our-bd (diffusion)", "our-bd") in ModelRegistry().choices(("diffusion",))     # the picker offers it
    ctx = AppContext.create(tmp_path / "s.db", model="our-bd", baseline=spec(served, "fake-ar"), watch=False)
    assert ctx.notices == [] and ctx.registry.get(spec(served, "fake-ar")).kind == "autoregressive"
    ctx.close()
    backend = catalog.load_backend("our-bd")
    assert backend.name == "our-bd" and run(backend, backend.encode_chat(MESSAGES), CONFIG).text == ANSWER
    (tmp_path / "servers.json").write_text(json.dumps([{"name": "x", "url": served[2]}]))
    broken = [r for r in catalog.list_models() if r["source"] == "remote"]
    assert broken and "needs name, url and model" in broken[0]["broken"]


def test_bench_api_measures_each_client_count(served, capsys):
    import bench

    assert bench.main(["api", "--url", served[2], "--model", "fake-bd", "--clients", "1,3", "--requests", "4",
                       "--max-tokens", "96", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [lv["clients"] for lv in report["levels"]] == [1, 3]
    for level in report["levels"]:
        assert level["requests"] == level["ok"] == 4 and level["errors"] == 0
        assert 0 < level["ttft_p50_s"] <= level["ttft_p95_s"] <= level["total_p95_s"]
        assert level["completion_tokens"] == 4 * len(ANSWER) and level["requests_per_s"] > 0
    assert bench.main(["api", "--url", served[2], "--model", "nope", "--requests", "1"]) == 1
    assert "warm-up request" in capsys.readouterr().err


def test_a_server_that_refuses_tools_is_asked_again_without_them(served, monkeypatch):
    import httpx
    import openai

    backend = load(spec(served, "fake-bd"))
    real = backend.client
    asked: list[bool] = []

    class Refusing:
        def __init__(self) -> None:
            self.chat = self
            self.completions = self
            self.inner = real()

        def create(self, **body):
            asked.append("tools" in body)
            if "tools" in body:
                response = httpx.Response(400, request=httpx.Request("POST", served[2]))
                raise openai.BadRequestError('"auto" tool choice requires --enable-auto-tool-choice',
                                             response=response, body=None)
            return self.inner.chat.completions.create(**body)

    monkeypatch.setattr(backend, "client", Refusing)
    for _ in range(2):
        assert run(backend, backend.encode_chat(MESSAGES), CONFIG).text == ANSWER
    assert asked == [True, False, False]          # refused once, then never sent again
