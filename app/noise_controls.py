"""The controls of a uniform-noise canvas (DiffusionGemma): temperature schedule, early stop and
argmax draws, in their own accordion of the generation controls (app/controls.py). The canvas
length is the block size control and the max denoising steps the steps control; the entropy
bound is shared with the entropy_bounded sampler. Each line says what the setting does; a bad
value gets the sentence GenerationConfig writes (engine/setting_rules.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gradio as gr

from engine.setting_rules import setting_label
from engine.trace import GenerationConfig

# (minimum, maximum, step) of each slider.
RANGES = {"t_min": (0.0, 2.0, 0.01), "t_max": (0.01, 2.0, 0.01), "stability_threshold": (0, 8, 1),
          "confidence_threshold": (0.0, 2.0, 0.001)}
NAMES = ("t_min", "t_max", "stability_threshold", "confidence_threshold", "argmax_draws")
DEFAULTS = {name: getattr(GenerationConfig(), name) for name in NAMES}
INFO = {
    "t_min": "DiffusionGemma: the temperature the schedule falls towards (it reaches it after the last step).",
    "t_max": "DiffusionGemma: the temperature of the first step; it falls linearly to t_min. Must be above t_min.",
    "stability_threshold": "DiffusionGemma: a canvas may end early once its draft has not changed for this many "
                           "steps (0 = confidence alone decides).",
    "confidence_threshold": "DiffusionGemma: ...and the mean entropy (nats) of its tempered logits is below this "
                            "(0 = never end early: every canvas runs max denoising steps).",
    "argmax_draws": "DiffusionGemma, ours (off = as transformers decodes): an accepted position takes the likeliest "
                    "token instead of a sample.",
}
# What each setting does, for the model card (app/models_tab.py) and the docs.
CARD = (
    "**Decoding a uniform-noise canvas (DiffusionGemma).** The answer is written canvas by canvas; a canvas "
    "starts as random tokens, not masks. Each step the model reads the whole canvas and proposes a token for "
    "every position; the *entropy bound* accepts the surest positions while their summed entropy minus the "
    "largest stays under it (larger accepts more per step); every other position is redrawn at random, so an "
    "accepted token can still change at the next step. *Block size* is the canvas length (256 for the real "
    "model), *steps* the most denoising steps a canvas takes; the temperature falls from *t_max* to *t_min* "
    "over those steps; a canvas ends early when its draft has been stable for *stability* steps and the mean "
    "entropy is below *confidence*. In the panel, random tokens are faint and marked ~, accepted ones solid, "
    "and the step counter says which rule ended each canvas."
)


def noise_controls(prefix: str, defaults: Mapping[str, Any]) -> dict[str, gr.Component]:
    """name -> component for NAMES, inside a closed accordion; elem_ids `{prefix}-t-min` and so on."""
    values = {**DEFAULTS, **{k: v for k, v in defaults.items() if k in NAMES}}
    out: dict[str, gr.Component] = {}
    with gr.Accordion("Uniform-noise canvas (DiffusionGemma): temperature schedule and early stop", open=False,
                      elem_id=f"{prefix}-noise-canvas"):
        with gr.Row():
            for name in ("t_min", "t_max"):
                out[name] = _slider(name, values[name], prefix)
        with gr.Row():
            for name in ("stability_threshold", "confidence_threshold"):
                out[name] = _slider(name, values[name], prefix)
        out["argmax_draws"] = gr.Checkbox(bool(values["argmax_draws"]), label=setting_label("argmax_draws"),
                                          info=INFO["argmax_draws"], elem_id=f"{prefix}-argmax-draws")
    return out


def _slider(name: str, value: Any, prefix: str) -> gr.Slider:
    low, high, step = RANGES[name]
    return gr.Slider(low, high, value=value, step=step, label=setting_label(name), info=INFO[name],
                     elem_id=f"{prefix}-{name.replace('_', '-')}")


def noise_model_settings(ctx: Any, name: str | None) -> dict[str, Any] | None:
    """The decoding settings of `name` when it is a uniform-noise model (its catalog or folder
    defaults; for one handed to the app, DiffusionGemma's decoding at its own canvas length), else
    None. Picking such a model sets the controls to them: a masked model's settings (its sampler,
    a block of 16) would be refused or would not decode as the model does."""
    from engine import catalog
    from engine.backends.base import BackendError
    from engine.presets import DECODINGS

    row = next((r for r in ctx.registry.listing() if r.get("name") == name), None)
    if not name or row is None or row.get("driver") != "uniform_noise":
        return None
    if row.get("source") != "in memory":
        try:
            return dict(catalog.resolve(name).defaults)
        except BackendError:
            return None
    canvas = ctx.registry.get(name).canvas_length
    return {**DECODINGS["diffusion_gemma"].settings, "block_size": canvas, "gen_length": 2 * canvas}


def follow_noise_models(ctx: Any, model: gr.Dropdown, controls: Mapping[str, gr.Component]) -> None:
    """Wire `model` so that choosing a uniform-noise model sets `controls` to its settings (other
    models leave the controls as they are)."""
    names = list(controls)

    def settings_for(name: str | None) -> list[Any]:
        chosen = noise_model_settings(ctx, name) or {}
        return [chosen[n] if n in chosen else gr.skip() for n in names]

    model.change(settings_for, [model], list(controls.values()), api_visibility="private", show_progress="hidden")
