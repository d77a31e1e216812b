"""The generation controls every tab shows, built once: one named mapping (name -> component)
with an `info=` line on each, every sampler's parameter, top-p / top-k, the playback pace, the cache,
named presets (built in, and saved in the session store), and a short "How this works".

`generation_controls` is called inside a tab's layout; the tab hands the returned mapping's
values to its handler by name (app/widgets.py `with_settings`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr

from engine.metrics import LABELS, MEANINGS
from engine.sampler_table import SAMPLERS
from engine.setting_rules import setting_label
from engine.trace import CACHE_MODES, GenerationConfig
from visualizer.escape import markdown_text

from .noise_controls import INFO as NOISE_INFO
from .noise_controls import NAMES as NOISE_NAMES
from .noise_controls import noise_controls
from .settings import RANGES, REMASK_CHOICES, SAMPLER_CHOICES

_EDIT_DEFAULTS = {name: getattr(GenerationConfig(), name)
                  for name in ("edit_threshold", "max_post_steps", "remask_rounds", "remask_count")}
# a tab's defaults may leave these out (the agent's): the values the controls start at then
_FALLBACKS = {"threshold": GenerationConfig().threshold, "factor": 1.0, "entropy_bound": 0.5, **_EDIT_DEFAULTS}

# One line under each control: what it does and which samplers read it.
INFO = {
    "gen_length": "Tokens the model may write (the canvas); it stops earlier when it ends its answer.",
    "block_size": "Tokens decided together, left to right, block by block; must divide the generation length. "
                  "DiffusionGemma: the canvas length.",
    "steps": "Rounds (forwards) per block: a fixed schedule for low_confidence, margin, entropy, random_order; "
             "a cap for the others. DiffusionGemma: the most denoising steps a canvas takes.",
    "sampler": "The rule that picks which masked positions to commit each round (see How this works).",
    "threshold": "threshold, threshold_strict, prefix_threshold, threshold_or_top_k(_uncapped): commit proposals "
                 "at least this confident.",
    "factor": "factor, factor_prefix: commit ranks n with (n + 1)(1 - confidence) <= factor; larger commits more.",
    "entropy_bound": "entropy_bounded: commit the surest positions while their summed entropy minus the largest "
                     "stays under this bound (DiffusionGemma: accept them; the rest are redrawn at random).",
    "temperature": "0 = always the likeliest token (greedy); higher samples more freely.",
    "top_p": "Sample only from the likeliest tokens whose probabilities add up to p (1 = all). Needs temperature > 0.",
    "top_k": "Sample only from the k likeliest tokens (0 = off). Needs temperature > 0.",
    "seed": "Seeds the sampling noise and random_order, so a run can be repeated exactly.",
    "edit_threshold": "joint_threshold (LLaDA2.1): rewrite a decided token when the new proposal is this sure "
                      "and differs (quality mode 0.5, speedy 0.0).",
    "max_post_steps": "joint_threshold: rounds after a block's last mask in which only edits happen; the block "
                      "ends at the first round without one.",
    "remask": "Remasking (ReMDM) for any sampler: off; loop = when a block is full, put its least sure tokens "
              "back and decode them again; cap = do so while it still has masks.",
    "remask_rounds": "Remasking: how many rounds per block may put tokens back (the budget; 0 = none).",
    "remask_count": "Remasking: how many of the block's least sure tokens go back in each such round.",
    "cache": "LLaDA and Dream only (full attention): prefix keeps the keys and values before the block from its "
             "first round, dual also the masked rest's; fewer positions computed per forward, answers not "
             "the same as none (the reference). Other models: none.",
    "pace_ms": "Playback pace: how long each drawn state stays on screen (0 = as fast as it computes). A forward "
               "that decided many tokens is drawn in labelled parts, surest first. It changes what you see and the "
               "wall time, not the model time: the page never draws while a forward runs.",
}
INFO.update(NOISE_INFO)        # DiffusionGemma's own controls (app/noise_controls.py)
# The order of the returned mapping (and so of a run's API inputs), whatever the layout.
# Later additions go at the end, so a client that passes the earlier ones by position still works.
ORDER = ("gen_length", "block_size", "steps", "sampler", "threshold", "factor", "entropy_bound", "temperature",
         "top_p", "top_k", "seed", "pace_ms", "edit_threshold", "max_post_steps", "remask", "remask_rounds",
         "remask_count", "cache", *NOISE_NAMES)
# The settings only some samplers read, each shown while the chosen sampler reads it.
SAMPLER_PARAMETERS = ("threshold", "factor", "entropy_bound", "edit_threshold", "max_post_steps")
SHOW_EVERY_ROUND = "Show every round"
MODEL_DEFAULTS = "Model defaults"
WATCH_IT_EDIT = "Watch it edit"
_CACHES = ("with **none**, every round re-reads the prompt and the whole canvas. Fast-dLLM's **prefix** cache "
           "runs the whole sequence once at a block's first round and keeps the keys and values of everything "
           "before the block; later rounds feed only the block and what follows it. **dual** also keeps the "
           "masked rest's, so later rounds feed the block alone. Attention looks both ways, so those kept values "
           "go stale as the block fills in: the answers can differ from none's, and are refreshed at every block.")
_TEACHING = ("One token per round, surest first (low_confidence with steps = block size): "
             "every round of every block is a frame.")


WATCHING = (
    "**Watching it**: the panel draws each forward at the playback pace. When one forward decided many tokens "
    "of its block, it is drawn in parts of at most four tokens, surest first, labelled *part i/n of one forward*: "
    "a part is not a round, the model made those decisions at once. The model computes ahead while you watch "
    "(never while the page draws, so the display cannot slow its clock); once it is done, the panel says "
    "*replay* until it has shown the last forward. Every line of numbers says what it covers: *this generation* "
    "(one reply of the model), *this turn* (a chat answer with its tool calls, each a generation) or *this "
    "episode* (an agent run)."
)


def show_every_round(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The teaching preset: low_confidence with one round per token (steps = block size)."""
    block = int(settings.get("block_size") or 16)
    return {**settings, "sampler": "low_confidence", "steps": block}


