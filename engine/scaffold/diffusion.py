"""Scaffolded block-diffusion decoding: the answer's fixed text goes into the canvas as soon as
it is determined, and the forwards decide only the value slots.

The canvas is written left to right from a cursor: every position before it is decided
(by the model or by the scaffold), every position after it is a mask. Each forward denoises the
cursor's block; then, walking from the cursor, the model's best allowed token
(engine/scaffold/tokens.py) is committed at each position while its confidence is at least
min(threshold, scaffold_threshold) (the first one always: a forward never ends without
progress), and after each commit the text the automaton now forces is written in behind it
(prefilled, never re-masked, not a model decision). The walk goes on past that text in the
same forward only where the model's own proposals for it were that same text: then the
proposals after it were made with the same layout the canvas now has, as in unscaffolded
decoding; where they differ, the next forward reads the scaffold's text first.

A backend whose blocks may start anywhere (`slides_blocks`: Sprout-BD weights trained with
blocks at every phase of a reply) gets sliding blocks instead of the grid: each forward
denoises block_size positions from the cursor, the text decided since the last forward
committed in the same pass (`_sliding`). On the grid a confident walk ends at the block's
line and the scaffold's fixed text fills part of each block; a window at the cursor always
holds block_size positions still to decide or prefilled. Weights trained on the grid alone
must not slide: their noisy blocks always began on a reply's grid line, and a block that starts
elsewhere is out of what they learned (models/README.md, "Sprout-BD on the broadened grammar").

Why left to right and cut at the terminator, not a slot of fixed width with a filler: Sprout
never saw gaps or fillers in training. A value of unknown length has no place for the text
after it until the model closes it (its `","` or `"}}` token), so that text is placed as soon
as the model has written the token that closes the value; slots of known width (a one-digit
quantity) need no wait, the automaton forces their closing text at once (models/README.md,
"scaffolded decoding").
"""

from __future__ import annotations

from collections.abc import Generator

import torch

from engine.blocks import block_slices
from engine.errors import BackendError, ConfigError
from engine.metrics import ModelClock
from engine.result import summarize
from engine.scaffold import machine
from engine.scaffold.target import STUCK, Target, target_for
from engine.scaffold.tokens import Pieces, choose, pieces_for
from engine.tool_calls import ToolCalls
from engine.trace import Frame, GenerationConfig, Result


