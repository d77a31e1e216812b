"""Generation: drive a backend with a sampler, yielding one Frame per model forward and
returning a Result (docs/ARCHITECTURE.md, "The one data path"). The command line is engine/cli.py
(`python -m engine.generate` still runs it).

Diffusion (semi-autoregressive block decoding): the generated span is a canvas (1, L) of mask
ids. For each block in order: denoise rounds (one forward each) propose a token per position,
the sampler commits some masked positions, until none is left; then the block is committed to
the backend's cache, unless generation ends with it. Autoregressive: prefill gives logits for
the first token; each step commits one token and feeds it back.

NFE counts the forwards that produce logits for sampling: denoise rounds, or AR prefill +
steps. Diffusion prefill and block commit passes are not counted (as in the LLaDA / Fast-dLLM
papers); for full-attention backends they are no-ops anyway.
"""

from __future__ import annotations

import runpy
import time
from collections.abc import Callable, Generator

import torch

from engine.backends.base import BackendError
from engine.blocks import block_slices
from engine.dream_round import dream_round, follows_dream
from engine.errors import ContextFull
from engine.metrics import ModelClock
from engine.proposals import confidence, propose, transfer_schedule
from engine.remask import remask_choice
from engine.result import summarize
from engine.sampler_table import SAMPLERS
from engine.samplers import select
from engine.tool_calls import ToolCalls
from engine.trace import ConfigError, Frame, GenerationConfig, Result

EOS_FILL_CONFIDENCE = 1.0   # positions filled after an EOS block are "decided" with certainty


def generate(backend, prompt_ids: list[int], config: GenerationConfig,
             tools: ToolCalls | None = None) -> Generator[Frame, None, Result]:
    """Frames of one generation, one per forward; the generator's return value is the Result.

    Checks the prompt and config here, before anything runs, raising ConfigError. The
    generator may be closed at any point (`.close()`), e.g. when a person presses Stop. `tools` are
    the tools the model may call (engine/tool_calls.py): scaffolded tool calls are written from them,
    and a served model is offered them.
    """
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ConfigError("The prompt is empty: give the model at least one token to answer.")
    limit = backend.max_length - config.gen_length
    if limit < 1:
        raise ContextFull(
            f"Generation length {config.gen_length} leaves no room for a prompt in the "
            f"{backend.max_length}-token context of {backend.name}: choose a length below {backend.max_length}."
        )
    if len(prompt) > limit:
        raise ContextFull(
            f"The prompt is {len(prompt)} tokens long, but {backend.name} fits at most {limit} prompt tokens "
            f"when generating {config.gen_length} ({backend.max_length} in all): shorten the prompt "
            f"or the generation length."
        )
    if config.cache not in backend.cache_modes:
        raise ConfigError(cache_refusal(backend, config.cache))
    if backend.remote:                         # served elsewhere (engine/backends/remote.py)
        if config.scaffolded:
            raise ConfigError(f"{backend.name} is served elsewhere, so its canvas cannot be scaffolded here: "
                              "turn scaffolded decoding off or pick a local model.")
        return backend.stream(prompt, config, tools)
    if backend.uniform_noise:                  # random tokens, not masks (engine/noise_canvas.py)
        from engine.noise_canvas import check, generate_noise_canvas

        check(backend, config)
        return generate_noise_canvas(backend, prompt, config)
    if config.scaffolded:                      # fixed text written by the schema, values decoded (engine/scaffold/)
        from engine.scaffold.diffusion import generate_scaffolded
        from engine.scaffold.jump import generate_jump_forward

        return (generate_scaffolded if backend.kind == "diffusion" else generate_jump_forward)(backend, prompt, config,
                                                                                               tools)
    if backend.kind == "diffusion":
        return _diffusion(backend, prompt, config)
    if backend.kind == "autoregressive":
        return _autoregressive(backend, prompt, config)
    raise BackendError(f"Backend {backend.name} has kind {backend.kind!r}; expected diffusion or autoregressive.")


def cache_refusal(backend, cache: str) -> str:
    """Why `backend` cannot decode with the `cache` cache, as a sentence."""
    if backend.kind != "diffusion" or not backend.windowed_cache:
        return (f"{backend.name} cannot use the {cache} cache: only full-attention diffusion models (LLaDA, "
                f"Dream) can; it decodes another way (keeping its own cache where it has one). Set cache to none.")
    return (f"{backend.name} cannot use the {cache} cache: its forward takes no keys and values to reuse. "
            f"Set cache to none.")


