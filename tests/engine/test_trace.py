"""engine/trace.py: config validation sentences and the JSON round trips of Frame and Result."""

import dataclasses
import json

import pytest

from engine.samplers import SAMPLERS
from engine.trace import ConfigError, Frame, GenerationConfig, Result, Stats, block_size_of


@pytest.mark.parametrize(
    "changes, words",
    [
        pytest.param({"gen_length": 100, "block_size": 48}, ["48", "100", "does not divide"], id="block-not-dividing"),
        pytest.param({"gen_length": 0}, ["Generation length", "0"], id="gen-length-zero"),
        pytest.param({"block_size": 0}, ["Block size", "0"], id="block-size-zero"),
        pytest.param({"steps": 0}, ["Steps per block", "from 1"], id="steps-zero"),
        pytest.param({"sampler": "low_confidence", "steps": 17, "block_size": 16}, ["17", "16"], id="steps-over-block"),
        pytest.param({"threshold": 0.0}, ["Threshold", "between 0 and 1", "got 0.0"], id="threshold-zero"),
        pytest.param({"threshold": 1.5}, ["Threshold", "1.5"], id="threshold-over-one"),
        pytest.param({"sampler": "nucleus"}, ["Unknown sampler", "'nucleus'", "low_confidence"], id="unknown-sampler"),
        pytest.param({"factor": 0.0}, ["Factor"], id="factor-zero"),
        pytest.param({"entropy_bound": -1.0}, ["Entropy bound"], id="negative-entropy-bound"),
        pytest.param({"temperature": -0.1}, ["Temperature"], id="negative-temperature"),
        pytest.param({"top_p": 0.0}, ["Top-p"], id="top-p-zero"),
        pytest.param({"top_k": -1}, ["Top-k"], id="negative-top-k"),
        pytest.param({"steps": 2.5}, ["Steps per block", "whole number", "2.5"], id="fractional-steps"),
    ],
)
def test_bad_setting_is_a_sentence(changes, words):
    with pytest.raises(ConfigError) as caught:
        GenerationConfig(**changes)
    message = str(caught.value)
    for word in words:
        assert word in message
    assert message.endswith(".")


def test_block_size_message_suggests_a_divisor():
    with pytest.raises(ConfigError, match=r"for example 25"):
        GenerationConfig(gen_length=100, block_size=48)


def test_steps_is_a_cap_for_threshold_so_it_may_exceed_block_size():
    assert GenerationConfig(sampler="threshold", block_size=4, gen_length=8, steps=32).steps == 32


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_every_sampler_is_valid(sampler):
    assert GenerationConfig(sampler=sampler).sampler == sampler


@pytest.mark.parametrize("old, new", [("random", "random_order"), ("eb", "entropy_bounded")])
def test_old_sampler_names_are_renamed_with_a_warning(old, new):
    with pytest.warns(FutureWarning, match=f"now called '{new}'"):
        config = GenerationConfig(sampler=old)
    assert config.sampler == new
    assert GenerationConfig.from_dict(config.to_dict()).sampler == new


def test_an_unknown_sampler_names_the_table():
    with pytest.raises(ConfigError, match="random_order"):
        GenerationConfig(sampler="randm")


def test_from_dict_rejects_unknown_key():
    with pytest.raises(ConfigError, match=r"Unknown setting\(s\) temprature"):
        GenerationConfig.from_dict({"temprature": 0.5})


def test_config_round_trip():
    config = GenerationConfig(gen_length=32, block_size=8, steps=4, sampler="entropy_bounded", entropy_bound=0.3,
                              seed=7)
    assert GenerationConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def _result() -> Result:
    frames = [
        Frame(nfe=1, block=0, round=0, committed=[(0, 5, 0.75)], canvas=[5, 2], elapsed_s=0.01),
        Frame(nfe=2, block=0, round=1, committed=[(1, 1, 1.0)], canvas=[5, 1], elapsed_s=0.02),
    ]
    stats = Stats(nfe=2, new_tokens=1, tokens_per_forward=0.5, seconds=0.02, tokens_per_s=50.0,
                  first_token_s=0.01, stop_reason="eos")
    return Result(token_ids=[5], text="a", frames=frames, stats=stats, mask_id=2,
                  pieces={1: "<eos>", 2: "<mask>", 5: "a"})


def test_frame_round_trip_through_json():
    frame = _result().frames[0]
    assert Frame.from_dict(json.loads(json.dumps(frame.to_dict()))) == frame


def test_result_round_trip_through_json():
    result = _result()
    again = Result.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert again.pieces[5] == "a" and again.frames[0].committed == [(0, 5, 0.75)]


def test_block_size_of_a_frame_block():
    assert block_size_of(mask_id=2, config_block_size=8) == 8
    assert block_size_of(mask_id=None, config_block_size=8) == 1      # autoregressive: one token per block


def test_stored_ar_frames_read_as_blocks_of_one_and_diffusion_frames_unchanged():
    grouped = [Frame(nfe=i + 1, block=i // 4, round=i % 4, committed=[(i, 7, 1.0)], canvas=[7] * (i + 1),
                     elapsed_s=0.01 * i) for i in range(6)]
    stats = Stats(nfe=6, new_tokens=6, tokens_per_forward=1.0, seconds=0.06, tokens_per_s=100.0,
                  first_token_s=0.01, stop_reason="length")
    ar = Result(token_ids=[7] * 6, text="", frames=grouped, stats=stats)
    again = Result.from_dict(json.loads(json.dumps(ar.to_dict())))
    assert [(f.block, f.round) for f in again.frames] == [(i, 0) for i in range(6)]
    assert [f.committed for f in again.frames] == [f.committed for f in grouped]
    diffusion = dataclasses.replace(ar, mask_id=2)
    assert Result.from_dict(diffusion.to_dict()).frames == grouped
