"""Schema-scaffolded decoding: the fixed text of a tool call or of a JSON answer (braces, keys,
quotes, commas, tags) is written into the canvas as soon as it is determined, and the model
decides only the values (docs/ARCHITECTURE.md, "Scaffolded decoding").

    schema.py    a JSON schema -> shapes (fixed text, choices, value slots with budgets)
    machine.py   the shapes as a character automaton: what may come next, what is forced
    tokens.py    the automaton over a tokenizer's pieces: forced token runs, allowed candidates
    diffusion.py scaffolded block-diffusion decoding (one Frame per forward)
    jump.py      the autoregressive counterpart: forced text appended in one forward (jump-forward)
    target.py    what is written (a registry tool call, or a schema's value) and the check of the answer

This module imports nothing, so engine.trace can check a schema without loading torch.
"""
