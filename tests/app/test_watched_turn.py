"""Chat, the Agent tab and Compare watch a run the same way (app/watch.py): a Stop in each, and a
handler closed under it (a client's cancel), goes through one Watch and saves the turn once; each
reads its generations through one Generations."""

from __future__ import annotations

import pytest

from app import watch as watch_module
from app.agent_tab import AgentHandlers, EpisodeView
from app.chat import ChatHandlers
from app.chat_turn import ChatTurn
from app.compare import CompareHandlers, Racer
from app.watch import Generations
from engine.generate import run as generate_all
from engine.trace import GenerationConfig
from tests.e2e.app_fakes import fake_backends, fake_context
from tests.fakes import FakeDiffusionBackend
from world.agent import Step

# one token per forward, 96 forwards: long enough to stop in the middle
SETTINGS = {"gen_length": 96, "block_size": 8, "steps": 8, "sampler": "low_confidence", "threshold": 0.9,
            "temperature": 0.0, "seed": 0}
TEXT = "word " * 40


class Saves:
    """Every Watch made, and how often each one's save hook ran."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[list[bool]] = []
        made = watch_module.Watch.__init__

        def counted(watch, run, read_frame, read_step, save):
            mine: list[bool] = []
            self.calls.append(mine)

            def hook(cut: bool):
                mine.append(cut)
                return save(cut)

            made(watch, run, read_frame, read_step, hook)

        monkeypatch.setattr(watch_module.Watch, "__init__", counted)


def start(tab: str, ctx):
    """The tab's handler as Gradio drives it, on a long answer."""
    key = ("s", tab)
    if tab == "chat":
        return key, ChatHandlers(ctx, updates_per_second=1e9).submit(
            "Say hi", [], None, None, None, "fake-bd", "", False, settings=SETTINGS, key=key)
    if tab == "agent":
        return key, AgentHandlers(ctx, updates_per_second=1e9).run(
            "", "Please say hi.", "fake-bd", 1, settings=SETTINGS, key=key)
    return key, CompareHandlers(ctx, updates_per_second=1e9).run("Say hi", "fake-bd", "fake-ar",
                                                                  settings=SETTINGS, key=key)


@pytest.fixture
def ctx(tmp_path):
    backends = {**fake_backends(), "fake-bd": FakeDiffusionBackend(TEXT, name="fake-bd", max_length=4096)}
    context = fake_context(tmp_path, backends=backends)
    yield context
    context.close()


@pytest.mark.parametrize("tab", ["chat", "agent", "compare"])
@pytest.mark.parametrize("ending", ["stop", "close"])
def test_a_stop_or_a_closed_handler_goes_through_the_one_watch_and_saves_once(ctx, monkeypatch, tab, ending):
    saves = Saves(monkeypatch)
    key, stream = start(tab, ctx)
    for _ in range(4):
        next(stream)
    if ending == "stop":
        assert ctx.runs.stop(key)                         # what the Stop button does
        list(stream)
    else:
        stream.close()                                    # what Gradio does on a client's cancel
    assert saves.calls == [[ending == "close"]]           # one Watch, its save once (cut when closed)
    assert len(ctx.store.list_conversations(kind=tab)) == 1
    assert not ctx.runs.running(key)


@pytest.mark.parametrize("tab", ["chat", "agent", "compare"])
def test_each_tab_reads_its_generations_the_one_way(tab):
    """A reply's view begins at its first forward and is finished by its step, numbered in the
    turn; the parts a paced display draws come from the same place (app/watch.py Generations)."""
    backend = FakeDiffusionBackend("hi there friend", name="fake-bd")
    config = GenerationConfig(gen_length=8, block_size=4, steps=4, sampler="low_confidence")
    if tab == "chat":
        reader = ChatTurn(None, config, "fake-bd", "hi", [], {"role": "user", "content": "hi"})
        reader.backend = backend
    elif tab == "agent":
        reader = EpisodeView(backend, config, "fake-bd", "hi")
    else:
        reader = Racer("fake-bd", backend, [{"role": "user", "content": "hi"}], config, "hi")
    assert isinstance(reader, Generations)
    prompt = backend.encode_chat([{"role": "user", "content": "hi"}])
    for generation in (1, 2):
        frames: list = []
        result = generate_all(backend, prompt, config, on_frame=frames.append)
        for frame in frames:
            assert reader.part_count(frame, 0) >= 1
            reader.read_frame(frame, 0)
            assert reader.pending and reader.view.generation == generation
        reader.read_step(Step("hi", None, None, None, result, 0.1), 0)
        assert not reader.pending and reader.view.result is result and len(reader.steps) == generation
        assert len(reader.view.frames) == len(frames) > 0
    assert reader.view.within == ("episode" if tab == "agent" else "turn")
