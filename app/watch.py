"""One watched turn: what Chat, the Agent tab and each Compare lane share between starting a run
(app/runs.py) and drawing it. It owns

- the parts rule: a forward drawn in parts (app/runs.py `Run.events`) reaches the tab's reader
  once, when its first part is read; the later parts only redraw it;
- the steps: each finished step (a tool call, an answer) reaches the tab's reader as it comes;
- the view of each generation (`Generations`): a TraceView begun at a reply's first forward and
  finished by its step, and in how many parts a paced display draws each forward; Chat's turn, an
  Agent episode and each Compare side are one;
- the end of the turn, whichever way it comes: its events over, Stop (the worker ends with a
  cancelled generation, so the events end too), or the handler closed under it (a client's
  cancel, New chat). Closed, it stops the worker, reads what the worker had not handed over, and
  saves what was decided; and it saves once, however many of those ways meet.

The tab keeps only what it draws: its readers, and the updates it yields for the events.

    with Watch(run, read_frame, read_step, save) as watch:
        for event in watch.events():
            ...                                   # draw: event.show frames, steps
    saved = watch.save()                          # the same save, once, when the turn ends
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from engine.trace import Frame, GenerationConfig, block_size_of
from visualizer.parts import part_count
from world.agent import Step

from .live import TraceView
from .runs import Event, Run

NOT_SAVED = object()


class Generations:
    """The view of each generation of a turn, as its handler reads them: the steps finished so
    far, and the reply in flight as a TraceView begun at its first forward and finished by its
    step (a step Stop cut is the engine's cancelled Result). `view` is the last reply's, or the
    one given before any."""

    within = "turn"                               # what the generations make up (TraceView.within)

    def __init__(self, backend: Any, config: GenerationConfig, model: str, prompt: str,
                 view: TraceView | None = None) -> None:
        self.backend, self.config, self.model, self.prompt = backend, config, model, prompt
        self.steps: list[Step] = []
        self.view = view
        self.pending = False                      # frames arrived for a reply that is not a step yet

    def read_frame(self, frame: Frame, _lane: int = 0) -> None:
        if not self.pending:                      # the first forward of the next reply
            self.view = TraceView.for_run(self.backend, self.config, self.model, self.prompt,
                                          generation=len(self.steps) + 1)
            self.view.within = self.within
            self.begin(self.view)
            self.pending = True
        self.view.add(frame, self.backend)

    def begin(self, view: TraceView) -> None:
        """A reply's view was made (a tab may add to its meta)."""

    def read_step(self, step: Step, _lane: int = 0) -> None:
        self.steps.append(step)
        if self.pending and self.view is not None and step.result is not None:
            self.view.finish(step.result)
        self.pending = False

    def part_count(self, frame: Frame, _lane: int = 0) -> int:
        """In how many parts a paced display draws this forward (visualizer/parts.py)."""
        diffusion = getattr(self.backend, "kind", "") == "diffusion"
        mask_id = self.backend.mask_id if diffusion else None
        return part_count(frame, mask_id, self.config.gen_length, block_size_of(mask_id, self.config.block_size))


class Watch:
    def __init__(self, run: Run, read_frame: Callable[[Frame, int], None], read_step: Callable[[Any, int], None],
                 save: Callable[[bool], Any]) -> None:
        """`read_frame(frame, lane)` and `read_step(step, lane)` take in what the worker made;
        `save(cut)` keeps the turn (cut: the handler was closed before the turn ended) and
        returns what the tab reports (a stored id, or None)."""
        self.run = run
        self._read_frame, self._read_step, self._save = read_frame, read_step, save
        self._saved: Any = NOT_SAVED
        self.ended: Event | None = None            # the "done" event, once the worker returned

    def events(self) -> Iterator[Event]:
        """The run's events, each frame and step read in before it is handed on."""
        for event in self.run.events():
            self._read(event)
            if event.kind == "done":
                self.ended = event
            yield event

    def _read(self, event: Event) -> None:
        if event.kind == "frame" and event.part == 1:
            self._read_frame(event.value, event.lane)
        elif event.kind == "step":
            self._read_step(event.value, event.lane)

    def save(self, cut: bool = False) -> Any:
        """Keep the turn, once: the first call saves, a later one returns what it returned."""
        if self._saved is NOT_SAVED:
            self._saved = self._save(cut)
        return self._saved

    @property
    def saved(self) -> bool:
        return self._saved is not NOT_SAVED

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is GeneratorExit:                  # the handler was closed: what was decided is kept
            for left in self.run.close():
                self._read(left)
            self.save(cut=True)
        self.run.close()