# Remasking on the bundled model: the plain threshold rule drafts with a low bar at temperature 1,
# and each full block sends its 8 least sure tokens back 4 times, so the grid shows remasked cells
# and, now and then, a token that came back different (an edit). Sprout is sure of most tokens, so
# edits are rare: they show up in free text more than in a tool call's fixed parts.
_WATCH_IT_EDIT = {"sampler": "threshold", "threshold": 0.3, "temperature": 1.0, "remask": "loop",
                  "remask_rounds": 4, "remask_count": 8, "pace_ms": 300}
_EDITING_NOTE = (
    "**Editing and remasking**: most samplers never take a decided token back. **joint_threshold** "
    "(LLaDA2.1) drafts with a threshold and, in the same forwards, rewrites a decided token when the model "
    "now prefers another one by more than the edit threshold; after a block's last mask it goes on for up "
    "to *max post steps* rounds that only edit. **Remasking** (ReMDM: Wang et al. 2025) works with any "
    "sampler: it puts the least sure decided tokens of the block back to the mask and decodes them again "
    "(loop: once the block is full; cap: while it still has masks), within a budget of rounds per block. "
    "An edited cell shows the old token struck through before the new one; a remasked cell shows \u21ba. "
    "An edited position is still counted once in answer tokens and tokens per forward; edits are counted "
    "on their own.")


