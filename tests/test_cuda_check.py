"""scripts/cuda_check.py (the GPU check of issue 18) runs end to end on the CPU on tiny sizes, in
bf16 as on CUDA: every case equal, the benchmark's numbers present. Not a timing test."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "cuda_check.py"


def load_script():
    spec = importlib.util.spec_from_file_location("cuda_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_runs_on_the_cpu(capsys):
    check = load_script()
    code = check.main(["--device", "cpu", "--hidden", "32", "--layers", "1", "--gen-length", "8", "--block-size", "4",
                       "--repeats", "1", "--only", "llada", "fast_dllm_v2", "--dtype", "bfloat16",
                       "--caches", "none", "dual", "--cached-decodings", "llada"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dtype"] == "torch.bfloat16" and report["gpu"] is None          # the dtype CUDA runs in
    full_attention = {"llada", "fast_dllm_threshold", "fast_dllm_factor"}
    assert set(report["results"]) == {*full_attention, "fast_dllm_v2", "llada+dual"}
    for entry in report["results"].values():
        assert entry["equality"]["cases"] == 5 * 4 * 2           # prompts x temperatures x steps
        assert entry["equality"]["equal"] == entry["equality"]["cases"], entry["equality"]["mismatches"]
        assert entry["bench"]["same_canvases"] is True and entry["bench"]["overhead"] > 0


def test_the_diffusion_gemma_step_runs_on_the_cpu_at_tiny_shapes(capsys):
    check = load_script()
    code = check.main(["--device", "cpu", "--only", "diffusion_gemma", "--gemma-shape", "tiny", "--gemma-steps", "4",
                       "--repeats", "1", "--dtype", "float32"])
    assert code == 0
    entry = json.loads(capsys.readouterr().out)["results"]["diffusion_gemma"]
    assert entry["same_canvases"] is True                         # the engine's steps are transformers' steps
    assert entry["forwards"] == 4 and entry["answer_tokens"] == 16 and entry["accepted_per_step"] >= 1
    assert entry["engine_tokens_per_s"] > 0 and entry["upstream_tokens_per_s"] > 0


def test_without_cuda_it_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        return
    assert load_script().main(["--device", "cuda"]) == 2
    assert "CUDA is not available" in capsys.readouterr().out