def until_stopped(backend, prompt_ids: list[int], config: GenerationConfig,
                  should_stop: Callable[[], bool] | None = None,
                  tools: ToolCalls | None = None) -> Generator[Frame, None, Result]:
    """`generate`, asking should_stop() after each frame: once it turns true the generation is
    closed there and its Result is the partial one (stop_reason "cancelled"), built here from the
    frames decided so far, so no caller rebuilds it. A Stop between frames costs no forward: the
    question is asked as soon as the consumer comes back for the next frame."""
    started = time.perf_counter()
    frames = generate(backend, prompt_ids, config, tools)
    seen: list[Frame] = []
    while True:
        try:
            frame = next(frames)
        except StopIteration as done:
            return done.value
        seen.append(frame)
        yield frame
        if should_stop is not None and should_stop():
            frames.close()
            return summarize(backend, seen, time.perf_counter() - started, "cancelled", config.gen_length)


def run(
    backend, prompt_ids: list[int], config: GenerationConfig,
    on_frame: Callable[[Frame], None] | None = None, should_stop: Callable[[], bool] | None = None,
    tools: ToolCalls | None = None,
) -> Result:
    """Drive `generate` to the end, calling on_frame(frame) for each frame. When should_stop()
    turns true after a frame, stop there and return the partial Result (stop_reason "cancelled")."""
    frames = until_stopped(backend, prompt_ids, config, should_stop, tools)
    while True:
        try:
            frame = next(frames)
        except StopIteration as done:
            return done.value
        if on_frame is not None:
            on_frame(frame)


# --------------------------------------------------------------------------- diffusion

@torch.inference_mode()
def _start_canvas(backend, prompt: list[int], length: int, aligned_to: int | None = None,
                  cache: str = "none") -> torch.Tensor:
    ids = torch.tensor([prompt], dtype=torch.long, device=backend.device)     # (1, P)
    if aligned_to:
        backend.prefill(ids, block_size=aligned_to)
    elif cache != "none":
        backend.prefill(ids, cache=cache)
    else:
        backend.prefill(ids)
    return torch.full((1, length), backend.mask_id, dtype=torch.long, device=backend.device)  # (1, L)


def _window(canvas: torch.Tensor, block: slice, config: GenerationConfig, mask_id: int) -> slice | None:
    """The leftmost sub-block of `block` that still holds a mask (Fast-dLLM v2 decodes them left
    to right), or None without sub-blocks. Sub-blocks tile the whole aligned block, the prompt's
    tail included, from its absolute start block.stop - block_size."""
    size = config.sub_block_size
    if size <= 0:
        return None
    origin = block.stop - config.block_size
    for start in range(origin, block.stop, size):
        window = slice(max(start, block.start), min(start + size, block.stop))
        if window.start < window.stop and bool((canvas[0, window] == mask_id).any()):
            return window
    return None


@torch.inference_mode()
def _greedy_first_token(backend, canvas: torch.Tensor, position: int) -> list[tuple[int, int, float]]:
    """Fast-dLLM v2: the next block's first token is the argmax of the forward that stored the
    previous one (or the prompt), committed before that block is denoised."""
    logits = backend.next_logits                                               # (1, V)
    probs = torch.softmax(logits[0].float(), -1)
    token = int(probs.argmax())
    canvas[0, position] = token
    return [(position, token, float(probs[token]))]


@torch.inference_mode()
def _score_row(config: GenerationConfig, prompt_length: int, length: int, block: slice, span: slice,
               round_index: int) -> tuple[int, int]:
    """Where the span sits in the row upstream ranks with torch.topk, and the row's length: prompt
    + canvas, except in a cached round (not a block's first), where Fast-dLLM ranks over what that
    forward fed: the block and the suffix (prefix cache) or the block alone (dual cache). Only
    exact ties between confidences see the difference."""
    if config.cache == "none" or round_index == 0:
        return prompt_length + span.start, prompt_length + length
    end = length if config.cache == "prefix" else block.stop
    return span.start - block.start, end - block.start


