"""Compact, lossless JSON for a generation's frames (one row per generation, see store.py).

Every Frame carries the whole canvas, so storing it verbatim costs O(frames x length): an
AR run of 512 tokens would write 512 canvases of 512 ids. Consecutive canvases differ only
where the forward committed, so each frame stores its canvas length and the (position, id)
pairs that changed since the previous frame. Decoding replays the changes and gives back the
exact canvases, whatever the sampler did (EOS fill, remasking), because the diff is taken
against the real previous canvas, not derived from `committed`.

Layout: {"v": 1, "frames": [[nfe, block, round, elapsed_s, committed, canvas_len, changes], ...]}
with committed = [[position, token, confidence], ...] and changes = [[position, token], ...].
A scaffolded generation (Frame.prefilled, cumulative and sorted) is written as version 2: each row
ends with the positions the scaffold placed since the previous frame, so an older playground says
it cannot read it instead of dropping them; unscaffolded frames stay version 1. A generation
that rewrote tokens (Frame.edits, Frame.remasked) is version 3: each row ends with the newly
placed positions, the edits [[position, old, new], ...] and the remasked positions. A uniform-noise
generation (Frame.noise, DiffusionGemma) is version 4: version 3's rows plus the step,
[start, draft, noisy, accepted, changed, temperature, mean_entropy, stop_rule].
"""

from __future__ import annotations

import json
import math
from typing import Any

from engine.json_limits import read_stored
from engine.trace import Frame, NoiseStep

FORMAT_VERSION = 1
PREFILLED_VERSION = 2                 # rows end with the newly pre-filled positions
EDITS_VERSION = 3                     # rows end with newly pre-filled positions, edits, remasked
NOISE_VERSION = 4                     # version 3's rows, then the uniform-noise step
VERSIONS = (FORMAT_VERSION, PREFILLED_VERSION, EDITS_VERSION, NOISE_VERSION)


class FrameCodecError(ValueError):
    """Stored frame data that this version cannot read."""


def _number(value: float) -> float | None:
    # JSON has no NaN/Infinity; a non-finite confidence or time is stored as null.
    return value if math.isfinite(value) else None


def encode_frames(frames: list[Frame]) -> str:
    previous: list[int] = []
    placed: set[int] = set()
    scaffolded = any(frame.prefilled for frame in frames)
    noisy = any(frame.noise is not None for frame in frames)
    rewrote = noisy or any(frame.edits or frame.remasked for frame in frames)
    rows: list[list[Any]] = []
    for frame in frames:
        canvas = frame.canvas
        changes = [[p, t] for p, t in enumerate(canvas) if p >= len(previous) or previous[p] != t]
        rows.append([
            frame.nfe, frame.block, frame.round, _number(float(frame.elapsed_s)),
            [[int(p), int(t), _number(float(c))] for p, t, c in frame.committed],
            len(canvas), changes,
        ])
        if scaffolded or rewrote:
            rows[-1].append(sorted(int(p) for p in set(frame.prefilled) - placed))
            placed.update(frame.prefilled)
        if rewrote:
            rows[-1].append([[int(p), int(old), int(new)] for p, old, new in frame.edits])
            rows[-1].append([int(p) for p in frame.remasked])
        if noisy:
            step = frame.noise
            rows[-1].append(None if step is None else [
                step.start, step.draft, step.noisy, step.accepted, step.changed, _number(step.temperature),
                _number(step.mean_entropy), step.stop_rule])
        previous = canvas
    version = (NOISE_VERSION if noisy else EDITS_VERSION if rewrote else PREFILLED_VERSION if scaffolded
               else FORMAT_VERSION)
    return json.dumps({"v": version, "frames": rows}, separators=(",", ":"))


def decode_frames(data: str) -> list[Frame]:
    payload = read_stored(data)
    if not isinstance(payload, dict) or payload.get("v") not in VERSIONS:
        version = payload.get("v") if isinstance(payload, dict) else None
        raise FrameCodecError(
            f"Stored frames use format version {version!r}; this version of the playground reads versions "
            f"{', '.join(map(str, VERSIONS[:-1]))} and {VERSIONS[-1]}. Upgrade the playground to replay this turn."
        )
    frames: list[Frame] = []
    canvas: list[int] = []
    placed: set[int] = set()
    for nfe, block, round_, elapsed, committed, canvas_len, changes, *rest in payload["frames"]:
        # Shrinking keeps the prefix; growing leaves slots that `changes` always fills.
        canvas = canvas[:canvas_len] + [0] * max(0, canvas_len - len(canvas))
        for position, token in changes:
            canvas[position] = token
        frames.append(Frame(
            nfe=nfe, block=block, round=round_,
            committed=[(p, t, float("nan") if c is None else c) for p, t, c in committed],
            canvas=list(canvas), elapsed_s=float("nan") if elapsed is None else elapsed,
        ))
        if rest:
            placed.update(rest[0])
            frames[-1].prefilled = sorted(placed)
        if len(rest) >= 3:
            frames[-1].edits = [(p, old, new) for p, old, new in rest[1]]
            frames[-1].remasked = list(rest[2])
        if len(rest) == 4 and rest[3] is not None:
            start, draft, noisy, accepted, changed, temperature, mean_entropy, stop_rule = rest[3]
            frames[-1].noise = NoiseStep(
                start=start, draft=list(draft), noisy=list(noisy), accepted=list(accepted), changed=list(changed),
                temperature=float("nan") if temperature is None else temperature,
                mean_entropy=float("nan") if mean_entropy is None else mean_entropy, stop_rule=stop_rule)
    return frames
