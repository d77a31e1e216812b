#!/usr/bin/env bash
# Issue 18's GPU check in one call, from the repository root on a machine with CUDA: the
# engine-vs-upstream-reference equality sweep and the decode benchmark on random small models
# of every family in bf16 (scripts/cuda_check.py), then the round-by-round equality tests (they
# build their tiny models on the CPU). Writes cuda_check.json and upstream_tests.log to $OUT (or
# the current folder) and prints both. About 4 minutes estimated on one GPU; not yet run on one.
#   e.g. through the device tool: run(command="bash scripts/cuda_check.sh", timeout_s=590)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}"
python="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
"$python" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
PYTHONPATH=. "$python" scripts/cuda_check.py --device "${DEVICE:-cuda}" "$@" > "$out/cuda_check.json"
OMP_NUM_THREADS=1 "$python" -m pytest tests/reference/test_upstream_llada.py tests/reference/test_upstream_dream.py \
    tests/reference/test_upstream_sdar.py tests/reference/test_upstream_fast_dllm_v2.py tests/reference/test_upstream_llada2.py \
    tests/bench/test_bench_decode.py tests/engine/test_devices.py -p no:cacheprovider > "$out/upstream_tests.log" 2>&1 \
    || echo "upstream tests failed: see $out/upstream_tests.log"
tail -3 "$out/upstream_tests.log"
cat "$out/cuda_check.json"