def watch_it_edit(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The editing preset: remasking on, so tokens go back and come back (sometimes different)."""
    return {**settings, **_WATCH_IT_EDIT}


def how_it_works() -> str:
    """Markdown: blocks, steps, and what each sampler commits (one sentence each, from the
    sampler table), then what the numbers mean (engine/metrics.py)."""
    rules = "\n".join(f"- **{name}**: {s.description}" for name, s in SAMPLERS.items() if name != "reference")
    numbers = "\n".join(f"- **{LABELS[k]}**: {MEANINGS[k]}" for k in LABELS)
    return (
        "A diffusion model writes its answer on a canvas of masked cells. It works **block by block**, "
        "left to right; inside a block, each **round** is one model forward that proposes a token for every "
        "masked cell with a confidence, and the **sampler** commits some of them. Committed tokens stay "
        "(unless an editing or remasking rule, below, takes them back); the "
        "block is done when no mask is left, and the next block starts from it. **Steps** is how many rounds "
        "a block may take. More tokens per round means fewer forwards (faster), at some risk to quality.\n\n"
        f"**Samplers** (what each commits per round):\n{rules}\n\n"
        f"{_EDITING_NOTE}\n\n"
        f"**{SHOW_EVERY_ROUND}** (preset): {_TEACHING}\n\n"
        f"**{WATCH_IT_EDIT}** (preset): remasking on the bundled model (threshold 0.3 at temperature 1, loop, "
        f"8 tokens back 4 times a block), slowed to 300 ms a round.\n\n**Cache** (LLaDA, Dream): {_CACHES}\n\n"
        f"{WATCHING}\n\n**The numbers**:\n{numbers}"
    )


def _slider(name: str, label: str | None, value: Any, prefix: str, **kw: Any) -> gr.Slider:
    """A setting's slider, labelled as every sentence about the setting names it (None:
    engine.setting_rules.setting_label) unless the control says more (a unit)."""
    low, high, step = RANGES[name]
    return gr.Slider(low, high, value=value, step=step, label=label or setting_label(name), info=INFO[name],
                     elem_id=f"{prefix}-{name.replace('_', '-')}", **kw)


def generation_controls(prefix: str, defaults: Mapping[str, Any], with_sampling: bool = True, ctx: Any = None,
                        more: Callable[[], Any] | None = None) -> dict[str, gr.Component]:
    """name -> component: gen_length, block_size, steps, sampler, threshold, factor, entropy_bound,
    (temperature, top_p, top_k, seed when with_sampling), pace_ms. elem_ids are `{prefix}-gen-length`
    and so on. Also builds the preset row (and, with `ctx`, presets saved in its store) and the
    "How this works" note, wired to these controls. `more()` builds a tab's own controls at the
    end of the "More settings" disclosure."""
    controls: dict[str, gr.Component] = {}
    # Two controls a row: the settings sit in a half-width column, and their info lines need room.
    # First what every run reads, and the parameters of the chosen sampler only (the others are
    # hidden while it does not read them: sampler_parameters_shown); the rest under a disclosure.
    with gr.Row():
        controls["gen_length"] = _slider("gen_length", "Generation length (tokens)", defaults["gen_length"], prefix)
        controls["block_size"] = _slider("block_size", None, defaults["block_size"], prefix)
    with gr.Row():
        controls["steps"] = _slider("steps", None, defaults["steps"], prefix)
        controls["sampler"] = gr.Dropdown(SAMPLER_CHOICES, value=defaults["sampler"], label="Sampler",
                                          info=INFO["sampler"], elem_id=f"{prefix}-sampler")
    reads = SAMPLERS[defaults["sampler"]].parameters
    with gr.Row():
        for name in SAMPLER_PARAMETERS:
            controls[name] = _slider(name, None, defaults.get(name, _FALLBACKS[name]), prefix, visible=name in reads)
        if with_sampling:
            controls["temperature"] = _slider("temperature", None, defaults["temperature"], prefix)
    with gr.Accordion("More settings: presets, top-p and top-k, seed, pace, remasking, cache", open=False,
                      elem_id=f"{prefix}-more-settings"):
        presets = _more_settings(controls, prefix, defaults, with_sampling, ctx, more)
    presets["status"] = gr.Markdown(elem_id=f"{prefix}-preset-status")
    controls = {name: controls[name] for name in ORDER if name in controls}     # the API's positional order
    _wire_presets(controls, presets, defaults, ctx)
    return controls


def _more_settings(controls: dict[str, gr.Component], prefix: str, defaults: Mapping[str, Any], with_sampling: bool,
                   ctx: Any, more: Callable[[], Any] | None) -> dict[str, gr.Component]:
    """The disclosure's controls, added to `controls`; returns the preset row's components."""
    if with_sampling:                              # Compare and Chat, where DiffusionGemma can run
        controls.update(noise_controls(prefix, defaults))
    with gr.Accordion("How this works: blocks, steps, samplers, numbers", open=False, elem_id=f"{prefix}-how-it-works"):
        gr.Markdown(how_it_works())
    with gr.Row():
        preset = gr.Dropdown(preset_names(ctx), value=None, label="Preset", elem_id=f"{prefix}-preset",
                             info="Named settings: the model's defaults, Show every round, Watch it edit, "
                                  "or one you saved.")
        preset_name = gr.Textbox(label="Save these settings as", placeholder="a name",
                                 elem_id=f"{prefix}-preset-name", info="Saved in the session store, for every tab.")
        with gr.Column(min_width=120):
            save = gr.Button("Save preset", elem_id=f"{prefix}-save-preset", size="sm")
            every = gr.Button(SHOW_EVERY_ROUND, elem_id=f"{prefix}-every-round", size="sm")
    if with_sampling:
        with gr.Row():
            controls["top_p"] = _slider("top_p", None, defaults.get("top_p", 1.0), prefix)
            controls["top_k"] = _slider("top_k", "Top-k", defaults.get("top_k", 0), prefix)
    with gr.Row():
        controls["pace_ms"] = _slider("pace_ms", "Playback pace (ms per drawn state)", defaults.get("pace_ms", 0),
                                      prefix)
        if with_sampling:
            controls["seed"] = gr.Number(defaults["seed"], precision=0, label="Seed", info=INFO["seed"],
                                         elem_id=f"{prefix}-seed")
    with gr.Row():
        controls["remask"] = gr.Dropdown(REMASK_CHOICES, value=defaults.get("remask", "off"), label="Remasking",
                                         info=INFO["remask"], elem_id=f"{prefix}-remask")
        controls["remask_rounds"] = _slider("remask_rounds", "Remask rounds per block",
                                            defaults.get("remask_rounds", _EDIT_DEFAULTS["remask_rounds"]), prefix)
    with gr.Row():
        controls["remask_count"] = _slider("remask_count", None,
                                           defaults.get("remask_count", _EDIT_DEFAULTS["remask_count"]), prefix)
        if with_sampling:                          # the agent tab runs Sprout models, which keep no such cache
            controls["cache"] = gr.Dropdown(list(CACHE_MODES), value=defaults.get("cache", "none"), label="Cache",
                                            info=INFO["cache"], elem_id=f"{prefix}-cache")
    if more is not None:
        more()
    return {"preset": preset, "preset_name": preset_name, "save": save, "every": every}


def _wire_presets(controls: dict[str, gr.Component], presets: dict[str, gr.Component], defaults: Mapping[str, Any],
                  ctx: Any) -> None:
    """A preset picked, Show every round, Save preset; and the sampler's own parameters shown."""
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

    parameters = [controls[name] for name in SAMPLER_PARAMETERS]
    controls["sampler"].change(sampler_parameters_shown, [controls["sampler"]], parameters, api_visibility="private",
                               queue=False, show_progress="hidden")
    preset = presets["preset"]
    preset.input(apply, [preset, *outputs], outputs, api_visibility="private", show_progress="hidden")
    presets["every"].click(teach, outputs, outputs, api_visibility="private", show_progress="hidden")
    presets["save"].click(store_preset, [presets["preset_name"], *outputs], [preset, presets["status"]],
                          api_visibility="private", show_progress="hidden")


