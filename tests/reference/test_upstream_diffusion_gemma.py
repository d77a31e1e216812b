"""The engine decodes DiffusionGemma as transformers 5.25's own `generate` does, step for step, on
tiny random DiffusionGemma models built here (reference/diffusion_gemma.py).

For sampled runs the engine is compared with `model.generate` itself, watched from outside:
every step's draft through the streamer's `put_draft` (upstream's per-step hook), the accepted
positions and the renoised canvas through the sampler's `accept_canvas` / `renoise_canvas`
(wrapped to record, not changed), and whether the stable-and-confident criterion fired. Upstream
has no argmax draw, so greedy runs (`argmax_draws`, ours) are compared with the reference loop,
which is itself checked against `generate` on every sampled run."""

from __future__ import annotations

import pytest
import torch

from engine.backends.uniform_noise import UniformNoiseCanvasBackend
from engine.generate import run
from engine.trace import GenerationConfig
from reference import diffusion_gemma as reference
from reference.tiny import EOS_ID, PAD_ID, tiny_tokenizer

SEEDS = range(20)
PROMPT = [2, 40, 61, 17, 52]
# name: (canvas length, canvases, steps, entropy bound, (t_min, t_max), stability, confidence, argmax draws).
# On these random models the mean entropy runs from ~0.05 to ~4 nats: confidence 1e-9 never fires,
# so the canvas runs to the step cap; at the low temperatures with a wide bound most positions are
# accepted, the draft settles in some canvases and not in others, and both rules end canvases.
CONFIGS = {
    "sampled-1canvas-max_steps": (16, 1, 5, 1.0, (0.4, 0.8), 1, 1e-9, False),
    "sampled-2canvas-both_rules": (16, 2, 8, 4.0, (0.1, 0.3), 1, 0.5, False),
    "sampled-2canvas-confident_only": (8, 2, 6, 2.0, (0.1, 0.3), 0, 0.3, False),
    "greedy-1canvas-both_rules": (16, 1, 8, 4.0, (0.1, 0.3), 1, 0.5, True),
    "greedy-2canvas-max_steps": (16, 2, 4, 1.0, (0.4, 0.8), 2, 1e-9, True),
}


@pytest.fixture(scope="module")
def models():
    return {length: reference.random_diffusion_gemma(seed=3, canvas_length=length) for length in (8, 16)}


def settings(name: str, seed: int) -> dict:
    length, canvases, steps, bound, (t_min, t_max), stability, confidence, greedy = CONFIGS[name]
    return dict(gen_length=length * canvases, block_size=length, steps=steps, entropy_bound=bound,
                stability_threshold=stability, confidence_threshold=confidence, argmax_draws=greedy, seed=seed,
                t_min=t_min, t_max=t_max)


def engine_steps(model, prompt, values):
    backend = UniformNoiseCanvasBackend(model, tiny_tokenizer(), name="tiny DiffusionGemma",
                                        device=torch.device("cpu"))
    result = run(backend, prompt, GenerationConfig(sampler="entropy_bounded", **values))
    steps = [{"canvas": f.block, "step": f.round, "draft": f.noise.draft,
              "accepted": [f.noise.start + i in set(f.noise.accepted) for i in range(len(f.noise.draft))],
              "noisy": f.noise.noisy, "stopped": f.noise.stop_rule == "stable_confident"} for f in result.frames]
    return result, steps


class Watcher:
    """Records what upstream's generate does at each step, changing nothing."""

    def __init__(self, model):
        self.drafts, self.accepted, self.noisy, self.stops = [], [], [], []
        self._sampler, self._stopping = model._prepare_sampler, model._prepare_diffusion_stopping_criteria
        model._prepare_sampler = self.sampler
        model._prepare_diffusion_stopping_criteria = self.stopping

    def sampler(self, config):
        made = self._sampler(config)
        accept, renoise = made.accept_canvas, made.renoise_canvas

        def accept_canvas(*args, **kwargs):
            out = accept(*args, **kwargs)
            self.accepted.append(made.accepted_token_mask[0].tolist())
            return out

        def renoise_canvas(*args, **kwargs):
            out = renoise(*args, **kwargs)
            self.noisy.append(out[0].tolist())
            return out

        made.accept_canvas, made.renoise_canvas = accept_canvas, renoise_canvas
        return made

    def stopping(self, config):
        made = self._stopping(config)
        call = made.__call__

        class Recorded:
            def __call__(_, *args, **kwargs):
                fired = call(*args, **kwargs)
                self.stops.append(bool(fired[0]))
                return fired

            def reset(_):
                made.reset()

        return Recorded()

    def put_draft(self, value=None, **_):
        self.drafts.append(value[0].tolist())

    def put(self, value):
        pass

    def end(self):
        pass


