#!/usr/bin/env bash
# Issue 18's GPU check in one call, from the repository root on a machine with CUDA: the
# engine-vs-upstream-reference equality sweep and the decode benchmark on random small models
# of every family in bf16, then the round-by-round equality tests (they run on the CPU).
# Writes the JSON to ${OUT:-.}/cuda_check.json and the test log beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}"
python="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
PYTHONPATH=. "$python" scripts/cuda_check.py --device "${DEVICE:-cuda}" "$@" > "$out/cuda_check.json"
"$python" -m pytest tests/test_upstream_llada.py tests/test_upstream_dream.py tests/test_upstream_sdar.py \
    tests/test_upstream_fast_dllm_v2.py tests/test_upstream_llada2.py tests/test_devices.py -q -p no:cacheprovider \
    > "$out/upstream_tests.log" 2>&1 || echo "upstream tests failed: see $out/upstream_tests.log"
tail -3 "$out/upstream_tests.log"
cat "$out/cuda_check.json"
