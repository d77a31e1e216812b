"""`python -m engine.cli` (and its old name `python -m engine.generate`): main() with a stub
catalog that serves the fake backend."""

import io
import json
import sys
import types

import pytest

import engine
from engine.backends.base import BackendError
from engine.cli import MASK_GLYPH, live_printer, main
from engine.generate import run
from engine.trace import GenerationConfig
from tests.fakes import FakeARBackend, FakeDiffusionBackend

ANSWER = "Hello from the fake model."


@pytest.fixture
def catalog(monkeypatch):
    """Replace engine.catalog (real or not written yet) with a stub whose load_backend
    serves fakes: "fake-dllm" is diffusion, "fake-ar" autoregressive, anything else unknown."""
    stub = types.ModuleType("engine.catalog")
    stub.loaded = []

    def load_backend(name_or_path: str, device: str = "auto"):
        stub.loaded.append((name_or_path, device))
        if name_or_path == "fake-dllm":
            return FakeDiffusionBackend(ANSWER)
        if name_or_path == "fake-ar":
            return FakeARBackend(ANSWER)
        raise BackendError(f"No model called {name_or_path!r}; try fake-dllm.")

    def resolve(name_or_path: str):
        if name_or_path not in ("fake-dllm", "fake-ar"):
            raise BackendError(f"No model called {name_or_path!r}; try fake-dllm.")
        return types.SimpleNamespace(defaults=stub.defaults.get(name_or_path, {}))

    stub.load_backend, stub.resolve, stub.defaults = load_backend, resolve, {}
    monkeypatch.setitem(sys.modules, "engine.catalog", stub)
    monkeypatch.setattr(engine, "catalog", stub, raising=False)
    return stub


def test_json_output(catalog, capsys):
    code = main(["--model", "fake-dllm", "--prompt", "Say hello", "--gen-length", "32", "--block-size", "8",
                 "--sampler", "threshold", "--device", "cpu", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out)                                                  # exactly one JSON object
    assert payload["text"] == ANSWER
    assert payload["config"]["block_size"] == 8 and payload["config"]["sampler"] == "threshold"
    assert set(payload["stats"]) == {"nfe", "new_tokens", "tokens_per_forward", "seconds", "tokens_per_s",
                                     "first_token_s", "stop_reason", "wall_s", "edits", "upstream_tokens_per_forward"}
    assert payload["stats"]["new_tokens"] == len(ANSWER)
    assert payload["stats"]["upstream_tokens_per_forward"] is None        # a uniform-noise run's second count only
    assert catalog.loaded == [("fake-dllm", "cpu")]


def test_the_models_decoding_defaults_apply_unless_a_flag_says_otherwise(catalog, capsys):
    catalog.defaults["fake-dllm"] = {"block_size": 8, "steps": 8, "sampler": "prefix_threshold", "threshold": 0.97}
    assert main(["--model", "fake-dllm", "--prompt", "Say hello", "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert (config["block_size"], config["sampler"], config["threshold"]) == (8, "prefix_threshold", 0.97)
    assert main(["--model", "fake-dllm", "--prompt", "Say hello", "--threshold", "0.5", "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert (config["sampler"], config["threshold"]) == ("prefix_threshold", 0.5)


def test_plain_output_is_text_then_stats(catalog, capsys):
    assert main(["--model", "fake-ar", "--prompt", "Say hello", "--gen-length", "64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ANSWER and "tokens per forward" in lines[1] and "stopped by eos" in lines[1]


def test_live_output_shows_masks_and_the_final_text(catalog, capsys):
    assert main(["--model", "fake-dllm", "--prompt", "Say hello", "--gen-length", "32", "--block-size", "16",
                 "--steps", "4", "--live"]) == 0
    out = capsys.readouterr().out
    assert MASK_GLYPH in out and ANSWER in out
    assert "\x1b[" not in out, "no ANSI codes when stdout is not a terminal"


def test_live_with_json_keeps_stdout_one_object(catalog, capsys):
    assert main(["--model", "fake-dllm", "--prompt", "hi", "--gen-length", "32", "--live", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["text"] == ANSWER and MASK_GLYPH in captured.err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--model", "fake-dllm", "--prompt", "hi", "--gen-length", "100", "--block-size", "48"],
         ["48", "100", "does not divide"]),
        (["--model", "fake-dllm", "--prompt", "   "], ["prompt is empty"]),
        (["--model", "no-such-model", "--prompt", "hi"], ["No model called 'no-such-model'"]),
        (["--model", "fake-dllm", "--prompt", "hi", "--sampler", "nucleus"], ["Unknown sampler"]),
        (["--model", "fake-dllm", "--prompt", "hi", "--gen-length", "4992"], ["leaves no room"]),
    ],
    ids=["bad-block-size", "empty-prompt", "unknown-model", "unknown-sampler", "too-long"],
)
def test_errors_are_one_sentence_and_exit_2(catalog, capsys, argv, words):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    for word in words:
        assert word in captured.err
    assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1


def test_live_on_a_terminal_highlights_and_redraws_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen, backend = Terminal(), FakeDiffusionBackend(ANSWER)
    run(backend, [5], GenerationConfig(gen_length=32, block_size=16, steps=4), on_frame=live_printer(backend, screen))
    drawn = screen.getvalue()
    assert "\x1b[1;32m" in drawn and "\x1b[2F\x1b[J" in drawn and MASK_GLYPH in drawn


def test_the_old_module_name_still_runs_the_cli():
    import subprocess
    from pathlib import Path

    done = subprocess.run([sys.executable, "-m", "engine.generate", "--help"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--model" in done.stdout and "python -m engine.cli" in done.stdout
