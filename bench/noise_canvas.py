"""`python -m bench decode --model random:diffusion_gemma --reference`: the pieces of the decode
benchmark for a uniform-noise canvas. The random model is reference/diffusion_gemma.py's; the
"reference" it is timed against is transformers' own `DiffusionGemmaForBlockDiffusion.generate`
(not a slow loop: the target is the engine's overhead over upstream's generate), watched through
its streamer's `put_draft` so that the canvases can be compared step for step."""

from __future__ import annotations

import time

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


# DiffusionGemma-26B-A4B-it's text shapes (its config.json, as the tt-metal port lists them): 30
# layers, hidden 2816, 16 heads / 8 KV heads of 256, 128 experts (top 8) of 704, vocab 262,144,
# sliding window 1024, canvas 256. The vision tower is kept small: text decoding never runs it.
REAL_TEXT = dict(vocab_size=262_144, hidden_size=2816, intermediate_size=2112, num_hidden_layers=30,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=256, num_experts=128, top_k_experts=8,
                 moe_intermediate_size=704, sliding_window=1024, max_position_embeddings=262_144)
SMALL_VISION = {"model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16}


def shaped_model(shape: str, device: str, dtype: torch.dtype):
    """A random DiffusionGemmaForBlockDiffusion at the real text shapes ("real", ~26 B parameters: a
    GPU of 80 GB in bf16) or the tiny test shapes ("tiny"), built on the device in `dtype`."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    from reference.diffusion_gemma import random_diffusion_gemma

    if shape == "tiny":
        return random_diffusion_gemma(seed=0, canvas_length=16).to(device, dtype)
    config = DiffusionGemmaConfig(text_config=REAL_TEXT, vision_config=SMALL_VISION, canvas_length=256)
    before = torch.get_default_dtype()
    torch.manual_seed(0)
    try:
        torch.set_default_dtype(dtype)
        with torch.device(device):
            model = DiffusionGemmaForBlockDiffusion(config)
    finally:
        torch.set_default_dtype(before)
    return model.eval()


def gpu_step(device: str, shape: str, dtype: torch.dtype, steps: int = 48, canvases: int = 1,
             repeats: int = 2) -> dict:
    """The DiffusionGemma step of scripts/cuda_check.py: tokens/s and tokens per step of the engine
    on a random model at `shape`, and transformers' own generate on it (same seed: the same
    canvases), best of `repeats` after a warm-up. Random weights spread their probability over
    the vocabulary, so few tokens are accepted per step and the stop never fires: this measures
    the cost of a step, not the model's 16 tokens per step."""
    from engine.backends.uniform_noise import UniformNoiseCanvasBackend
    from engine.generate import run
    from reference import tiny

    model = shaped_model(shape, device, dtype)
    canvas = model.config.canvas_length
    backend = UniformNoiseCanvasBackend(model, tiny.tiny_tokenizer(), name=f"random DiffusionGemma ({shape})",
                                        device=torch.device(device))
    config = GenerationConfig(gen_length=canvas * canvases, block_size=canvas, steps=steps, sampler="entropy_bounded",
                              entropy_bound=0.1, t_min=0.4, t_max=0.8, stability_threshold=1,
                              confidence_threshold=0.005, stop_on_eos=False)
    prompt = list(range(10, 74))                                   # 64 prompt tokens
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)

    def timed(fn):
        best, out = float("inf"), None
        for _ in range(repeats + 1):                               # the first is the warm-up
            sync()
            started = time.perf_counter()
            out = fn()
            sync()
            best = min(best, time.perf_counter() - started)
        return best, out

    engine_s, result = timed(lambda: run(backend, prompt, config))
    upstream_s, drafts = timed(lambda: upstream_generate(model, prompt, config, None))
    accepted = [len(f.noise.accepted) for f in result.frames]
    tokens = result.stats.new_tokens
    return {"shape": shape, "parameters": sum(p.numel() for p in model.parameters()), "dtype": str(dtype),
            "canvas": canvas, "canvases": canvases, "steps": steps, "forwards": result.stats.nfe,
            "answer_tokens": tokens, "tokens_per_forward": round(result.stats.tokens_per_forward, 3),
            "accepted_per_step": round(sum(accepted) / len(accepted), 2),
            "engine_s": round(engine_s, 4), "engine_tokens_per_s": round(tokens / engine_s, 1),
            "upstream_s": round(upstream_s, 4), "upstream_tokens_per_s": round(tokens / upstream_s, 1),
            "overhead": round(engine_s / upstream_s, 3),
            "same_canvases": [f.canvas for f in result.frames] == drafts}
