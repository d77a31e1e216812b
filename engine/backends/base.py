"""The backend protocol. A backend owns the model, tokenizer, device and cache;
samplers own the decisions. `engine.generate` drives either kind.

Diffusion backends see the generated span as a `canvas` (1, L) of ids, mask id where
undecided, and a `block` slice of it. Logits they return are already aligned to the
positions they predict: a backend whose model predicts position i from hidden i-1
(`logit_shift`, Dream / Fast-dLLM v2) shifts internally, so samplers never see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from engine.errors import BackendError  # noqa: F401  (defined there; callers import it from here too)


class Capabilities:
    """What a backend may offer beyond the core protocol, each with the value of a backend that does
    not offer it. Every backend inherits this class (engine/backends/*.py and the stand-ins in tests),
    so the engine, the world and the app read these attributes and never probe with getattr."""

    remote: bool = False                 # served elsewhere: generate hands the whole run to stream()
    chat_format: str | None = None       # "world": writes the agent world's format (Sprout); "openai": a server's
    sends_tools: bool = False            # the tools travel in the request, so no tool list in a system prompt
    one_request_per_chat: bool = False   # weights trained on one request: the latest request is the context
    logits_dtype: torch.dtype = torch.float32   # what the logits come in (model_dtype_probs samples in it)
    supports_aligned_blocks: bool = False  # block-causal: blocks may sit at multiples of the block size
    slides_blocks: bool = False          # trained with shifted blocks: a block may start at any position
    can_extend: bool = False             # AR: extend(ids) appends several known tokens in one forward
    can_fuse_commit: bool = False        # diffusion: a block commit runs fused with the next denoise (Sprout-BD)
    prompt_cache: object | None = None   # Sprout: states of earlier prompts kept between calls (PromptCache)
    windowed_cache: bool = False         # full attention: Fast-dLLM's prefix / dual caches apply to it
    cache_modes: tuple[str, ...] = ("none",)   # GenerationConfig.cache values it runs (its model permitting)
    positions_computed: int | None = None  # query positions fed to the model since prefill, where counted
    mask_id: int | None = None           # masked diffusion backends set it (DiffusionBackend)
    uniform_noise: bool = False          # diffusion over a canvas of random tokens, no mask (UniformNoiseBackend)


@runtime_checkable
class Backend(Protocol):
    name: str
    kind: str                   # "diffusion" or "autoregressive"
    tokenizer: object           # a transformers tokenizer (or anything with encode/decode)
    device: torch.device
    eos_ids: frozenset[int]     # ids that end generation (EOS, end-of-turn)
    pad_id: int | None
    max_length: int             # context the model can take: prompt + generated
    # The optional capabilities, with their defaults in Capabilities:
    remote: bool
    chat_format: str | None
    sends_tools: bool
    one_request_per_chat: bool
    logits_dtype: torch.dtype
    supports_aligned_blocks: bool
    slides_blocks: bool
    can_extend: bool
    can_fuse_commit: bool
    prompt_cache: object | None
    windowed_cache: bool
    cache_modes: tuple[str, ...]
    positions_computed: int | None

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """Prompt ids for a chat (role/content dicts), ending where the assistant speaks."""

    def decode(self, ids: list[int]) -> str:
        """Text of a span, special tokens removed."""

    def token_piece(self, token_id: int) -> str:
        """Display text of one token (for the token grid)."""


@runtime_checkable
class DiffusionBackend(Backend, Protocol):
    mask_id: int
    logit_shift: bool

    def prefill(self, prompt_ids: torch.Tensor, block_size: int | None = None) -> None:
        """Start a generation: (1, P) prompt ids. Resets and fills any cache. `block_size` is given
        with aligned blocks (supports_aligned_blocks): the prompt's tail then shares the first block."""

    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        """Logits (1, len(block), V) for the positions of `block` in the (1, L) canvas.
        Reads the cache and never writes the block it denoises. A backend that defers its commits
        (`can_fuse_commit`) first runs the commit it deferred (a `DeferredCommit`: clean tokens
        already decided) in the same pass: the only write a denoise may make, and one that any
        reader of the cache would have had to run anyway."""

    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        """The block is final: write it to the KV cache / recurrent state (no-op without one). A
        backend with `can_fuse_commit` may defer the write to its next denoise, holding the
        block as a `DeferredCommit`; its cache is then read through `settled_cache()`, which
        runs what is deferred first."""


@dataclass(frozen=True)
class PromptTail:
    """The prompt's last piece, held back with a deferred commit so the prompt cache can keep the
    state after it: the prompt ids (1, P), the slice of them that is the piece, and the answer
    tokens (1, m) committed after it in the same deferred run (m may be 0)."""

    ids: torch.Tensor
    piece: slice
    then: torch.Tensor


@dataclass(frozen=True)
class DeferredCommit:
    """Clean tokens a diffusion backend has committed but not yet run into its cache (`can_fuse_commit`):
    `tokens` (1, n), run fused with the next denoise, or alone when the cache is read
    (`settled_cache()`). `prompt` is set when they begin with the prompt's last piece."""

    tokens: torch.Tensor
    prompt: PromptTail | None = None

    def then_commit(self, tokens: torch.Tensor) -> DeferredCommit:
        """This deferral with a finished block (1, k) appended: blocks committed one after another
        wait as one run (the cache between them is never read)."""
        prompt = self.prompt
        if prompt is not None:
            prompt = PromptTail(prompt.ids, prompt.piece, torch.cat([prompt.then, tokens], dim=1))
        return DeferredCommit(torch.cat([self.tokens, tokens], dim=1), prompt)


@runtime_checkable
class UniformNoiseBackend(Backend, Protocol):
    """Diffusion without a mask token (engine/noise_canvas.py): the canvas starts as random tokens.
    The context (prompt, then each finished canvas) goes through an encoder into a KV cache; the
    decoder reads a whole canvas against it."""

    vocab_size: int
    canvas_length: int          # the length the model was trained with (the preset's block size)

    def prefill(self, prompt_ids: torch.Tensor) -> None:
        """Start a generation: encode (1, P) prompt ids into a fresh cache."""

    def denoise_canvas(self, canvas: torch.Tensor, self_conditioning: torch.Tensor | None) -> torch.Tensor:
        """Logits (1, C, V) for the (1, C) canvas after everything encoded so far, given the last
        step's tempered logits (1, C, V) as self-conditioning (None at a canvas's first step).
        Reads the cache, never writes it."""

    def commit_canvas(self, canvas: torch.Tensor) -> None:
        """The (1, C) canvas is final: encode it into the cache, after what is there."""


@runtime_checkable
class AutoregressiveBackend(Backend, Protocol):
    def prefill(self, prompt_ids: torch.Tensor) -> torch.Tensor:
        """Start a generation: (1, P) prompt ids -> logits (1, V) for the next token."""

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token -> logits (1, V) for the next one."""

    def extend(self, ids: list[int]) -> torch.Tensor:
        """Only where can_extend: append several known tokens in one forward -> logits (1, V) for the
        next (scaffolded decoding's jump-forward, engine/scaffold/jump.py); else they go one `step` each."""


