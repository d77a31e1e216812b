"""SproutConfig: one config for both twins (the AR twin is the diffusion config plus
`causal=True`), with named presets. Registered with the transformers Auto classes."""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig


@strict
class SproutConfig(PreTrainedConfig):
    model_type = "sprout"

    vocab_size: int = 1024
    hidden_size: int = 256
    num_heads: int = 4
    head_dim: int = 64
    intermediate_size: int = 704          # SwiGLU width, ~ 8/3 * hidden
    layer_pattern: str = "GAGA"           # G = gated DeltaNet layer, A = attention layer
    conv_size: int = 4                    # short causal conv in G layers
    rope_theta: float = 10000.0
    max_position_embeddings: int = 1024
    rms_norm_eps: float = 1e-6
    initializer_range: float = 0.02
    causal: bool = False                  # True: the AR twin (next-token); False: block diffusion
    # BD: a block's token i is read from position i-1 (the first from the clean stream's last
    # position), as Dream and Fast-dLLM v2 do, so AR weights fit the diffusion objective at once
    logit_shift: bool = False
    block_sizes: list[int] | tuple[int, ...] = (4, 8, 16)   # drawn per batch in BD training
    # BD trained with blocks at every phase of a reply (training.data.bd_batch shifted_share), so
    # a decoder may start a block at any position; else blocks follow the reply's grid
    sliding_blocks: bool = False
    noise_low: float = 0.5                # per-block t ~ U[noise_low, noise_high]; the high end must be 1
    noise_high: float = 1.0               # (decoding starts from an all-mask block); see data.bd_batch
    mask_token_id: int | None = None
    pad_token_id: int | None = None
    eos_token_id: int | None = None
    tie_word_embeddings: bool = True

    def __post_init__(self, **kwargs):
        bad = set(self.layer_pattern) - {"G", "A"}
        if not self.layer_pattern or bad:
            raise ValueError(f"layer_pattern must be a string of G and A, got {self.layer_pattern!r}.")
        super().__post_init__(**kwargs)

    @property
    def num_hidden_layers(self) -> int:
        return len(self.layer_pattern)


# Named presets: the keys are SproutConfig fields (unknown keys are an error in `preset_config`).
PRESETS: dict[str, dict] = {
    # The bundled model: ~3.5 M parameters with a 2k vocabulary; trains at a few thousand
    # tokens/s on two CPU cores.
    "cpu": dict(hidden_size=256, num_heads=4, head_dim=64, intermediate_size=704, layer_pattern="GAGA"),
    # A few steps in tests.
    "smoke": dict(hidden_size=32, num_heads=2, head_dim=16, intermediate_size=64, layer_pattern="GA"),
}


def preset_config(name: str, **overrides) -> SproutConfig:
    if name not in PRESETS:
        raise ValueError(f"Unknown Sprout preset {name!r}; choose one of {', '.join(PRESETS)}.")
    values = {**PRESETS[name], **overrides}
    known = set(SproutConfig.__dataclass_fields__) if hasattr(SproutConfig, "__dataclass_fields__") else None
    if known is not None:
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Unknown Sprout config key(s): {', '.join(unknown)}.")
    return SproutConfig(**values)
