"""A tiny random DiffusionGemma served by this playground's /v1: the plain stream sends finished
canvases only, the `diffusing: true` stream every step (draft, noisy canvas, accepted, changed,
stop rule), and the `openai:` backend turns that stream back into the same run, noise and all."""

from __future__ import annotations

import json

import pytest

from engine.backends.remote import load
from engine.generate import run
from engine.trace import GenerationConfig

pytestmark = pytest.mark.slow
CONFIG = GenerationConfig(gen_length=32, block_size=16, steps=6, sampler="entropy_bounded", entropy_bound=4.0,
                          t_min=0.1, t_max=0.3, confidence_threshold=0.5, seed=2, stop_on_eos=False)
MESSAGES = [{"role": "user", "content": "Say hi"}]
SETTINGS = {k: v for k, v in CONFIG.to_dict().items() if k not in ("gen_length", "seed", "temperature", "top_p")}


def local_run(served):
    backend = served[0].registry.get("tiny-gemma")
    return backend, run(backend, backend.encode_chat(MESSAGES), CONFIG)


def test_the_plain_stream_sends_whole_canvases_only(served, client):
    backend, local = local_run(served)
    chunks = client.chat.completions.create(model="tiny-gemma", messages=MESSAGES, stream=True, max_tokens=32,
                                            seed=2, extra_body=SETTINGS)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == local.text
    first = backend.decode(local.token_ids[:16])
    assert pieces[0] == first                       # the first canvas arrives whole, never a draft of it


def test_the_diffusing_stream_carries_every_step(served, client):
    _backend, local = local_run(served)
    chunks = client.chat.completions.create(model="tiny-gemma", messages=MESSAGES, stream=True, max_tokens=32,
                                            seed=2, extra_body={**SETTINGS, "diffusing": True})
    steps = [(c.choices[0].delta.content, c.choices[0].model_extra["diffusion"]) for c in chunks
             if c.choices and (c.choices[0].model_extra or {}).get("diffusion")]
    assert len(steps) == len(local.frames)
    for (_text, extension), frame in zip(steps, local.frames):
        noise = extension["noise"]
        assert (noise["accepted"], noise["changed"], noise["stop_rule"]) == (
            frame.noise.accepted, frame.noise.changed, frame.noise.stop_rule)
        assert None not in extension["canvas"]        # no masks on this canvas
    assert steps[-1][0] == local.text
    json.dumps([e for _t, e in steps])                # plain JSON all through


def test_the_openai_backend_replays_the_served_run(served):
    _backend, local = local_run(served)
    remote = load(f"openai:{served[2]}#tiny-gemma")
    assert remote.kind == "diffusion" and remote.diffusing
    result = run(remote, remote.encode_chat(MESSAGES), CONFIG)
    assert result.text == local.text and result.uniform_noise
    assert [f.noise.accepted for f in result.frames] == [f.noise.accepted for f in local.frames]
    assert [f.noise.stop_rule for f in result.frames] == [f.noise.stop_rule for f in local.frames]
    assert [[remote.token_piece(t) for t in f.noise.noisy] for f in result.frames] == [
        [local.pieces[t] for t in f.noise.noisy] for f in local.frames]
    assert result.stats.nfe == local.stats.nfe
