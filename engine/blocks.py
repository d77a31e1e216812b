"""Where the blocks of a block-diffusion canvas lie, for every family's layout (engine/trace.py's
GenerationConfig says which)."""

from __future__ import annotations

from engine.trace import GenerationConfig


def block_slices(prompt_length: int, config: GenerationConfig) -> list[slice]:
    """The blocks of the canvas, in order. Aligned blocks (SDAR, Fast-dLLM v2) sit at multiples
    of the block size over prompt + answer: the first one is shortened by the prompt's last
    t = P mod size tokens. The canvas then runs on to the end of the block holding gen_length
    (SDAR, LLaDA2: gen_length + (size - t) mod size positions, the answer cut at gen_length), or,
    with tail_in_length, gen_length counts from the start of the prompt's last block (Fast-dLLM
    v2 decodes gen_length // size + P // size blocks): gen_length - t positions."""
    size = config.block_size
    tail = prompt_length % size if config.aligned_blocks else 0
    first = size - tail
    length = config.gen_length - tail if config.tail_in_length else config.gen_length + first % size
    bounds = [0, *range(first, length, size), length]
    return [slice(start, stop) for start, stop in zip(bounds, bounds[1:])]
