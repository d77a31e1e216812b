"""Generation over uniform-noise canvases (DiffusionGemma), one Frame per decoder forward.

The answer is written canvas after canvas (`block_size` tokens each, `gen_length` in all). A canvas
starts as random tokens; each step the decoder reads it against the encoded context, and the step's
rules (engine/noise_rules.py) draw, accept and renoise, until the step cap or the stable-and-confident
stop. The last step's draft is the canvas's text: it is encoded after the context and the next
canvas starts. As transformers' `generate` does, the run stops after a canvas that holds EOS.

Random numbers come from one generator seeded with `config.seed`, consumed in upstream's order
(canvas: randint; each step: multinomial, then randint), so a seeded run equals transformers' own
`generate` under `torch.manual_seed(seed)` (tests/reference/test_upstream_diffusion_gemma.py).

What a Frame says here: `block` is the canvas, `round` the step; `canvas` the finished canvases'
text then this step's draft; `noise` what the step did (draft, noisy canvas, accepted, changed,
temperature, mean entropy, the stop rule on the last step). `committed` stays empty until the
canvas's last step, which decides all its positions: nothing before it is final.
NFE counts decoder forwards; the encoder passes (prompt, finished canvases) are the prefill and
block commits of engine/generate.py, not counted.
"""

from __future__ import annotations

from collections.abc import Generator

import torch

from engine.metrics import ModelClock
from engine.noise_rules import (
    StableAndConfident,
    draw,
    entropy_bound_accept,
    schedule_temperature,
    token_entropy,
    uniform_tokens,
)
from engine.result import summarize
from engine.trace import ConfigError, Frame, GenerationConfig, NoiseStep, Result

ACCEPTANCE = "entropy_bounded"     # the sampler name whose rule this canvas follows (engine/sampler_table.py)


def check(backend, config: GenerationConfig) -> None:
    """Refuse, with a sentence, what a uniform-noise canvas cannot do."""
    if config.sampler != ACCEPTANCE:
        raise ConfigError(f"{backend.name} starts from random tokens, not masks, and accepts by the entropy bound: "
                          f"set the sampler to {ACCEPTANCE} (got {config.sampler!r}).")
    if config.scaffolded:
        raise ConfigError(f"{backend.name} rewrites its whole canvas every step, so it cannot be scaffolded: "
                          "turn scaffolded decoding off.")
    if config.remask != "off":
        raise ConfigError(f"{backend.name} already renoises every token it does not accept: set remasking to off.")


@torch.inference_mode()
def _step(backend, canvas: torch.Tensor, self_conditioning: torch.Tensor | None, steps_left: int,
          config: GenerationConfig, generator: torch.Generator):
    """One decoder forward and the rules after it -> (tempered logits, draft, accept mask, noisy canvas,
    probs, mean entropy, temperature). Tensors (1, C) unless said."""
    logits = backend.denoise_canvas(canvas, self_conditioning)                      # (1, C, V)
    temperature = schedule_temperature(steps_left, config.steps, config.t_min, config.t_max)
    tempered = logits / temperature                                                 # (1, C, V)
    probs = torch.softmax(tempered, dim=-1, dtype=torch.float32)                    # (1, C, V)
    draft = torch.argmax(tempered, dim=-1)
    drawn = draft if config.argmax_draws else draw(probs, generator)
    entropy = token_entropy(tempered)
    accept = entropy_bound_accept(entropy, config.entropy_bound)
    kept = torch.where(accept, drawn, canvas)
    fresh = uniform_tokens(canvas.shape[1], backend.vocab_size, generator, canvas.device)
    noisy = torch.where(~accept, fresh, kept)
    return tempered, draft, accept, noisy, probs, entropy.mean(dim=-1), float(temperature)


def generate_noise_canvas(backend, prompt: list[int], config: GenerationConfig) -> Generator[Frame, None, Result]:
    check(backend, config)
    clock = ModelClock()
    device = backend.device
    generator = torch.Generator(device=device).manual_seed(config.seed)
    backend.prefill(torch.tensor([prompt], dtype=torch.long, device=device))
    length = config.block_size
    written: list[int] = []                                  # the finished canvases' drafts
    frames: list[Frame] = []
    stop_reason = "length"
    for index in range(config.num_blocks):
        start = index * length
        canvas = uniform_tokens(length, backend.vocab_size, generator, device)     # (1, C)
        stop = StableAndConfident(config.stability_threshold, config.confidence_threshold)
        self_conditioning = None
        last_accepted: dict[int, int] = {}                   # position -> token accepted at the last step
        for step in range(config.steps):
            tempered, draft, accept, noisy, probs, mean_entropy, temperature = _step(
                backend, canvas, self_conditioning, config.steps - step, config, generator)
            stable_and_confident = stop(draft, mean_entropy)
            rule = "stable_confident" if stable_and_confident else "max_steps" if step + 1 == config.steps else ""
            draft_ids = draft[0].tolist()
            noisy_ids = noisy[0].tolist()                    # accepted positions hold their drawn token
            accepted = [start + i for i in accept[0].nonzero()[:, 0].tolist()]
            changed = [p for p in accepted if p in last_accepted and last_accepted[p] != noisy_ids[p - start]]
            last_accepted = {p: noisy_ids[p - start] for p in accepted}
            committed = []
            if rule:                                         # the canvas ends: its draft is decided
                confidence = probs[0].gather(-1, draft[0][:, None])[:, 0].tolist()
                committed = [(start + i, t, c) for i, (t, c) in enumerate(zip(draft_ids, confidence))]
            noise = NoiseStep(start=start, draft=draft_ids, noisy=noisy_ids, accepted=accepted, changed=changed,
                              temperature=temperature, mean_entropy=float(mean_entropy[0]), stop_rule=rule)
            frame = Frame(nfe=len(frames) + 1, block=index, round=step, committed=committed,
                          canvas=written + draft_ids, elapsed_s=clock.elapsed(), noise=noise)
            frames.append(frame)
            with clock.paused():
                yield frame
            if rule:
                break
            canvas, self_conditioning = noisy, tempered
        written += draft_ids
        if config.stop_on_eos and any(t in backend.eos_ids for t in draft_ids):
            stop_reason = "eos"
            break
        if index + 1 < config.num_blocks:
            backend.commit_canvas(draft)
    return summarize(backend, frames, clock.wall(), stop_reason, config.gen_length)
