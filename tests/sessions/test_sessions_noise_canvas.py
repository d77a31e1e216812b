"""A uniform-noise run (DiffusionGemma) goes through the store and comes back whole: every step's
draft, noisy canvas, accepted, changed and stop rule, and the run's uniform-noise mark; rows
written before the mark existed still load as what they were."""

from __future__ import annotations

import json
import sqlite3

import pytest

from app.exports import export_conversation, import_conversation
from sessions import SessionStore
from sessions.codec import NOISE_VERSION, decode_frames, encode_frames
from tests.noise_models import NOISE_CONFIG, noise_result
from tests.visualizer.test_visualizer_traces import CONFIG, make_result


@pytest.fixture
def store(tmp_path):
    with SessionStore(tmp_path / "sessions.db") as s:
        yield s


def test_noise_frames_round_trip_through_the_codec():
    frames = noise_result().frames
    data = encode_frames(frames)
    assert json.loads(data)["v"] == NOISE_VERSION
    assert decode_frames(data) == frames
    assert all(f.noise is not None for f in decode_frames(data))


def test_a_noise_run_round_trips_through_the_store(store):
    result = noise_result()
    cid = store.create_conversation("chat", "noise", model="tiny DiffusionGemma")
    store.add_turn(cid, "user", "Say hi")
    store.add_turn(cid, "assistant", result.text, generation=result, config=NOISE_CONFIG, model="tiny DiffusionGemma")
    stored = store.get_conversation(cid)["turns"][1]["generation"]
    assert stored.uniform_noise is True and stored.mask_id is None
    assert stored.frames == result.frames                       # not regrouped as autoregressive blocks of one
    assert stored.stats.upstream_tokens_per_forward == result.stats.upstream_tokens_per_forward
    assert {f.noise.stop_rule for f in stored.frames} - {""} <= {"max_steps", "stable_confident"}
    assert stored == result


def test_rows_from_before_the_noise_mark_still_load(store):
    """A masked run stored as older versions wrote it (ends without uniform_noise, frames version 1)."""
    masked = make_result()
    cid = store.create_conversation("chat", "old", model="sprout-bd")
    store.add_turn(cid, "assistant", masked.text, generation=masked, config=CONFIG, model="sprout-bd")
    conn = sqlite3.connect(store.path)                           # write the row as an older version did
    with conn:
        conn.execute("UPDATE generations SET ends = ?", [json.dumps({"eos_ids": masked.eos_ids,
                                                                     "pad_id": masked.pad_id})])
    conn.close()
    stored = store.get_conversation(cid)["turns"][0]["generation"]
    assert stored.uniform_noise is False
    assert stored.frames == masked.frames and all(f.noise is None for f in stored.frames)


def test_a_noise_run_survives_export_and_import(store, tmp_path):
    result = noise_result()
    cid = store.create_conversation("chat", "noise", model="tiny DiffusionGemma")
    store.add_turn(cid, "assistant", result.text, generation=result, config=NOISE_CONFIG, model="tiny DiffusionGemma")
    path = export_conversation(tmp_path / "out", store.get_conversation(cid))
    new = store.get_conversation(import_conversation(store, path))
    assert new["turns"][0]["generation"].to_dict() == result.to_dict()
