"""The generation controls every tab shows, built once: one named mapping (name -> component)
with an `info=` line on each, every sampler's parameter, top-p / top-k, the playback pace, the cache,
named presets (built in, and saved in the session store), and a short "How this works".

`generation_controls` is called inside a tab's layout; the tab hands the returned mapping's
values to its handler by name (app/widgets.py `with_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gradio as gr

from engine.metrics import LABELS, MEANINGS
from engine.sampler_table import SAMPLERS
from engine.trace import CACHE_MODES
from visualizer.escape import markdown_text

from .settings import RANGES, SAMPLER_CHOICES

# One line under each control: what it does and which samplers read it.
INFO = {
    "gen_length": "Tokens the model may write (the canvas); it stops earlier when it ends its answer.",
    "block_size": "Tokens decided together, left to right, block by block; must divide the generation length.",
    "steps": "Rounds (forwards) per block: a fixed schedule for low_confidence, margin, entropy, random_order; "
             "a cap for the others.",
    "sampler": "The rule that picks which masked positions to commit each round (see How this works).",
    "threshold": "threshold, threshold_strict, prefix_threshold, threshold_or_top_k(_uncapped): commit proposals "
                 "at least this confident.",
    "factor": "factor, factor_prefix: commit ranks n with (n + 1)(1 - confidence) <= factor; larger commits more.",
    "entropy_bound": "entropy_bounded: commit the surest positions while their summed entropy minus the largest "
                     "stays under this bound.",
    "temperature": "0 = always the likeliest token (greedy); higher samples more freely.",
    "top_p": "Sample only from the likeliest tokens whose probabilities add up to p (1 = all). Needs temperature > 0.",
    "top_k": "Sample only from the k likeliest tokens (0 = off). Needs temperature > 0.",
    "seed": "Seeds the sampling noise and random_order, so a run can be repeated exactly.",
    "cache": "LLaDA and Dream only (full attention): prefix keeps the keys and values before the block from its "
             "first round, dual also the masked rest's; fewer positions computed per forward, answers not "
             "the same as none (the reference). Other models: none.",
    "pace_ms": "Playback pace: how long each round stays on screen (0 = as fast as it computes). It changes what "
               "you see, never the measured times.",
}
# The order of the returned mapping (and so of a run's API inputs), whatever the layout.
ORDER = ("gen_length", "block_size", "steps", "sampler", "threshold", "factor", "entropy_bound", "temperature",
         "top_p", "top_k", "seed", "pace_ms", "cache")
SHOW_EVERY_ROUND = "Show every round"
MODEL_DEFAULTS = "Model defaults"
_CACHES = ("with **none**, every round re-reads the prompt and the whole canvas. Fast-dLLM's **prefix** cache "
           "runs the whole sequence once at a block's first round and keeps the keys and values of everything "
           "before the block; later rounds feed only the block and what follows it. **dual** also keeps the "
           "masked rest's, so later rounds feed the block alone. Attention looks both ways, so those kept values "
           "go stale as the block fills in: the answers can differ from none's, and are refreshed at every block.")
_TEACHING = ("One token per round, surest first (low_confidence with steps = block size): "
             "every round of every block is a frame.")


def show_every_round(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The teaching preset: low_confidence with one round per token (steps = block size)."""
    block = int(settings.get("block_size") or 16)
    return {**settings, "sampler": "low_confidence", "steps": block}


def how_it_works() -> str:
    """Markdown: blocks, steps, and what each sampler commits (one sentence each, from the
    sampler table), then what the numbers mean (engine/metrics.py)."""
    rules = "\n".join(f"- **{name}**: {s.description}" for name, s in SAMPLERS.items() if name != "reference")
    numbers = "\n".join(f"- **{LABELS[k]}**: {MEANINGS[k]}" for k in LABELS)
    return (
        "A diffusion model writes its answer on a canvas of masked cells. It works **block by block**, "
        "left to right; inside a block, each **round** is one model forward that proposes a token for every "
        "masked cell with a confidence, and the **sampler** commits some of them. Committed tokens stay; the "
        "block is done when no mask is left, and the next block starts from it. **Steps** is how many rounds "
        "a block may take. More tokens per round means fewer forwards (faster), at some risk to quality.\n\n"
        f"**Samplers** (what each commits per round):\n{rules}\n\n"
        f"**{SHOW_EVERY_ROUND}** (preset): {_TEACHING}\n\n**Cache** (LLaDA, Dream): {_CACHES}\n\n"
        f"**The numbers**:\n{numbers}"
    )


def _slider(name: str, label: str, value: Any, prefix: str, **kw: Any) -> gr.Slider:
    low, high, step = RANGES[name]
    return gr.Slider(low, high, value=value, step=step, label=label, info=INFO[name],
                     elem_id=f"{prefix}-{name.replace('_', '-')}", **kw)


