"""Sprout: the bundled block-diffusion model with a Gated DeltaNet memory, and its AR twin.

config (SproutConfig and presets), modeling (the model; importing it registers Sprout with the
transformers Auto classes, so `AutoModel.from_pretrained("models/sprout-bd")` works after
`import sprout.modeling`), cache (what it keeps between calls), tokenizer, and chat (its
special tokens and chat template). The package itself imports nothing, so the agent world can
read the chat format without loading torch; `SproutConfig` / `SproutModel` load on first use.
How the bundled weights were made: training/ and models/README.md.
"""

from __future__ import annotations

__all__ = ["SproutConfig", "SproutModel"]


def __getattr__(name: str):
    if name == "SproutConfig":
        from sprout.config import SproutConfig
        return SproutConfig
    if name == "SproutModel":
        from sprout.modeling import SproutModel
        return SproutModel
    raise AttributeError(f"module 'sprout' has no attribute {name!r}")
