"""DiffusionGemma's settings as controls: each is on the page with a line saying what it does, a
bad value is a sentence, and the model card explains them."""

from __future__ import annotations

import gradio as gr
import pytest

from app.cards import card_for, card_markdown
from app.controls import ORDER, generation_controls
from app.noise_controls import NAMES
from app.settings import DEFAULTS, read_settings
from engine.trace import ConfigError


def test_the_controls_are_built_with_their_info_lines():
    with gr.Blocks():
        controls = generation_controls("chat", DEFAULTS)
    for name in NAMES:
        assert name in controls and controls[name].info
    assert list(ORDER[-len(NAMES):]) == list(NAMES)              # added at the end: positional API callers keep working
    assert "canvas length" in controls["block_size"].info and "denoising steps" in controls["steps"].info


@pytest.mark.parametrize("values, words", [
    ({"t_min": 0.9, "t_max": 0.5}, "must be above the lowest"),
    ({"t_max": 0}, "Highest temperature (t_max) must be"),
    ({"stability_threshold": -1}, "Stability (steps) must be"),
    ({"confidence_threshold": -0.1}, "Confidence (mean entropy) must be"),
    ({"stability_threshold": 1.5}, "must be a whole number"),
], ids=["t_min above t_max", "t_max zero", "negative stability", "negative confidence", "fractional stability"])
def test_a_bad_value_is_a_sentence(values, words):
    with pytest.raises(ConfigError) as error:
        read_settings({**DEFAULTS, **values})
    assert words in str(error.value) and "Traceback" not in str(error.value)


def test_good_values_reach_the_config():
    config = read_settings({**DEFAULTS, "t_min": 0.2, "t_max": 0.6, "stability_threshold": 2,
                            "confidence_threshold": 0.01, "argmax_draws": True}).config
    assert (config.t_min, config.t_max, config.stability_threshold, config.confidence_threshold,
            config.argmax_draws) == (0.2, 0.6, 2, 0.01, True)


def test_the_model_card_says_what_each_control_does():
    text = card_markdown(card_for("DiffusionGemma-26B-A4B-it"))
    for words in ("random tokens", "entropy bound", "t_max", "t_min", "stability", "confidence", "canvas length"):
        assert words in text
    assert "random tokens" not in card_markdown(card_for("Qwen3-1.7B"))