def generation_controls(prefix: str, defaults: Mapping[str, Any], with_sampling: bool = True, ctx: Any = None
                        ) -> dict[str, gr.Component]:
    """name -> component: gen_length, block_size, steps, sampler, threshold, factor, entropy_bound,
    (temperature, top_p, top_k, seed when with_sampling), pace_ms. elem_ids are `{prefix}-gen-length`
    and so on. Also builds the preset row (and, with `ctx`, presets saved in its store) and the
    "How this works" note, wired to these controls."""
    with gr.Accordion("How this works: blocks, steps, samplers, numbers", open=False,
                      elem_id=f"{prefix}-how-it-works"):
        gr.Markdown(how_it_works())
    with gr.Row():
        preset = gr.Dropdown(preset_names(ctx), value=None, label="Preset", elem_id=f"{prefix}-preset",
                             info="Named settings: the model's defaults, Show every round, or one you saved.")
        preset_name = gr.Textbox(label="Save these settings as", placeholder="a name", elem_id=f"{prefix}-preset-name",
                                 info="Saved in the session store, for every tab.")
        with gr.Column(min_width=120):
            save = gr.Button("Save preset", elem_id=f"{prefix}-save-preset", size="sm")
            every = gr.Button(SHOW_EVERY_ROUND, elem_id=f"{prefix}-every-round", size="sm")
    controls: dict[str, gr.Component] = {}
    # Two controls a row: the settings sit in a half-width column, and their info lines need room.
    with gr.Row():
        controls["gen_length"] = _slider("gen_length", "Generation length (tokens)", defaults["gen_length"], prefix)
        controls["block_size"] = _slider("block_size", "Block size", defaults["block_size"], prefix)
    with gr.Row():
        controls["steps"] = _slider("steps", "Steps per block", defaults["steps"], prefix)
        controls["sampler"] = gr.Dropdown(SAMPLER_CHOICES, value=defaults["sampler"], label="Sampler",
                                          info=INFO["sampler"], elem_id=f"{prefix}-sampler")
    with gr.Row():
        controls["threshold"] = _slider("threshold", "Threshold", defaults["threshold"], prefix)
        controls["factor"] = _slider("factor", "Factor", defaults.get("factor", 1.0), prefix)
    with gr.Row():
        controls["entropy_bound"] = _slider("entropy_bound", "Entropy bound", defaults.get("entropy_bound", 0.5),
                                            prefix)
        if with_sampling:
            controls["temperature"] = _slider("temperature", "Temperature", defaults["temperature"], prefix)
    if with_sampling:
        with gr.Row():
            controls["top_p"] = _slider("top_p", "Top-p", defaults.get("top_p", 1.0), prefix)
            controls["top_k"] = _slider("top_k", "Top-k", defaults.get("top_k", 0), prefix)
    with gr.Row():
        controls["pace_ms"] = _slider("pace_ms", "Playback pace (ms per round)", defaults.get("pace_ms", 0), prefix)
        if with_sampling:
            controls["seed"] = gr.Number(defaults["seed"], precision=0, label="Seed", info=INFO["seed"],
                                         elem_id=f"{prefix}-seed")
    if with_sampling:                                  # the agent tab runs Sprout models, which keep no such cache
        with gr.Row():
            controls["cache"] = gr.Dropdown(list(CACHE_MODES), value=defaults.get("cache", "none"), label="Cache",
                                            info=INFO["cache"], elem_id=f"{prefix}-cache")
    status = gr.Markdown(elem_id=f"{prefix}-preset-status")
    controls = {name: controls[name] for name in ORDER if name in controls}     # the API's positional order

    names = list(controls)
    outputs = list(controls.values())

    def apply(choice: str | None, *values: Any) -> list[Any]:
        current = dict(zip(names, values))
        chosen = preset_settings(choice, defaults, current, ctx)
        return [gr.skip() if chosen is None or name not in chosen else chosen[name] for name in names]

    def teach(*values: Any) -> list[Any]:
        chosen = show_every_round(dict(zip(names, values)))
        return [chosen[name] for name in names]

    def store_preset(name: str, *values: Any) -> tuple[Any, str]:
        message = save_preset(ctx, name, dict(zip(names, values)))
        return gr.Dropdown(choices=preset_names(ctx)), message

    preset.input(apply, [preset, *outputs], outputs, api_visibility="private", show_progress="hidden")
    every.click(teach, outputs, outputs, api_visibility="private", show_progress="hidden")
    save.click(store_preset, [preset_name, *outputs], [preset, status], api_visibility="private",
               show_progress="hidden")
    return controls


# -- presets ------------------------------------------------------------------------------------
def _store(ctx: Any) -> Any:
    return getattr(ctx, "store", None) if ctx is not None else None


def preset_names(ctx: Any = None) -> list[str]:
    saved = []
    store = _store(ctx)
    if store is not None:
        try:
            saved = list(store.presets())
        except Exception:  # noqa: BLE001 - an unreadable store still leaves the built-in presets
            saved = []
    return [MODEL_DEFAULTS, SHOW_EVERY_ROUND, *[n for n in saved if n not in (MODEL_DEFAULTS, SHOW_EVERY_ROUND)]]


def preset_settings(choice: str | None, defaults: Mapping[str, Any], current: Mapping[str, Any], ctx: Any = None
                    ) -> dict[str, Any] | None:
    """The control values a preset sets (None for no choice or an unknown name)."""
    if not choice:
        return None
    if choice == MODEL_DEFAULTS:
        return dict(defaults)
    if choice == SHOW_EVERY_ROUND:
        return show_every_round(current)
    store = _store(ctx)
    if store is None:
        return None
    return store.presets().get(choice)


def save_preset(ctx: Any, name: str, settings: Mapping[str, Any]) -> str:
    """Save the settings under `name`; the sentence to show (saved, or why not)."""
    store = _store(ctx)
    if store is None:
        return "Presets need the session store, which is not available: " + str(getattr(ctx, "store_problem", ""))
    name = " ".join(str(name or "").split())
    if name in (MODEL_DEFAULTS, SHOW_EVERY_ROUND):
        return f"'{name}' is a built-in preset; choose another name."
    try:
        store.save_preset(name, {k: v for k, v in settings.items() if v is not None})
    except Exception as exc:  # noqa: BLE001 - StoreError or a bad name (ValueError): a sentence either way
        return markdown_text(f"The preset was not saved: {exc}")
    return markdown_text(f"Saved preset '{name}'.")
