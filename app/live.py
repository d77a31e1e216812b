"""One generation as the UI sees it: frames arriving (live) or read back (replay), drawn as the
token grid with a header of where the run stands. Also the escaping of model text for chat.

The header's mode says what the person is looking at: "● live" while the model still computes
(and how many forwards it is ahead of the display), "replay" once it is done and the display
shows finished work at its pace, "finished" / "stopped" at the end. A forward drawn in parts
(visualizer/parts.py) says "part i/n of one forward", never "round". The readout's numbers say
their scope: this generation, and which generation of the turn it is (engine/metrics.py).

Everything drawn here comes from frames through `visualizer.render_grid`, which escapes every
token; the header holds numbers and our own words only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from engine.metrics import Ends, scope_label
from engine.result import pieces_of, shown_ids
from engine.trace import Frame, GenerationConfig, Result, Stats, block_size_of
from visualizer import commits_per_forward, decision_heatmap, render_grid
from visualizer.escape import markdown_text
from visualizer.parts import forward_parts, part_count

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
    generation: int = 0              # which generation of its turn this is (1-based; 0 = the only one)
    generations: int = 0             # how many the turn had, once it is over (0 = not known yet)
    within: str = "turn"             # what the generations make up: a "turn", or an agent "episode"

    @classmethod
    def for_run(cls, backend: Any, config: GenerationConfig, model: str, prompt: str, generation: int = 0
                ) -> TraceView:
        diffusion = backend.kind == "diffusion"
        mask_id = backend.mask_id if diffusion else None
        return cls(frames=[], pieces={}, mask_id=mask_id,
                   gen_length=config.gen_length,
                   block_size=block_size_of(mask_id, config.block_size, backend.uniform_noise),
                   steps=config.steps if diffusion else None, kind=backend.kind, config=config, model=model,
                   prompt=prompt, ends=Ends.of(backend, config.gen_length), generation=generation)

    @classmethod
    def from_result(cls, result: Result, config: GenerationConfig | dict[str, Any] | None, model: str = "",
                    prompt: str = "") -> TraceView:
        """A stored generation: AR runs are the ones without a mask id and without noise."""
        cfg = config.to_dict() if isinstance(config, GenerationConfig) else dict(config or {})
        diffusion = result.mask_id is not None or result.uniform_noise
        canvas_length = max((len(f.canvas) for f in result.frames), default=len(result.token_ids))
        gen_length = int(cfg.get("gen_length") or canvas_length or 1)
        block_size = block_size_of(result.mask_id, int(cfg.get("block_size") or gen_length), result.uniform_noise)
        return cls(frames=list(result.frames), pieces=dict(result.pieces), mask_id=result.mask_id,
                   gen_length=gen_length, block_size=block_size,
                   steps=cfg.get("steps") if diffusion else None,
                   kind="diffusion" if diffusion else "autoregressive", stats=result.stats, result=result,
                   config=config, model=model, prompt=prompt,
                   ends=Ends.of_result(result, gen_length))

    # -- live ---------------------------------------------------------------------------------
    def add(self, frame: Frame, backend: Any) -> None:
        self.frames.append(frame)
        self.pieces.update(pieces_of(backend, shown_ids(frame), self.pieces))

    def finish(self, result: Result) -> None:
        self.result, self.stats = result, result.stats
        self.frames = list(result.frames)
        self.pieces.update(result.pieces)
        if result.eos_ids or self.ends is None:
            self.ends = Ends.of_result(result, self.gen_length)

    def partial_text(self, backend: Any) -> str:
        """The answer decided so far: up to the first EOS, masks and pad left out."""
        if not self.frames:
            return ""
        ends = self.ends or Ends.of(backend, self.gen_length)
        return backend.decode(ends.answer_ids(self.frames[-1].canvas))

    # -- drawing ------------------------------------------------------------------------------
    def part_count(self, frame: Frame) -> int:
        """In how many parts a paced display draws `frame` (visualizer/parts.py)."""
        return part_count(frame, self.mask_id, self.gen_length, self.block_size)

    def scope(self) -> str:
        """What the readout's numbers cover: this generation, and its place in the turn."""
        return scope_label("generation", index=self.generation, of=self.generations, within=self.within)

    def panel(self, mode: str = "live", upto: int | None = None, part: tuple[int, int] | None = None,
              behind: int = 0) -> str:
        """The header (where the run stands) and the token grid after frame `upto` (default: last).
        `part` = (i, n): the last frame drawn in n parts, up to part i. `behind`: frames the model
        has computed that the display has not reached."""
        index = len(self.frames) - 1 if upto is None else max(0, min(int(upto), len(self.frames) - 1))
        frame = self.frames[index] if self.frames else None
        last = frame is not None and index == len(self.frames) - 1
        frames = self.frames[: index + 1]
        if frame is not None and part is not None and part[1] > 1 and part[0] < part[1]:
            previous = frames[-2].canvas if len(frames) > 1 else None        # None: all masked before it
            frames = [*frames[:-1], forward_parts(frame, previous, self.mask_id, self.gen_length,
                                                  self.block_size)[part[0] - 1]]
            last = False
        grid = render_grid(frames, self.pieces, self.mask_id, self.gen_length, self.block_size,
                           upto=len(frames) - 1 if frames else None, stats=self.stats if last else None,
                           ends=self.ends, scope=self.scope())
        head = self._header(frame, index, mode, part, behind)
        # tabindex: the panel scrolls inside its fixed height (app/css.py), so a keyboard must reach it
        return str(Markup('<div class="dp-panel" tabindex="0" data-mode="{}" data-generation="{}" data-block="{}" '
                          'data-part="{}">{}{}</div>').format(
            mode, self.generation or 1, frame.block if frame is not None else -1,
            f"{part[0]}/{part[1]}" if part else "1/1", head, Markup(grid)))

    def before_first_forward(self, mode: str = "replay") -> str:
        """Round 0 of a replay: the header and every cell still masked."""
        grid = render_grid([], self.pieces, self.mask_id, self.gen_length, self.block_size, ends=self.ends,
                           scope=self.scope())
        return str(Markup('<div class="dp-panel" tabindex="0" data-mode="{}" data-generation="{}" data-block="-1" '
                          'data-part="1/1">{}{}</div>').format(mode, self.generation or 1,
                                                               self._header(None, -1, mode), Markup(grid)))

    def _header(self, frame: Frame | None, index: int, mode: str, part: tuple[int, int] | None = None,
                behind: int = 0) -> Markup:
        items = [MODES.get(mode, mode)]
        if mode == "replay" and behind:
            items.append(f"computing finished; {behind} more forward(s) to show")
        elif mode == "live" and behind:
            items.append(f"the model is {behind} forward(s) ahead")
        if frame is not None:
            blocks = max(1, -(-self.gen_length // self.block_size))
            if frame.noise is not None:          # a uniform-noise canvas: steps of a canvas, no rounds of a block
                items += [f"step {frame.round + 1}/{self.steps or '?'}", f"canvas {frame.block + 1}/{blocks}"]
            elif self.kind == "diffusion":
                items += [f"round {frame.round + 1}/{self.steps or '?'}", f"block {frame.block + 1}/{blocks}"]
                if part is not None and part[1] > 1:
                    # not a model round: one forward's decisions, drawn a few at a time
                    items.append(f"part {part[0]}/{part[1]} of one forward (drawn in parts, surest first)")
            else:
                # AR: the tokens written so far (one per forward, more where a scaffold jumps forward)
                items.append(f"token {len(frame.canvas)}/{self.gen_length}")
            items.append(f"frame {index + 1}/{len(self.frames)}")
        elif mode == "replay":
            items.append("before the first forward")
        if self.model:
            items.append(self.model)
        # Not a live region itself: Gradio replaces this HTML on every update, so the page keeps one
        # persistent live line per panel that copies this head (app/page_script.py); a screen
        # reader hears where the run stands once, not every cell.
        return Markup('<div class="dp-live-head">{}</div>').format(
            Markup(" · ").join(items))

    def plots(self) -> tuple[Any, Any]:
        """(when each token was decided, tokens committed per forward), titled with their scope."""
        heatmap_blocks = self.block_size if self.kind == "diffusion" else self.gen_length
        return (decision_heatmap(self.frames, self.pieces, self.gen_length, heatmap_blocks, scope=self.scope()),
                commits_per_forward(self.frames, self.ends, scope=self.scope()))


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
