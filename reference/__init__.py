"""Slow reference decoding loops, one module per upstream family, each written from reading the
authors' code (the module names the file and commit it follows): the plain loops beside the
engine's fast path. tests/reference/test_upstream_*.py run them beside the engine on the same tiny model
and compare the canvas after every round; `python -m bench decode --reference` times the
engine against them. `tiny` builds the random models both use; nothing here is downloaded."""