class Writer:
    """The canvas seen through the scaffold: cursor, automaton state, prefilled positions."""

    def __init__(self, canvas: torch.Tensor, target: Target, pieces: Pieces, mask_id: int, length: int) -> None:
        self.canvas, self.pieces, self.mask_id = canvas, pieces, mask_id        # canvas (1, L), written in place
        # the answer's room: aligned blocks run the canvas past gen_length, and the answer is cut there
        self.length = min(length, canvas.shape[1])
        self.target = target
        self.state = machine.start(target.shape)
        self.cursor = 0
        self.prefilled: set[int] = set()
        self.ended = False                                                     # EOS written
        self.stuck = False                                                     # no token could go on
        self.text: list[str] = []                                              # the answer's characters

    @property
    def over(self) -> bool:
        """Nothing is left to decide: EOS written, no token could go on, or the room is full."""
        return self.ended or self.stuck or self.cursor >= self.length

    def place_forced(self) -> list[int]:
        """Write the text the automaton forces now (and EOS once the value is finished); returns
        the positions written."""
        written: list[int] = []
        if self.ended:
            return written
        forced = machine.placeable(self.state)
        if forced:
            ids = self.pieces.encode(forced)
            room = min(len(ids), self.length - self.cursor)
            for token in ids[:room]:
                self.canvas[0, self.cursor] = token
                written.append(self.cursor)
                self.cursor += 1
            if room < len(ids):                                                # out of canvas: the check says so
                self.prefilled.update(written)
                return written
            self.state = machine.advance(self.state, forced)
            self.text.append(forced)
        if machine.finished(self.state):
            written += self.end()
        self.prefilled.update(written)
        return written

    def end(self) -> list[int]:
        """EOS at the cursor and after it: the answer is over."""
        positions = list(range(self.cursor, self.canvas.shape[1]))
        self.canvas[0, self.cursor:] = self.pieces.eos_id
        self.cursor, self.ended = self.canvas.shape[1], True
        return positions

    def commit(self, position: int, token: int, after: machine.State) -> None:
        self.canvas[0, position] = token
        self.cursor = position + 1
        if token == self.pieces.eos_id:
            self.canvas[0, self.cursor:] = token
            self.prefilled.update(range(self.cursor, self.canvas.shape[1]))
            self.cursor, self.ended = self.canvas.shape[1], True
            return
        self.state = after
        self.text.append(self.pieces.text[token])

    def walk(self, logits: torch.Tensor, block: slice, config: GenerationConfig,
             generator: torch.Generator) -> list[tuple[int, int, float]]:
        """One forward's decisions over `block` (logits (B, V) for its positions)."""
        committed: list[tuple[int, int, float]] = []
        bar = min(config.threshold, config.scaffold_threshold)                 # GenerationConfig says why
        aligned = True                                                         # proposals so far match the canvas
        while not self.ended and block.start <= self.cursor < min(block.stop, self.length):
            position = self.cursor
            chosen = choose(self.state, logits[position - block.start], self.pieces, config.temperature, generator,
                            room=self.length - position - 1)
            if chosen is None:
                self.stuck = True
                break
            token, conf, after = chosen
            if committed and (not aligned or conf < bar):
                break
            self.commit(position, token, after)
            committed.append((position, token, conf))
            for placed in self.place_forced():
                if placed < block.stop and int(logits[placed - block.start].argmax()) != int(self.canvas[0, placed]):
                    aligned = False
        return committed

    def problem(self) -> str:
        if self.stuck:
            return STUCK
        return self.target.problem("".join(self.text), self.ended)


@torch.inference_mode()
def _prefill(backend, prompt: list[int], config: GenerationConfig) -> None:
    ids = torch.tensor([prompt], dtype=torch.long, device=backend.device)         # (1, P)
    if config.aligned_blocks:
        backend.prefill(ids, block_size=config.block_size)
    else:
        backend.prefill(ids)


def _no_mask(logits: torch.Tensor, mask_id: int) -> torch.Tensor:
    """(n, V) logits with the mask token out of reach: a position is never decided as a mask."""
    logits = logits.clone()
    logits[:, mask_id] = float("-inf")
    return logits


def _leave_blocks(backend, canvas: torch.Tensor, blocks: list[slice], b: int, writer: Writer) -> int:
    """Commit every block the cursor has left, in order (the next denoise reads them from the
    cache; nothing does once the answer is over); returns the block the cursor is in.

    Nothing reads the cache between a commit and the next denoise, so a backend that fuses the
    two (Sprout) spends one pass on both. Deciding a block's first position from a logit-shifted
    model's known next-token logits before that denoise would save the denoise only where the
    decision settles the block, and makes the commit run alone everywhere else: measured, 2.5 %
    fewer denoises for a third more passes (models/README.md, "every model pass counted")."""
    while not writer.over and writer.cursor >= blocks[b].stop:
        with torch.inference_mode():
            backend.commit(canvas, blocks[b])
        b += 1
    return b


def generate_scaffolded(backend, prompt: list[int], config: GenerationConfig,
                        tools: ToolCalls | None = None) -> Generator[Frame, None, Result]:
    """Frames of one scaffolded diffusion generation (one per forward); returns the Result, its
    `schema_error` saying why the answer does not follow the target, if it does not."""

    if config.sub_block_size or config.greedy_first_token:
        raise ConfigError("Scaffolded decoding writes left to right from the first masked position: turn sub-blocks "
                          "and the greedy first token off.")
    target = target_for(config, tools)
    pieces = pieces_for(backend)
    clock = ModelClock()
    generator = torch.Generator().manual_seed(config.seed)
    blocks = block_slices(len(prompt), config)
    _prefill(backend, prompt, config)
    canvas = torch.full((1, blocks[-1].stop), backend.mask_id, dtype=torch.long, device=backend.device)  # (1, L)
    writer = Writer(canvas, target, pieces, backend.mask_id, config.gen_length)
    writer.place_forced()
    slides = backend.slides_blocks and not config.aligned_blocks
    loop = _sliding(backend, canvas, writer, config, generator, clock) if slides else \
        _on_grid(backend, canvas, blocks, writer, config, generator, clock)
    frames = yield from loop
    if not frames:                                                             # the schema left nothing to decide
        frames.append(Frame(nfe=0, block=0, round=0, committed=[], canvas=canvas[0].tolist(),
                            elapsed_s=clock.elapsed(), prefilled=sorted(writer.prefilled)))
        yield frames[-1]
    result = summarize(backend, frames, clock.wall(), "eos" if writer.ended else "length", config.gen_length)
    result.schema_error = writer.problem()
    return result


