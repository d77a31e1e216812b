"""Warming the models at launch (app/warmup.py): one short generation per model, under its run
lock; a model that cannot load is marked failed, not raised."""

from __future__ import annotations

from types import SimpleNamespace

from app.state import ModelRegistry
from app.warmup import WarmUp, warm_up
from tests.fakes import FakeDiffusionBackend


class Counting(FakeDiffusionBackend):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.forwards = 0

    def denoise(self, canvas, block):
        self.forwards += 1
        return super().denoise(canvas, block)


def test_warm_up_runs_one_generation_per_model_and_reports():
    backend = Counting("hello", name="fake-bd")

    def loader(name, device):
        raise RuntimeError("no such model")

    registry = ModelRegistry(device="cpu", loader=loader, preloaded={"fake-bd": backend})
    ctx = SimpleNamespace(registry=registry, default_model="fake-bd", baseline_model="missing")
    warm = warm_up(ctx, block=True)
    assert backend.forwards >= 1 and warm.status["fake-bd"] == "ready"
    assert warm.status["missing"].startswith("failed") and warm.done.is_set()
    assert not warm.loading("fake-bd") and set(warm.seconds) == {"fake-bd", "missing"}


def test_warm_up_in_the_background_ends_and_names_each_model_once():
    registry = ModelRegistry(device="cpu", preloaded={"a": FakeDiffusionBackend("hi", name="a")})
    warm = WarmUp(registry, ["a", "a", ""]).start()
    assert warm.done.wait(30) and warm.names == ["a"] and warm.status == {"a": "ready"}


def test_a_request_says_loading_until_the_model_is_loaded_and_warm():
    from app.warmup import is_loading

    loaded = FakeDiffusionBackend("hi", name="b")
    registry = ModelRegistry(device="cpu", loader=lambda name, device: loaded)
    ctx = SimpleNamespace(registry=registry, default_model="b", baseline_model="b")
    assert is_loading(ctx, "b")                                   # never loaded in this process
    ctx.warmup = WarmUp(registry, ["b"])                          # created, not yet run: still waiting
    assert is_loading(ctx, "b")
    ctx.warmup.run()
    assert not is_loading(ctx, "b") and registry.loaded_names() == ["b"]
