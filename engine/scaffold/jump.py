"""The autoregressive counterpart of scaffolded decoding, jump-forward (as SGLang's constrained
decoding does it): the text the automaton forces is appended in one forward (`extend`), and
each value token is the model's best among those the automaton accepts, the same candidates
the diffusion scaffold uses (engine/scaffold/tokens.py). So the race against block diffusion
compares like with like: neither side spends a forward on text the schema fixes.

Forwards: the prompt and the forced prefix go in as one prefill; after each model token, the
token and the text it forces go in as one `extend` (a `step` when nothing is forced). A backend
without `extend` appends the forced tokens one `step` each, every one counted as a forward.
"""

from __future__ import annotations

from collections.abc import Generator

import torch

from engine.metrics import ModelClock
from engine.result import summarize
from engine.scaffold import machine
from engine.scaffold.target import STUCK, target_for
from engine.scaffold.tokens import choose, pieces_for
from engine.tool_calls import ToolCalls
from engine.trace import Frame, GenerationConfig, Result


@torch.inference_mode()
def _append(backend, ids: list[int]) -> tuple[torch.Tensor, int]:
    """Logits (1, V) after appending ids, and the forwards it took."""
    if len(ids) == 1:
        return backend.step(ids[0]), 1
    if hasattr(backend, "extend"):
        return backend.extend(ids), 1
    for token in ids:
        logits = backend.step(token)
    return logits, len(ids)


def generate_jump_forward(backend, prompt: list[int], config: GenerationConfig,
                          tools: ToolCalls | None = None) -> Generator[Frame, None, Result]:
    """Frames of one scaffolded autoregressive generation, one per forward; the forced text a
    decision leads to is shown in that decision's frame."""

    target = target_for(config, tools)
    pieces = pieces_for(backend)
    clock = ModelClock()
    generator = torch.Generator().manual_seed(config.seed)
    state = machine.start(target.shape)
    span: list[int] = []                                                       # decided tokens only
    prefilled: list[int] = []
    text: list[str] = []

    def place_forced() -> list[int]:
        nonlocal state
        forced = machine.placeable(state)
        if not forced:
            return []
        ids = pieces.encode(forced)
        room = max(0, config.gen_length - len(span))
        prefilled.extend(range(len(span), len(span) + min(room, len(ids))))
        span.extend(ids[:room])
        if len(ids) <= room:                                                   # else out of room: the check says so
            state = machine.advance(state, forced)
            text.append(forced)
        return ids[:room]

    head = place_forced()
    with torch.inference_mode():
        logits = backend.prefill(torch.tensor([prompt + head], dtype=torch.long, device=backend.device))  # (1, V)
    forwards, frames, ended, stuck = 1, [], False, False
    while len(span) < config.gen_length and not ended:
        if machine.finished(state):                                            # the schema left nothing to decide
            prefilled.append(len(span))
            span.append(pieces.eos_id)
            ended = True
            frames.append(Frame(nfe=forwards, block=len(span) - 1, round=0, committed=[], canvas=list(span),
                                elapsed_s=clock.elapsed(), prefilled=sorted(prefilled)))
            yield frames[-1]
            break
        chosen = choose(state, logits.reshape(-1), pieces, config.temperature, generator,
                        room=config.gen_length - len(span) - 1)
        if chosen is None:
            stuck = True
            break
        token, conf, after = chosen
        position = len(span)
        span.append(token)
        if token == pieces.eos_id:
            ended = True
        else:
            state = after
            text.append(pieces.text[token])
        forced = [] if ended else place_forced()
        if not ended and machine.finished(state):                             # EOS if it fits; the answer is whole
            if len(span) < config.gen_length:
                prefilled.append(len(span))
                span.append(pieces.eos_id)
            ended = True
        frame = Frame(nfe=forwards, block=position, round=0, committed=[(position, token, conf)],  # a block of one
                      canvas=list(span), elapsed_s=clock.elapsed(), prefilled=sorted(prefilled))
        frames.append(frame)
        with clock.paused():
            yield frame
        if ended or len(span) >= config.gen_length:
            break
        logits, cost = _append(backend, [token, *forced])
        forwards += cost
    result = summarize(backend, frames, clock.wall(), "eos" if ended else "length", config.gen_length)
    result.schema_error = STUCK if stuck else target.problem("".join(text), ended)
    return result