def _denoise(backend, canvas: torch.Tensor, block: slice) -> torch.Tensor:
    """The backend's logits (W, V) for the block's positions, the mask token out of reach."""
    logits = backend.denoise(canvas, block)                                    # (1, W, V)
    width = block.stop - block.start
    if logits.ndim != 3 or logits.shape[:2] != (1, width):
        raise BackendError(f"{backend.name} returned logits of shape {tuple(logits.shape)} for a block "
                           f"of {width}; expected (1, {width}, vocab).")
    return _no_mask(logits[0], backend.mask_id)


def _on_grid(backend, canvas: torch.Tensor, blocks: list[slice], writer: Writer, config: GenerationConfig,
             generator: torch.Generator, clock: ModelClock) -> Generator[Frame, None, list[Frame]]:
    """The loop over the fixed blocks: each forward denoises the block the cursor is in."""
    frames: list[Frame] = []
    b = _leave_blocks(backend, canvas, blocks, 0, writer)                     # the prefix may fill whole blocks
    round_index = 0
    while not writer.over:
        with torch.inference_mode():
            committed = writer.walk(_denoise(backend, canvas, blocks[b]), blocks[b], config, generator)
        reached = _leave_blocks(backend, canvas, blocks, b, writer)
        frames.append(Frame(nfe=len(frames) + 1, block=b, round=round_index, committed=committed,
                            canvas=canvas[0].tolist(), elapsed_s=clock.elapsed(), prefilled=sorted(writer.prefilled)))
        with clock.paused():
            yield frames[-1]
        round_index = round_index + 1 if reached == b else 0
        b = reached
    return frames


def _sliding(backend, canvas: torch.Tensor, writer: Writer, config: GenerationConfig, generator: torch.Generator,
             clock: ModelClock) -> Generator[Frame, None, list[Frame]]:
    """The loop for a backend whose blocks may start anywhere (`slides_blocks`): every forward
    denoises the block_size positions from the cursor, the text decided since the last one
    committed to the cache in the same pass. A fixed grid of blocks ends a forward's walk at the
    grid line however confident the model is past it, and the scaffold's fixed text fills a
    good part of each block; a window that starts at the cursor always holds block_size
    undecided or prefilled positions."""
    size = config.block_size
    frames: list[Frame] = []
    cached = 0                                                                 # canvas positions in the cache
    round_index, last_block = 0, -1
    while not writer.over:
        with torch.inference_mode():
            # the first window starts at 0, the scaffold's opening text prefilled in it as on the
            # grid, unless that text fills it (then the text waits with the prompt's last piece)
            if writer.cursor > cached and (frames or writer.cursor >= size):
                backend.commit(canvas, slice(cached, writer.cursor))           # runs inside the next denoise
                cached = writer.cursor
            window = slice(cached, min(cached + size, canvas.shape[1]))
            committed = writer.walk(_denoise(backend, canvas, window), window, config, generator)
        block = window.start // size                           # the grid block it starts in, for the view
        round_index = round_index + 1 if block == last_block else 0
        last_block = block
        frames.append(Frame(nfe=len(frames) + 1, block=block, round=round_index, committed=committed,
                            canvas=canvas[0].tolist(), elapsed_s=clock.elapsed(), prefilled=sorted(writer.prefilled)))
        with clock.paused():
            yield frames[-1]
    return frames