@torch.inference_mode()
def _denoise_round(backend, canvas: torch.Tensor, block: slice, config: GenerationConfig, round_index: int,
                   schedule: list[int], generator: torch.Generator, window: slice | None = None,
                   prompt_length: int = 0) -> list[tuple[int, int, float]]:
    """One forward over the block; writes the chosen proposals into the canvas in place. With a
    `window` (a sub-block), only its positions are proposed and may be chosen. Dream's loop
    (engine/dream_round.py) proposes and chooses its own way, over prompt + canvas."""
    logits = backend.denoise(canvas, block)                                    # (1, B, V)
    width = block.stop - block.start
    if logits.ndim != 3 or logits.shape[:2] != (1, width):
        raise BackendError(f"{backend.name} returned logits of shape {tuple(logits.shape)} for a block of "
                           f"{width}; expected (1, {width}, vocab).")
    rows = slice(None) if window is None else slice(window.start - block.start, window.stop - block.start)
    logits = logits[0, rows]                                                   # (B, V), or the window's rows
    if not config.keep_mask_logit:                                             # ours: the mask has no share at all
        logits = logits.clone()
        logits[:, backend.mask_id] = float("-inf")
    span = block if window is None else window                                 # upstream samples only the window
    current = canvas[0, span]                                                  # view
    masked = current == backend.mask_id
    # Never propose the mask itself: upstream could, and the position would stay masked (a
    # threshold loop at T = 0 would then never end); trained models give it ~0 anyway.
    if follows_dream(config):
        chosen, tokens, conf = dream_round(
            logits, masked, config, round_index, generator, dtype=backend.logits_dtype,
            offset=prompt_length + span.start, length=prompt_length + canvas.shape[1], never=backend.mask_id)
    else:
        dtype = backend.logits_dtype if config.model_dtype_probs else None
        tokens, probs = propose(logits, config.temperature, config.top_p, config.top_k, generator,
                                untempered_confidence=config.untempered_confidence, never=backend.mask_id,
                                dtype=dtype)
        chosen = select(config, probs, tokens, masked, round_index, schedule, generator,
                        row=_score_row(config, prompt_length, canvas.shape[1], block, span, round_index),
                        current=current.clone())
        conf = confidence(probs, tokens)                                       # c_i = p_i[x_i]
    picked = chosen.nonzero()[:, 0]                                            # (n,) positions in the span
    toks = tokens[picked]
    current[picked] = toks
    confs = conf[picked]
    return [(span.start + i, t, c) for i, t, c in zip(picked.tolist(), toks.tolist(), confs.tolist())]


@torch.inference_mode()
def _finish_block(backend, canvas: torch.Tensor, block: slice, stop_on_eos: bool) -> int | None:
    """With stop_on_eos and an EOS id in the block, fill every later position with that (first)
    EOS id and return it; otherwise return None. The block is committed to the cache only when
    a later block will be denoised: the commit pass costs about one forward, and nothing reads
    the cache after the last block."""
    eos = next((t for t in canvas[0, block].tolist() if t in backend.eos_ids), None)
    if stop_on_eos and eos is not None:
        canvas[0, block.stop:] = eos
        return eos
    if block.stop < canvas.shape[1]:
        backend.commit(canvas, block)
    return None


def _rewrites(committed: list[tuple[int, int, float]], decided: dict[int, int]) -> list[tuple[int, int, int]]:
    """(position, old, new) for each commit that replaces the position's last decided token with
    another (an edit, or a remasked position decoded differently); records the new tokens."""
    edits = [(p, decided[p], t) for p, t, _c in committed if p in decided and decided[p] != t]
    decided.update((p, t) for p, t, _c in committed)
    return edits


@torch.inference_mode()
def _remask(canvas: torch.Tensor, block: slice, config: GenerationConfig, psi: torch.Tensor,
            committed: list[tuple[int, int, float]], rounds_left: int, mask_id: int) -> list[int]:
    """Put back to the mask what the remasking schedule picks in this block (engine/remask.py)."""
    fresh = torch.zeros(block.stop - block.start, dtype=torch.bool)
    fresh[[p - block.start for p, _t, _c in committed if block.start <= p < block.stop]] = True
    decided = (canvas[0, block] != mask_id).cpu()
    picked = remask_choice(config.remask, psi[block], decided, fresh, config.remask_count, rounds_left)
    positions = [block.start + int(i) for i in picked]
    canvas[0, positions] = mask_id
    return positions


