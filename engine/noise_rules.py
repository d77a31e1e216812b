"""The rules of one uniform-noise denoising step, as small pure functions (DiffusionGemma's, read
from transformers 5.25 `models/diffusion_gemma/generation_diffusion_gemma.py`; docs/upstream.md).

A uniform-noise canvas is not masked: it starts as tokens drawn uniformly from the vocabulary.
Each step the model reads the whole canvas and returns logits; then
- the logits are divided by a temperature that falls linearly over the steps (`schedule_temperature`);
- every position draws a token from softmax(those logits) (the denoiser canvas), and its argmax is
  the step's draft;
- the entropy bound accepts the lowest-entropy positions while sum H - max H <= bound
  (`entropy_bound_accept`); an accepted position takes its drawn token;
- every position not accepted is renoised with a fresh uniform token, so what was accepted at one
  step can be replaced at the next;
- the canvas ends at the step cap, or once the draft has not changed for `stability` steps and the
  mean entropy is below the confidence threshold (`StableAndConfident`).
The draft of the last step is the canvas's text. Each op is the one upstream uses, in the same
dtype and order, so that a seeded run draws exactly upstream's random numbers.
"""

from __future__ import annotations

import torch

STOP_RULES = ("max_steps", "stable_confident")   # why a canvas ended (Frame.noise.stop_rule)


def schedule_temperature(steps_left: int, max_steps: int, t_min: float, t_max: float) -> torch.Tensor:
    """t = t_min + (t_max - t_min) * n / N, with n the steps left (N at the first step, 1 at the
    last), so t never reaches t_min. Computed as upstream does, n an int32 tensor: float32."""
    left = torch.tensor(steps_left, dtype=torch.int32)
    return t_min + ((t_max - t_min) * (left / max_steps))


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """(1, C, V) tempered logits -> (1, C) entropy of each position's distribution, in nats."""
    return torch.distributions.Categorical(logits=logits).entropy()


def entropy_bound_accept(entropy: torch.Tensor, bound: float) -> torch.Tensor:
    """(1, C) entropies -> (1, C) bool: the k lowest-entropy positions with
    sum_{j<=k} H_(j) - H_(k) <= bound (sorted ascending, H_(k) is the running maximum); at least
    the lowest one. The sum less the maximum bounds the joint mutual information of the accepted
    tokens, so they are close to independent (arXiv 2505.24857)."""
    ranked, order = torch.sort(entropy, dim=-1, descending=False)             # (1, C) each
    inside = torch.cumsum(ranked, dim=-1) - ranked <= bound                   # (1, C), in rank order
    return torch.scatter(torch.zeros_like(inside), dim=-1, index=order, src=inside)


def draw(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(1, C, V) probabilities -> (1, C) tokens drawn from them (torch.multinomial, as upstream)."""
    batch, length, vocab = probs.shape
    return torch.multinomial(probs.view(-1, vocab), num_samples=1, generator=generator).view(batch, length)


def uniform_tokens(length: int, vocab_size: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """(1, length) tokens drawn uniformly from the vocabulary: a fresh canvas, or renoising."""
    return torch.randint(0, vocab_size, (1, length), generator=generator, device=device)


class StableAndConfident:
    """The adaptive stop: the draft (argmax canvas) equals each of the last `stability` drafts and
    the mean entropy of the tempered logits is below `confidence`. The history starts as -1 (no
    token), so the first `stability` steps cannot stop; stability 0 asks only for confidence, and
    confidence 0 never stops (an entropy is never below 0)."""

    def __init__(self, stability: int, confidence: float) -> None:
        self.stability = stability
        self.confidence = confidence
        self.history: torch.Tensor | None = None                               # (S, 1, C) last drafts

    def __call__(self, draft: torch.Tensor, mean_entropy: torch.Tensor) -> bool:
        if self.stability == 0:
            stable = True
        else:
            if self.history is None:
                self.history = torch.full((self.stability, *draft.shape), -1, dtype=draft.dtype, device=draft.device)
            stable = bool((self.history == draft[None]).all())
            self.history = torch.roll(self.history, shifts=-1, dims=0)
            self.history[-1] = draft
        return stable and bool((mean_entropy < self.confidence).all())
