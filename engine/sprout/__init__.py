"""Sprout: the bundled block-diffusion model with a Gated DeltaNet memory, and its AR twin.

Importing this package registers `SproutConfig` / `SproutModel` with the transformers Auto
classes, so `AutoModel.from_pretrained("models/sprout-bd")` works after `import engine.sprout`.
"""

from engine.sprout.config import SproutConfig
from engine.sprout.modeling import SproutModel

__all__ = ["SproutConfig", "SproutModel"]
