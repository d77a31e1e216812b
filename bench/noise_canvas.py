"""`python -m bench decode --model random:diffusion_gemma --reference`: the pieces of the decode
benchmark for a uniform-noise canvas. The random model is reference/diffusion_gemma.py's; the
"reference" it is timed against is transformers' own `DiffusionGemmaForBlockDiffusion.generate`
(not a slow loop: the target is the engine's overhead over upstream's generate), watched through
its streamer's `put_draft` so that the canvases can be compared step for step."""

from __future__ import annotations

import torch

from engine.trace import GenerationConfig


def random_backend(device: str, hidden: int, layers: int, canvas_length: int):
    from engine.backends.placement import pick_device
    from engine.backends.uniform_noise import UniformNoiseCanvasBackend
    from reference import tiny
    from reference.diffusion_gemma import random_diffusion_gemma

    dev = pick_device(device)
    model = random_diffusion_gemma(seed=0, canvas_length=canvas_length, hidden=hidden, layers=layers).to(dev)
    return UniformNoiseCanvasBackend(model, tiny.tiny_tokenizer(), name="random:diffusion_gemma", device=dev)


class _Drafts:
    """A streamer that keeps each step's draft as the engine's Frame.canvas reads: the finished
    canvases, then the draft."""

    def __init__(self) -> None:
        self.written: list[int] = []
        self.canvases: list[list[int]] = []
        self._prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if self._prompt_seen:                                   # a finished canvas
            self.written += value[0].tolist()
        self._prompt_seen = True

    def put_draft(self, value: torch.Tensor) -> None:
        self.canvases.append(self.written + value[0].tolist())

    def end(self) -> None:
        pass


def upstream_generate(model, prompt: list[int], config: GenerationConfig, _mask_id) -> list[list[int]]:
    """transformers' generate with the config's settings, seeded as the engine is; its canvas after
    each step. EOS is not passed when the config does not stop on it (then neither stops)."""
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

    if model.config.canvas_length != config.block_size:
        raise ValueError(f"The model's canvas is {model.config.canvas_length} tokens; the config's block size is "
                         f"{config.block_size}.")
    streamer = _Drafts()
    device = next(model.parameters()).device
    torch.manual_seed(config.seed)
    model.generate(torch.tensor([prompt], device=device), streamer=streamer, max_new_tokens=config.gen_length,
                   max_denoising_steps=config.steps,
                   sampler_config=EntropyBoundSamplerConfig(entropy_bound=float(config.entropy_bound)),
                   t_min=config.t_min, t_max=config.t_max, stability_threshold=config.stability_threshold,
                   confidence_threshold=float(config.confidence_threshold) or 1e-30,
                   eos_token_id=None if not config.stop_on_eos else model.config.text_config.eos_token_id)
    return streamer.canvases
