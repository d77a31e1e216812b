"""A tiny random DiffusionGemma in the uniform-noise canvas backend, and one real run of it, for
the tests of every surface that shows such a run (sessions, visualizer, API, app)."""

from __future__ import annotations

import functools

import torch

from engine.backends.uniform_noise import UniformNoiseCanvasBackend
from engine.generate import run
from engine.trace import GenerationConfig, Result
from reference.diffusion_gemma import random_diffusion_gemma
from reference.tiny import tiny_tokenizer

# Two canvases of 16, wide bound at low temperatures: most positions are accepted within a few steps.
NOISE_CONFIG = GenerationConfig(gen_length=32, block_size=16, steps=6, sampler="entropy_bounded", entropy_bound=4.0,
                                t_min=0.1, t_max=0.3, stability_threshold=1, confidence_threshold=0.5, seed=1,
                                stop_on_eos=False)


def tiny_noise_backend(name: str = "tiny DiffusionGemma", canvas_length: int = 16) -> UniformNoiseCanvasBackend:
    model = random_diffusion_gemma(seed=3, canvas_length=canvas_length)
    return UniformNoiseCanvasBackend(model, tiny_tokenizer(), name=name, device=torch.device("cpu"))


@functools.lru_cache(maxsize=1)
def noise_result() -> Result:
    """One finished run: two canvases, frames with Frame.noise (copy before changing it)."""
    backend = tiny_noise_backend()
    return run(backend, backend.encode_chat([{"role": "user", "content": "Say hi"}]), NOISE_CONFIG)
