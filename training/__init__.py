"""The training lab that makes the bundled Sprout models: corpus and detour renderers, batch
builders, the read-out heads, growth of a trained model, the probes and the training loop.

It sits above the engine (it runs the agent loop and the backends to evaluate checkpoints);
nothing in app/, engine/, visualizer/, sessions/ or dlm_kernels/ imports it (pyproject.toml's
import contracts check that). Where train.main's parts live: docs/ARCHITECTURE.md.
"""
