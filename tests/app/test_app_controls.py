"""The generation controls (app/controls.py): one named mapping with an info line on every
control, every sampler's parameter, top-p / top-k and the playback pace; "How this works"
names every sampler; presets built in and saved in the store."""

from __future__ import annotations

import gradio as gr
import pytest

from app.controls import (
    INFO,
    MODEL_DEFAULTS,
    ORDER,
    SHOW_EVERY_ROUND,
    WATCH_IT_EDIT,
    generation_controls,
    how_it_works,
    preset_names,
    preset_settings,
    save_preset,
    show_every_round,
    watch_it_edit,
)
from app.settings import DEFAULTS, PACE_MS, RANGES
from engine.metrics import LABELS
from engine.samplers import SAMPLERS
from engine.trace import CACHE_MODES, ConfigError, GenerationConfig
from sessions import SessionStore


class Ctx:
    def __init__(self, store) -> None:
        self.store, self.store_problem = store, None if store is not None else "no database"


@pytest.mark.parametrize("with_sampling", [True, False], ids=["chat", "agent"])
def test_one_named_mapping_with_an_info_line_on_every_control(with_sampling):
    with gr.Blocks():
        controls = generation_controls("t", DEFAULTS, with_sampling=with_sampling)
    expected = {"gen_length", "block_size", "steps", "sampler", "threshold", "factor", "entropy_bound", "pace_ms",
                "edit_threshold", "max_post_steps", "remask", "remask_rounds", "remask_count"}
    if with_sampling:
        expected |= {"temperature", "top_p", "top_k", "seed", "cache", "t_min", "t_max", "stability_threshold",
                     "confidence_threshold", "argmax_draws"}     # the last five: app/noise_controls.py
    assert set(controls) == expected
    assert list(controls) == [name for name in ORDER if name in expected]       # a run's API takes them in order
    for name, component in controls.items():
        assert component.info == INFO[name], name
        assert component.elem_id == f"t-{name.replace('_', '-')}"
    assert controls["pace_ms"].value == PACE_MS > 0
    values = {name: component.value for name, component in controls.items()}
    GenerationConfig(**{k: v for k, v in values.items() if k != "pace_ms"})      # the defaults make a valid config


def test_default_pace_shows_a_block_one_forward_decided_in_four_states_over_near_half_a_second():
    from engine.trace import Frame
    from visualizer.parts import part_count

    block = DEFAULTS["block_size"]
    whole = Frame(nfe=1, block=0, round=0, committed=[(p, 5, 0.999) for p in range(block)], canvas=[5] * 64,
                  elapsed_s=0.01)
    states = part_count(whole, 99, DEFAULTS["gen_length"], block)
    assert states >= 4 and states * PACE_MS >= 450 and RANGES["pace_ms"][0] == 0


def test_how_it_works_explains_every_sampler_and_number():
    text = how_it_works()
    for name, sampler in SAMPLERS.items():
        if name != "reference":
            assert f"**{name}**" in text and sampler.description.split(":")[0] in text
    for label in LABELS.values():
        assert label in text
    assert "block" in text and "round" in text and SHOW_EVERY_ROUND in text
    assert all(f"**{mode}**" in text for mode in CACHE_MODES) and "stale" in text


def test_show_every_round_is_one_round_per_token():
    chosen = show_every_round({**DEFAULTS, "block_size": 8})
    assert chosen["sampler"] == "low_confidence" and chosen["steps"] == 8
    config = GenerationConfig(**{k: v for k, v in chosen.items() if k != "pace_ms"})
    assert SAMPLERS[config.sampler].scheduled and config.steps == config.block_size


def test_presets_saved_in_the_store(tmp_path):
    ctx = Ctx(SessionStore(tmp_path / "s.db"))
    assert preset_names(ctx) == [MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT]
    mine = {**DEFAULTS, "threshold": 0.8, "pace_ms": 400}
    assert "Saved" in save_preset(ctx, "  slow   and sure ", mine)
    assert preset_names(ctx) == [MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT, "slow and sure"]
    assert preset_settings("slow and sure", DEFAULTS, {}, ctx) == mine
    assert "again" not in save_preset(ctx, "slow and sure", {**mine, "threshold": 0.7})   # replaced, not doubled
    assert preset_settings("slow and sure", DEFAULTS, {}, ctx)["threshold"] == 0.7
    assert "built-in" in save_preset(ctx, SHOW_EVERY_ROUND, mine)
    assert "not saved" in save_preset(ctx, "   ", mine)
    assert preset_settings(MODEL_DEFAULTS, DEFAULTS, {}, ctx) == dict(DEFAULTS)
    assert preset_settings("unknown", DEFAULTS, {}, ctx) is None and preset_settings(None, DEFAULTS, {}, ctx) is None
    assert ctx.store.delete_preset("slow and sure")
    assert preset_names(ctx) == [MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT]


def test_presets_without_a_store_say_so():
    ctx = Ctx(None)
    assert preset_names(ctx) == [MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT]
    assert "session store" in save_preset(ctx, "x", DEFAULTS)


def test_watch_it_edit_turns_remasking_on_and_is_explained(tmp_path):
    chosen = watch_it_edit(DEFAULTS)
    config = GenerationConfig(**{k: v for k, v in chosen.items() if k != "pace_ms"})
    assert config.remask == "loop" and config.remask_rounds > 0 and config.temperature > 0
    assert DEFAULTS["remask"] == "off"                                         # off unless asked for
    assert preset_settings(WATCH_IT_EDIT, DEFAULTS, DEFAULTS) == chosen
    text = how_it_works()
    assert WATCH_IT_EDIT in text and "**joint_threshold**" in text and "ReMDM" in text
    assert "built-in preset" in save_preset(Ctx(SessionStore(tmp_path / "s.db")), WATCH_IT_EDIT, DEFAULTS)


def test_the_controls_become_typed_settings_in_one_place():
    from app.settings import read_settings

    read = read_settings({"gen_length": "32", "pace_ms": 250, "schema": '{"type": "object"}', "cache": "none"})
    assert read.config.gen_length == 32 and read.pace_ms == 250.0 and read.structured
    assert read.config.schema == {"type": "object"}
    plain = read_settings({"gen_length": 16, "pace_ms": None, "schema": "  "})
    assert plain.pace_ms == 0.0 and not plain.structured and plain.config.schema is None
    assert read_settings({"seed": 5}, seed=0, temperature=0.0).config.seed == 0      # fixed values win
    for pace in ("fast", float("nan"), -10):
        with pytest.raises(ConfigError, match="pace"):
            read_settings({"pace_ms": pace})
    with pytest.raises(KeyError, match="not a generation setting"):
        read_settings({"pace": 120})          # a control no setting reads is a bug, not a quiet default
