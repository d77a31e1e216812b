"""What a stream shows of a generation in progress, from its frames.

Without `diffusing`: the committed text, left to right, i.e. the decoded prefix of the canvas
up to its first undecided position (or its first EOS). Each chunk carries what that prefix
gained since the last one, as any OpenAI stream does.

With `diffusing: true`: the whole canvas of the answer after every round. Decided runs are
decoded as text; each undecided (masked) position is one MASK_GLYPH; the canvas ends at its
first decided EOS. So the glyph count never grows from one round to the next, and the last
canvas is exactly the answer's text. Beside the text, the chunk's `diffusion` field carries
the round (nfe, block, round) and the canvas as token pieces (null where masked), for clients
that draw the grid (the playground's own `openai:` backend does).

A uniform-noise canvas (DiffusionGemma: Frame.noise) has no masks. Its committed text is the
finished canvases only; its diffusing text is the finished canvases then the current step's draft
(the argmax canvas transformers' streamer puts out as the draft), and `diffusion.noise` carries
the step: the draft and the noisy canvas as token pieces, the accepted and changed positions,
temperature, mean entropy and, on a canvas's last step, the rule that ended it.
"""

from __future__ import annotations

from typing import Any

from engine.cli import MASK_GLYPH
from engine.trace import Frame

__all__ = ["MASK_GLYPH", "committed_text", "diffusing_view", "text_delta"]


def _cut(canvas: list[int], eos_ids: frozenset[int]) -> int:
    return next((i for i, t in enumerate(canvas) if t in eos_ids), len(canvas))


def committed_text(backend: Any, frame: Frame) -> str:
    """Text of the decided prefix of the canvas (before the first mask or EOS), pad dropped; of a
    uniform-noise run, the finished canvases (the one being denoised is not decided)."""
    mask_id = backend.mask_id if backend.kind == "diffusion" else None
    decided = frame.noise.start if frame.noise is not None and not frame.noise.stop_rule else len(frame.canvas)
    canvas = frame.canvas[:decided]
    canvas = canvas[:_cut(canvas, backend.eos_ids)]
    end = next((i for i, t in enumerate(canvas) if t == mask_id), len(canvas))
    return backend.decode([t for t in canvas[:end] if t != backend.pad_id])


def text_delta(sent: str, now: str) -> str:
    """What to send after `sent` when the committed text reads `now`; nothing while the last
    character is an incomplete byte sequence or the text changed behind what was sent."""
    if not now.startswith(sent) or now.endswith("\ufffd"):
        return ""
    return now[len(sent):]


def diffusing_view(backend: Any, frame: Frame) -> tuple[str, dict[str, Any]]:
    """(canvas text with MASK_GLYPH per masked position, the `diffusion` extension field)."""
    mask_id = backend.mask_id if backend.kind == "diffusion" else None
    cut = _cut(frame.canvas, backend.eos_ids)
    parts: list[str] = []
    run: list[int] = []
    for token in frame.canvas[:cut]:
        if token == mask_id:
            if run:
                parts.append(backend.decode(run))
                run = []
            parts.append(MASK_GLYPH)
        elif token != backend.pad_id:
            run.append(token)
    if run:
        parts.append(backend.decode(run))
    pieces = [None if t == mask_id else backend.token_piece(t) for t in frame.canvas]
    extension = {"nfe": frame.nfe, "block": frame.block, "round": frame.round, "canvas": pieces,
                 "eos_at": cut if cut < len(frame.canvas) else None, "mask": MASK_GLYPH}
    if frame.noise is not None:
        step = frame.noise
        extension["noise"] = {"start": step.start, "draft": [backend.token_piece(t) for t in step.draft],
                              "noisy": [backend.token_piece(t) for t in step.noisy], "accepted": step.accepted,
                              "changed": step.changed, "temperature": step.temperature,
                              "mean_entropy": step.mean_entropy, "stop_rule": step.stop_rule}
    return "".join(parts), extension
