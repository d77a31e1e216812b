"""One generation as the UI sees it: frames arriving (live) or read back (replay), drawn as the
token grid with a header of where the run stands. Also the escaping of model text for chat.

Everything drawn here comes from frames through `visualizer.render_grid`, which escapes every
token; the header holds numbers and our own words only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from engine.metrics import Ends
from engine.trace import Frame, GenerationConfig, Result, Stats, block_size_of
from visualizer import commits_per_forward, decision_heatmap, render_grid
from visualizer.escape import markdown_text

MODES = {"live": "● live", "done": "finished", "replay": "replay", "stopped": "stopped"}


@dataclass
class TraceView:
    """A trace and what is needed to draw it; held in gr.State between events."""

    frames: list[Frame]
    pieces: dict[int, str]
    mask_id: int | None
    gen_length: int
    block_size: int                  # positions per Frame.block (engine.trace.block_size_of: 1 for AR)
    steps: int | None                # rounds per block (a cap for threshold-like samplers)
    kind: str                        # "diffusion" or "autoregressive"
    stats: Stats | None = None       # set once the run is over
    result: Result | None = None
    config: GenerationConfig | dict[str, Any] | None = None
    model: str = ""
    prompt: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    ends: Ends | None = None         # EOS / pad / mask ids: what is not answer text (engine/metrics.py)

    @classmethod
    def for_run(cls, backend: Any, config: GenerationConfig, model: str, prompt: str) -> TraceView:
        diffusion = backend.kind == "diffusion"
        mask_id = backend.mask_id if diffusion else None
        return cls(frames=[], pieces={}, mask_id=mask_id,
                   gen_length=config.gen_length, block_size=block_size_of(mask_id, config.block_size),
                   steps=config.steps if diffusion else None, kind=backend.kind, config=config, model=model,
                   prompt=prompt, ends=Ends.of(backend, config.gen_length))

    @classmethod
    def from_result(cls, result: Result, config: GenerationConfig | dict[str, Any] | None, model: str = "",
                    prompt: str = "") -> TraceView:
        """A stored generation: AR runs are the ones without a mask id."""
        cfg = config.to_dict() if isinstance(config, GenerationConfig) else dict(config or {})
        diffusion = result.mask_id is not None
        canvas_length = max((len(f.canvas) for f in result.frames), default=len(result.token_ids))
        gen_length = int(cfg.get("gen_length") or canvas_length or 1)
        block_size = block_size_of(result.mask_id, int(cfg.get("block_size") or gen_length))
        return cls(frames=list(result.frames), pieces=dict(result.pieces), mask_id=result.mask_id,
                   gen_length=gen_length, block_size=block_size,
                   steps=cfg.get("steps") if diffusion else None,
                   kind="diffusion" if diffusion else "autoregressive", stats=result.stats, result=result,
                   config=config, model=model, prompt=prompt,
                   ends=Ends(frozenset(result.eos_ids), result.pad_id, result.mask_id, gen_length))

    # -- live ---------------------------------------------------------------------------------
    def add(self, frame: Frame, backend: Any) -> None:
        self.frames.append(frame)
        for token in set(frame.canvas).difference(self.pieces):
            self.pieces[token] = backend.token_piece(token)

    def finish(self, result: Result) -> None:
        self.result, self.stats = result, result.stats
        self.frames = list(result.frames)
        self.pieces.update(result.pieces)
        if result.eos_ids or self.ends is None:
            self.ends = Ends(frozenset(result.eos_ids), result.pad_id, result.mask_id, self.gen_length)

    def partial_text(self, backend: Any) -> str:
        """The answer decided so far: up to the first EOS, masks and pad left out."""
        if not self.frames:
            return ""
        return backend.decode(Ends.of(backend, self.gen_length).answer_ids(self.frames[-1].canvas))

    # -- drawing ------------------------------------------------------------------------------
    def panel(self, mode: str = "live", upto: int | None = None) -> str:
        """The header (where the run stands) and the token grid after frame `upto` (default: last)."""
        index = len(self.frames) - 1 if upto is None else max(0, min(int(upto), len(self.frames) - 1))
        frame = self.frames[index] if self.frames else None
        last = frame is not None and index == len(self.frames) - 1
        grid = render_grid(self.frames, self.pieces, self.mask_id, self.gen_length, self.block_size,
                           upto=index if self.frames else None, stats=self.stats if last else None, ends=self.ends)
        return str(Markup('<div class="dp-panel" data-mode="{}">{}{}</div>').format(
            mode, self._header(frame, index, mode), Markup(grid)))

    def before_first_forward(self, mode: str = "replay") -> str:
        """Round 0 of a replay: the header and every cell still masked."""
        grid = render_grid([], self.pieces, self.mask_id, self.gen_length, self.block_size, ends=self.ends)
        return str(Markup('<div class="dp-panel" data-mode="{}">{}{}</div>').format(
            mode, self._header(None, -1, mode), Markup(grid)))

    def _header(self, frame: Frame | None, index: int, mode: str) -> Markup:
        items = [MODES.get(mode, mode)]
        if frame is not None:
            blocks = max(1, -(-self.gen_length // self.block_size))
            if self.kind == "diffusion":
                items += [f"round {frame.round + 1}/{self.steps or '?'}", f"block {frame.block + 1}/{blocks}"]
            else:
                # AR: the tokens written so far (one per forward, more where a scaffold jumps forward)
                items.append(f"token {len(frame.canvas)}/{self.gen_length}")
            items.append(f"frame {index + 1}/{len(self.frames)}")
        elif mode == "replay":
            items.append("before the first forward")
        if self.model:
            items.append(self.model)
        # role=status + aria-live: a screen reader hears where the run stands, not every cell.
        return Markup('<div class="dp-live-head" role="status" aria-live="polite">{}</div>').format(
            Markup(" · ").join(items))

    def plots(self) -> tuple[Any, Any]:
        """(when each token was decided, tokens committed per forward)."""
        heatmap_blocks = self.block_size if self.kind == "diffusion" else self.gen_length
        return (decision_heatmap(self.frames, self.pieces, self.gen_length, heatmap_blocks),
                commits_per_forward(self.frames, self.ends))


REPLAY_MS = 300            # the pace of a replay when the pace control says 0 (as fast as it computes)


def replay(trace: TraceView | None, pace_ms: Any, sleep: Callable[[float], None] = time.sleep
           ) -> Iterator[tuple[str, int]]:
    """Play a finished trace again at `pace_ms` per round: (panel html, frame number) from round 0
    (all masked, frame 0) to the last frame. A pace of 0 uses REPLAY_MS: a replay as fast as it
    computed would be over before anyone saw it."""
    if trace is None or not trace.frames:
        return
    delay = (float(pace_ms or 0) or REPLAY_MS) / 1000.0
    yield trace.before_first_forward("replay"), 0
    for index in range(len(trace.frames)):
        sleep(delay)
        last = index == len(trace.frames) - 1
        yield trace.panel("done" if last else "replay", upto=index), index + 1


def markdown_safe(text: str) -> str:
    """Model or user text for a Markdown view (the Chatbot, status lines, the verdict): HTML shown
    as text, images shown as links and never fetched, code literal (visualizer.escape)."""
    return markdown_text(text)