def sampler_parameters_shown(sampler: str | None) -> list[Any]:
    """One update per SAMPLER_PARAMETERS: shown when `sampler` reads it (engine/sampler_table.py)."""
    spec = SAMPLERS.get(str(sampler or ""))
    reads = spec.parameters if spec is not None else SAMPLER_PARAMETERS     # unknown: all, the run will say why
    return [gr.update(visible=name in reads) for name in SAMPLER_PARAMETERS]


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
    built_in = [MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT]
    return [*built_in, *[n for n in saved if n not in built_in]]


def preset_settings(choice: str | None, defaults: Mapping[str, Any], current: Mapping[str, Any], ctx: Any = None
                    ) -> dict[str, Any] | None:
    """The control values a preset sets (None for no choice or an unknown name)."""
    if not choice:
        return None
    if choice == MODEL_DEFAULTS:
        return dict(defaults)
    if choice == SHOW_EVERY_ROUND:
        return show_every_round(current)
    if choice == WATCH_IT_EDIT:
        return watch_it_edit(current)
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
    if name in (MODEL_DEFAULTS, SHOW_EVERY_ROUND, WATCH_IT_EDIT):
        return f"'{name}' is a built-in preset; choose another name."
    try:
        store.save_preset(name, {k: v for k, v in settings.items() if v is not None})
    except Exception as exc:  # noqa: BLE001 - StoreError or a bad name (ValueError): a sentence either way
        return markdown_text(f"The preset was not saved: {exc}")
    return markdown_text(f"Saved preset '{name}'.")
