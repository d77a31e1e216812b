"""Sprout: a small block-diffusion LM whose history lives in a Gated DeltaNet (GDN) state.

One backbone, two streams:
- clean stream (commit mode): token-causal over the context. G layers run the gated delta
  rule S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T and keep S; A layers keep RoPE
  keys/values. The AR twin (`causal=True`) is this stream alone, trained on the next token.
- noisy stream (denoise mode): a block of C partly-masked tokens at positions p..p+C-1.
  A layers: the block attends to the clean prefix (< p) and bidirectionally to itself.
  G layers: a softmax over the block's own keys plus ONE history slot whose value is the
  read-out S_p^T q_i of the clean state before the block, and whose logit is
  bias_h + lambda_h * log(C) (the learnable block-size calibration). Denoise never writes S.
- logit_shift (for a twin adapted from AR weights): the logits for block token i come from
  noisy position i-1, and for i = 0 from the clean stream's last position (its next-token
  logits), so every prediction is made where the AR twin made it.

The same `_noisy` code serves training (many blocks per sequence, vectorised) and inference
(one block against the cache), so "training logits == prefill + denoise" is a real check.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import WeightRenaming

from .cache import (
    Context,
    LayerContext,
    LayerState,
    SproutCache,
)
from .config import SproutConfig
from .delta_layer import GatedDeltaLayer
from .layers import AttentionLayer, RMSNorm, SwiGLU


class SproutBlock(nn.Module):
    """One layer: norm, mixer (a G or an A layer), residual, norm, SwiGLU MLP, residual. Both
    mixers take the same arguments in both streams, so the block does not ask which it has."""

    def __init__(self, config: SproutConfig, kind: str):
        super().__init__()
        self.norm1 = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mixer = GatedDeltaLayer(config) if kind == "G" else AttentionLayer(config)
        self.norm2 = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = SwiGLU(config.hidden_size, config.intermediate_size)

    def clean(self, x: torch.Tensor, pos: torch.Tensor, past: LayerState | None,
              keep_features: bool = False) -> tuple[torch.Tensor, LayerState]:
        """x (B, n, d) clean tokens at `pos` (B, n) after `past` -> (B, n, d) and the new state."""
        y, state = self.mixer.clean(self.norm1(x), pos, past, keep_features)
        x = x + y
        return x + self.mlp(self.norm2(x)), state

    def noisy(self, x: torch.Tensor, pos: torch.Tensor, ctx: LayerContext) -> torch.Tensor:
        """x (B, NB, C, d) noisy blocks at `pos` (B, NB, C), reading the clean stream through `ctx`."""
        x = x + self.mixer.noisy(self.norm1(x), pos, ctx)
        return x + self.mlp(self.norm2(x))

    def clean_then_noisy(self, x: torch.Tensor, pos: torch.Tensor, n: int,
                         past: LayerState | None) -> tuple[torch.Tensor, LayerState]:
        """`clean` on rows [:n] of x (B, n+C, d) and `noisy` on rows [n:] (one block right after
        them) in one pass: the norms and the MLP are row-wise, so they run once over both."""
        y, state = self.mixer.clean_then_noisy(self.norm1(x), pos, n, past)
        x = x + y
        return x + self.mlp(self.norm2(x)), state


class SproutModel(PreTrainedModel):
    config_class = SproutConfig
    base_model_prefix = "sprout"
    _no_split_modules = ["SproutBlock"]

    def __init__(self, config: SproutConfig):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList(SproutBlock(config, kind) for kind in config.layer_pattern)
        self.final_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.register_load_state_dict_pre_hook(_rename_flat_keys)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
        elif isinstance(module, GatedDeltaLayer):
            nn.init.normal_(module.conv, std=0.5 / module.conv.shape[1] ** 0.5)
            with torch.no_grad():
                module.conv[:, -1] += 1.0   # start near identity: the current token passes through

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.final_norm(h), self.embed.weight)   # tied embeddings

    # ---- clean stream -------------------------------------------------------------------
    def clean(self, ids: torch.Tensor, cache: SproutCache | None = None,
              keep_features: bool = False) -> tuple[torch.Tensor, SproutCache]:
        """ids (B, n) appended after `cache` (None = empty context).
        Returns hidden (B, n, d) and the new cache (without next_logits)."""
        B, n = ids.shape
        start = cache.length if cache is not None else 0
        pos = (start + torch.arange(n, device=ids.device)).expand(B, n)
        x, states = self.embed(ids), []
        for i, block in enumerate(self.blocks):
            x, state = block.clean(x, pos, cache.layers[i] if cache is not None else None, keep_features)
            states.append(state)
        return x, SproutCache(tuple(states), start + n)

    def forward(self, input_ids: torch.Tensor, **_) -> torch.Tensor:
        """Causal logits (B, T, V): the AR twin's training pass (and the clean stream of BD)."""
        h, _ = self.clean(input_ids)
        return self.logits(h)

    # ---- noisy stream -------------------------------------------------------------------
    def _noisy(self, ids: torch.Tensor, starts: torch.Tensor, ctx: Context) -> torch.Tensor:
        """ids (B, NB, C) noisy blocks starting at `starts` (B, NB) -> logits (B, NB, C, V)."""
        return self.logits(self._noisy_hidden(ids, starts, ctx))

    def _noisy_hidden(self, ids: torch.Tensor, starts: torch.Tensor, ctx: Context) -> torch.Tensor:
        """ids (B, NB, C) noisy blocks starting at `starts` (B, NB) -> hidden states (B, NB, C, d)."""
        C = ids.shape[-1]
        pos = starts[..., None] + torch.arange(C, device=ids.device)       # (B, NB, C)
        x = self.embed(ids)
        for block, layer_ctx in zip(self.blocks, ctx.layers):
            x = block.noisy(x, pos, layer_ctx)
        return x

    def bd_logits(self, clean_ids: torch.Tensor, noisy_ids: torch.Tensor, starts: torch.Tensor):
        """The vectorised BD training pass. clean_ids (B, T); noisy_ids (B, NB, C) with block j
        at positions starts[:, j] + [0, C). Returns noisy logits (B, NB, C, V)."""
        return self.bd_forward(clean_ids, noisy_ids, starts)[0]

    def bd_forward(self, clean_ids: torch.Tensor, noisy_ids: torch.Tensor, starts: torch.Tensor):
        """bd_logits plus the clean stream's hidden states (B, T, d), which are the AR twin's
        pass over the same ids (so a next-token loss on them costs only the output head)."""
        noisy_h, clean_h = self.bd_hidden(clean_ids, noisy_ids, starts)
        return self.logits(noisy_h), clean_h

    def bd_hidden(self, clean_ids: torch.Tensor, noisy_ids: torch.Tensor, starts: torch.Tensor):
        """The BD training pass up to the output head: the hidden state each noisy token's logits
        are read from (B, NB, C, d), shift applied, and the clean stream's (B, T, d). The head is
        row-wise, so shifting hidden states equals shifting logits; training then runs the head
        only on the rows that carry a target (training/losses.py)."""
        clean_h, cache = self.clean(clean_ids, keep_features=True)
        ctx = Context(tuple(block.mixer.context(state, starts) for block, state in zip(self.blocks, cache.layers)))
        noisy_h = self._noisy_hidden(noisy_ids, starts, ctx)
        if self.config.logit_shift:
            before = torch.gather(clean_h, 1, (starts - 1).clamp(min=0)[..., None].expand(-1, -1, clean_h.shape[-1]))
            noisy_h = shift_block_logits(before, noisy_h)   # (B, NB, d) first tokens
        return noisy_h, clean_h

    # ---- inference: prefill / denoise / commit ------------------------------------------
    def prefill(self, ids: torch.Tensor) -> tuple[SproutCache, torch.Tensor]:
        """ids (B, P) -> (cache, logits of the last position (B, V))."""
        h, cache = self.clean(ids)
        last = self.logits(h[:, -1])
        return cache.with_next_logits(last), last

    def commit(self, ids: torch.Tensor, cache: SproutCache) -> tuple[SproutCache, torch.Tensor]:
        """Append finished tokens (B, n) -> (new cache, logits (B, n, V)). The cache passed in
        is not modified, so callers may keep it."""
        h, new_cache = self.clean(ids, cache)
        logits = self.logits(h)
        return new_cache.with_next_logits(logits[:, -1]), logits

    def denoise(self, block_ids: torch.Tensor, cache: SproutCache) -> torch.Tensor:
        """Logits (B, C, V) for a noisy block right after the cached context. Reads only."""
        B = block_ids.shape[0]
        ctx = Context(tuple(block.mixer.context(state) for block, state in zip(self.blocks, cache.layers)))
        starts = torch.full((B, 1), cache.length, dtype=torch.long, device=block_ids.device)
        logits = self._noisy(block_ids[:, None], starts, ctx)
        if self.config.logit_shift:
            logits = shift_block_logits(cache.next_logits[:, None], logits)
        return logits[:, 0]

    def commit_then_denoise(self, ids: torch.Tensor, block_ids: torch.Tensor,
                            cache: SproutCache | None) -> tuple[SproutCache, torch.Tensor]:
        """`commit(ids, cache)` and then `denoise(block_ids, <its cache>)` in one pass over the
        n + C rows (ids (B, n), block_ids (B, C)) -> (the commit's cache, logits (B, C, V)).
        Equal to the two calls up to float rounding; it saves a forward's fixed costs (a matmul
        per weight instead of two, one walk over the layers), which on a CPU are most of a
        16-token forward. The commit's own logits are not computed, only the last position's
        (the cache's next_logits)."""
        n = ids.shape[1]
        B, C = block_ids.shape
        start = cache.length if cache is not None else 0                   # None: `prefill(ids)` then denoise
        pos = (start + torch.arange(n + C, device=ids.device)).expand(B, -1)
        x, states = self.embed(torch.cat([ids, block_ids], 1)), []
        for i, block in enumerate(self.blocks):
            x, state = block.clean_then_noisy(x, pos, n, cache.layers[i] if cache is not None else None)
            states.append(state)
        last = self.logits(x[:, n - 1])                                     # (B, V)
        logits = self.logits(x[:, None, n:])                                # (B, 1, C, V)
        if self.config.logit_shift:
            logits = shift_block_logits(last[:, None], logits)
        return SproutCache(tuple(states), start + n).with_next_logits(last), logits[:, 0]