def _diffusion(backend, prompt: list[int], config: GenerationConfig) -> Generator[Frame, None, Result]:
    clock = ModelClock()
    generator = torch.Generator().manual_seed(config.seed)
    if config.aligned_blocks and not backend.supports_aligned_blocks:
        raise ConfigError(f"{backend.name} cannot align blocks to the prompt (only block-causal models can): "
                          f"turn aligned blocks off.")
    blocks = block_slices(len(prompt), config)
    canvas = _start_canvas(backend, prompt, blocks[-1].stop, config.block_size if config.aligned_blocks else None,
                           config.cache)
    mask_id = backend.mask_id
    schedule = transfer_schedule(config.block_size, config.steps)             # over a whole block, as SDAR
    frames: list[Frame] = []
    stop_reason = "length"
    # Fast-dLLM v2 takes the first token from the prefill only when the prompt fills whole blocks.
    first_token = (config.greedy_first_token and config.aligned_blocks and len(prompt) > config.block_size
                   and len(prompt) % config.block_size == 0)
    pending = _greedy_first_token(backend, canvas, 0) if first_token else []
    edit_rule = SAMPLERS[config.sampler].edits
    decided: dict[int, int] = {}                                               # position -> its last decided token
    psi = torch.ones(canvas.shape[1], dtype=torch.float64)                     # confidence at the last decision
    for b, block in enumerate(blocks):
        round_index = post_rounds = remask_rounds = 0
        while True:
            started_full = not bool((canvas[0, block] == mask_id).any())
            post_rounds += started_full                                        # LLaDA2.1's post steps
            window = _window(canvas, block, config, mask_id)
            committed = pending + _denoise_round(backend, canvas, block, config, round_index, schedule, generator,
                                                 window, len(prompt))
            pending = []
            edits = _rewrites(committed, decided)
            for position, _token, conf in committed:
                psi[position] = conf
            remasked = _remask(canvas, block, config, psi, committed, config.remask_rounds - remask_rounds, mask_id)
            remask_rounds += bool(remasked)
            full = not bool((canvas[0, block] == mask_id).any())
            # An edit rule goes on after the block is full, up to max_post_steps rounds, until a
            # round that began full rewrites nothing (LLaDA2.1's generate).
            done = full and (not edit_rule or (started_full and not edits)
                             or post_rounds + 1 > config.max_post_steps)
            if done:
                eos = _finish_block(backend, canvas, block, config.stop_on_eos)
                if eos is not None:                                            # the rest is EOS: decided now
                    stop_reason = "eos"
                    committed += [(p, eos, EOS_FILL_CONFIDENCE) for p in range(block.stop, canvas.shape[1])]
                elif config.greedy_first_token and b + 1 < len(blocks):
                    committed += _greedy_first_token(backend, canvas, blocks[b + 1].start)
            frame = Frame(nfe=len(frames) + 1, block=b, round=round_index, committed=committed,
                          canvas=canvas[0].tolist(), elapsed_s=clock.elapsed(), edits=edits, remasked=remasked)
            frames.append(frame)
            with clock.paused():                                               # the consumer's time is not the model's
                yield frame
            if done:
                break
            round_index += 1
        if stop_reason == "eos":
            break
    return summarize(backend, frames, clock.wall(), stop_reason, config.gen_length)


# --------------------------------------------------------------------------- autoregressive

@torch.inference_mode()
def _ar_prefill(backend, prompt: list[int]) -> torch.Tensor:
    return backend.prefill(torch.tensor([prompt], dtype=torch.long, device=backend.device))   # (1, V)


@torch.inference_mode()
def _ar_step(backend, token: int) -> torch.Tensor:
    return backend.step(token)                                                 # (1, V)


@torch.inference_mode()
def _ar_propose(logits: torch.Tensor, config: GenerationConfig, generator: torch.Generator) -> tuple[int, float]:
    tokens, probs = propose(logits.reshape(1, -1), config.temperature, config.top_p, config.top_k, generator)
    return int(tokens[0]), float(confidence(probs, tokens)[0])


def _autoregressive(backend, prompt: list[int], config: GenerationConfig) -> Generator[Frame, None, Result]:
    clock = ModelClock()
    generator = torch.Generator().manual_seed(config.seed)
    logits = _ar_prefill(backend, prompt)
    span: list[int] = []                                                       # AR canvas: decided tokens only
    frames: list[Frame] = []
    stop_reason = "length"
    for i in range(config.gen_length):
        token, conf = _ar_propose(logits, config, generator)
        span.append(token)
        # Each token is its own block of one, decided in one round (engine.trace.block_size_of).
        frame = Frame(nfe=i + 1, block=i, round=0, committed=[(i, token, conf)], canvas=list(span),
                      elapsed_s=clock.elapsed())
        frames.append(frame)
        with clock.paused():
            yield frame
        if config.stop_on_eos and token in backend.eos_ids:
            stop_reason = "eos"
            break
        if i + 1 < config.gen_length:
            logits = _ar_step(backend, token)
    return summarize(backend, frames, clock.wall(), stop_reason, config.gen_length)


if __name__ == "__main__":   # the CLI is engine/cli.py; this name keeps working (run, not imported: no cycle)
    runpy.run_module("engine.cli", run_name="__main__", alter_sys=True)
