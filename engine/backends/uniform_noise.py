"""DiffusionGemma (transformers' `DiffusionGemmaForBlockDiffusion`, no remote code) as a
uniform-noise canvas backend (engine/backends/base.py `UniformNoiseBackend`).

The model is an encoder and a decoder over one KV cache. The encoder reads the context causally
and appends its keys and values: the prompt at the start, then each finished canvas. The decoder
reads a canvas (random tokens at first) bidirectionally, attending to the cache and never writing
it, and returns logits for every canvas position. Positions, masks and calls are made as
transformers 5.25's `generation_diffusion_gemma.py` makes them (docs/upstream.md), so a seeded
run equals its `generate` step for step (tests/reference/test_upstream_diffusion_gemma.py)."""

from __future__ import annotations

from typing import Any

import torch

from engine.backends.base import BackendError
from engine.backends.hf_text import HFTextMixin, special_ids


class UniformNoiseCanvasBackend(HFTextMixin):
    kind = "diffusion"
    uniform_noise = True

    def __init__(self, model: torch.nn.Module, tokenizer: Any, *, name: str, device: torch.device,
                 max_length: int | None = None) -> None:
        self.model, self.tokenizer, self.name, self.device = model, tokenizer, name, device
        text = model.config.get_text_config()
        self.vocab_size = int(text.vocab_size)
        self.canvas_length = int(model.config.canvas_length)
        self.eos_ids, self.pad_id = special_ids(tokenizer, model)
        self.max_length = int(max_length or getattr(text, "max_position_embeddings", 0) or 4096)
        self.mask_id = None
        self.logit_shift = False
        self.cache: Any = None
        self.length = 0                         # tokens encoded so far (prompt + finished canvases)

    def _ones(self, length: int) -> torch.Tensor:
        return torch.ones((1, length), dtype=torch.bool, device=self.device)  # (1, length): no padding

    def _encode(self, ids: torch.Tensor) -> None:
        """Append (1, n) ids to the cache through the encoder, at positions length .. length + n."""
        n = ids.shape[1]
        positions = torch.arange(self.length, self.length + n, dtype=torch.int32, device=self.device)[None]  # (1, n)
        encoder = self.model.model.encoder
        placeholder = torch.empty((1, n, 0), dtype=self.model.dtype, device=self.device)  # shape and dtype only
        masks = encoder.create_masks_for_generate(config=self.model.config, inputs_embeds=placeholder,
                                                  attention_mask=self._ones(self.length + n), cache=self.cache,
                                                  position_ids=positions)
        out = encoder(input_ids=ids.clone(memory_format=torch.contiguous_format), attention_mask=masks,
                      cache=self.cache, position_ids=positions)
        self.cache = out.cache
        self.length += n

    @torch.inference_mode()
    def prefill(self, prompt_ids: torch.Tensor) -> None:
        from transformers import DynamicCache

        prompt = prompt_ids.to(self.device)
        if prompt.ndim != 2 or prompt.shape[0] != 1 or prompt.shape[1] < 1:
            raise BackendError(f"Model '{self.name}' needs a (1, P) prompt of at least one token.")
        self.cache = DynamicCache(config=self.model.config.get_text_config(decoder=True))
        self.length = 0
        self._encode(prompt)

    @torch.inference_mode()
    def denoise_canvas(self, canvas: torch.Tensor, self_conditioning: torch.Tensor | None) -> torch.Tensor:
        if self.cache is None:
            raise BackendError("denoise_canvas was called before prefill: start a generation with prefill(prompt).")
        length = canvas.shape[1]
        self._check_length(self.length + length)
        positions = torch.arange(self.length, self.length + length, dtype=torch.int32, device=self.device)[None]
        decoder = self.model.model.decoder
        masks = decoder.create_diffusion_decoder_attention_mask(
            config=self.model.config, inputs_embeds=canvas.unsqueeze(-1), cache=self.cache,
            decoder_attention_mask=self._ones(self.length + length))
        if self_conditioning is not None:                    # upstream feeds it in the embeddings' dtype
            self_conditioning = self_conditioning.to(decoder.embed_tokens.weight.dtype)
        out = self.model(decoder_input_ids=canvas, self_conditioning_logits=self_conditioning,
                         decoder_attention_mask=masks, cache=self.cache, decoder_position_ids=positions)
        return out.logits                                                      # (1, C, V) float32, soft-capped

    @torch.inference_mode()
    def commit_canvas(self, canvas: torch.Tensor) -> None:
        self._encode(canvas.to(self.device))