def shift_block_logits(first: torch.Tensor, noisy: torch.Tensor) -> torch.Tensor:
    """first (B, NB, V) for each block's token 0; noisy (B, NB, C, V) position outputs (or the
    hidden states they are read from, V = d).
    Token i >= 1 takes the output of position i-1; the last position's output is not used."""
    return torch.cat([first[:, :, None], noisy[:, :, :-1]], dim=2)


# Checkpoints name the layer parts in four flat lists (mixers.i, norms1.i, norms2.i, mlps.i),
# the layout the shipped weights were saved in; the model holds them as blocks.i.{mixer, norm1,
# norm2, mlp}. transformers renames on load (and back on save, so saved folders keep the shipped
# layout); the pre-hook does the same for a plain load_state_dict (training checkpoints).
_FLAT_PARTS = {"mixers": "mixer", "norms1": "norm1", "norms2": "norm2", "mlps": "mlp"}


def _rename_flat_keys(module: nn.Module, state_dict: dict, prefix: str, *_) -> None:
    for key in [k for k in state_dict if k.startswith(prefix)]:
        part, _, rest = key[len(prefix):].partition(".")
        if part in _FLAT_PARTS:
            index, _, name = rest.partition(".")
            state_dict[f"{prefix}blocks.{index}.{_FLAT_PARTS[part]}.{name}"] = state_dict.pop(key)


register_checkpoint_conversion_mapping("SproutModel", [
    WeightRenaming(source_patterns=rf"^{flat}\.(\d+)\.", target_patterns=rf"blocks.\1.{part}.")
    for flat, part in _FLAT_PARTS.items()], overwrite=True)

AutoConfig.register("sprout", SproutConfig, exist_ok=True)
AutoModel.register(SproutConfig, SproutModel, exist_ok=True)