def upstream_steps(model, prompt, values):
    watcher = Watcher(model)
    torch.manual_seed(values["seed"])
    try:
        out = model.generate(torch.tensor([prompt]), streamer=watcher, max_new_tokens=values["gen_length"],
                             max_denoising_steps=values["steps"],
                             sampler_config=reference_sampler_config(values["entropy_bound"]),
                             t_min=values["t_min"], t_max=values["t_max"],
                             stability_threshold=values["stability_threshold"],
                             confidence_threshold=values["confidence_threshold"], eos_token_id=EOS_ID,
                             pad_token_id=PAD_ID)
    finally:
        del model._prepare_sampler, model._prepare_diffusion_stopping_criteria
    steps = [{"draft": d, "accepted": a, "noisy": n, "stopped": s}
             for d, a, n, s in zip(watcher.drafts, watcher.accepted, watcher.noisy, watcher.stops, strict=True)]
    return out, steps


def reference_sampler_config(bound: float):
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

    return EntropyBoundSamplerConfig(entropy_bound=float(bound))


def reference_steps(model, prompt, values):
    return reference.decode(model, prompt, max_new_tokens=values["gen_length"], steps=values["steps"],
                            entropy_bound=values["entropy_bound"], t_min=values["t_min"], t_max=values["t_max"],
                            stability=values["stability_threshold"], confidence=values["confidence_threshold"],
                            seed=values["seed"], argmax_draws=values["argmax_draws"])


def without_place(steps):
    return [{k: v for k, v in s.items() if k not in ("canvas", "step")} for s in steps]


def answer(ids: list[int]) -> list[int]:
    """Generated ids up to the first EOS, pad dropped: what the engine's text is made of."""
    ids = ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids
    return [t for t in ids if t != PAD_ID]


@pytest.fixture(scope="module")
def engine_runs(models):
    """The engine's run of every (config, seed) of the sweep, made once for the module."""
    runs = {}
    for name in CONFIGS:
        for seed in SEEDS:
            values = settings(name, seed)
            runs[name, seed] = engine_steps(models[values["block_size"]], PROMPT, values)
    return runs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", CONFIGS)
def test_each_step_equals_transformers(models, engine_runs, name, seed):
    values = settings(name, seed)
    model = models[values["block_size"]]
    result, ours = engine_runs[name, seed]
    generated, theirs = reference_steps(model, PROMPT, values)
    assert ours == theirs
    if not values["argmax_draws"]:
        out, watched = upstream_steps(model, PROMPT, values)
        assert without_place(ours) == watched
        assert out.sequences[0, len(PROMPT):].tolist() == generated
        assert result.stats.upstream_tokens_per_forward == pytest.approx(float(out.tokens_per_forward[0]))
    assert result.token_ids == answer(generated)
    assert result.text == tiny_tokenizer().decode(answer(generated), skip_special_tokens=True)
    assert result.stats.nfe == len(ours)


def test_the_sweep_reaches_what_it_claims(engine_runs):
    """Each config does what its name says on these seeds: one or two canvases, the stopping
    rules it names (per canvas), and some runs end at an EOS."""
    def ends(name):
        return {(f.block, f.noise.stop_rule) for (n, _s), (r, _) in engine_runs.items() if n == name
                for f in r.frames if f.noise.stop_rule}

    for name in CONFIGS:
        rules = {rule for _canvas, rule in ends(name)}
        canvases = {canvas for canvas, _rule in ends(name)}
        assert canvases == ({0, 1} if "2canvas" in name else {0}), name
        assert rules == ({"max_steps"} if name.endswith("max_steps") else {"max_steps", "stable_confident"}), name
    assert any(r.stats.stop_reason == "eos" for r, _ in engine_runs.values())
    assert any(r.stats.stop_reason == "length" for r, _ in engine_runs.values())
