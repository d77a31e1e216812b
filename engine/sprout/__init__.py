"""Sprout: the bundled block-diffusion model with a Gated DeltaNet memory, and its AR twin."""
