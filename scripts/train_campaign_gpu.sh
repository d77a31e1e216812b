#!/bin/bash
# The campaign's stage on one CUDA GPU (issue 49), sized to fit one 10-minute device call:
# the conversation corpus made in parallel shards on the machine's cores (~1-2 min), then the BD
# twin from the shipped weights for BD_MINUTES, then the AR twin for the same number of steps
# (the same batches, so the same tokens). On an H200 the BD twin trained at ~0.2-0.25 M tokens/s
# and the AR twin at ~1 M (models/README.md): 4 minutes are ~50 M tokens, against ~1 M in a
# CPU session. bf16 autocast is picked by itself on a GPU (training/precision.py).
#
#     bash scripts/train_campaign_gpu.sh [BD_MINUTES] [STAGE]
#     DEVICE=cpu SHARDS=2 ROWS=200 TALKS=80 bash scripts/train_campaign_gpu.sh 0.5 smoke   # a dry run
#
# The weights land in runs/out/sprout-{bd,ar}-<STAGE>-gpu; check them with bench agent before
# copying them over models/ (models/README.md, "The training campaign").
set -euo pipefail
PY=${PYTHON:-python3}
bd_min=${1:-4}
stage=${2:-gpu1}
device=${DEVICE:-cuda}
shards=${SHARDS:-8}
rows=${ROWS:-36000}        # single requests in all, split over the shards (36,000 from v14)
talks=${TALKS:-24000}      # conversations in all
export SPROUT_TRITON=0     # training and validation on the torch kernels (the Triton ones are forward-only)
corpus=data/corpus-train-v19-sharded.jsonl   # v19: scripts/train_campaign.sh says what each version added
if [ ! -f $corpus ]; then
  mkdir -p data
  for i in $(seq 0 $((shards - 1))); do
    # seeds 100+i: shards never share a transcript; the held-out values stay out either way
    $PY -m training.corpus --split train --phrasing train --n $((rows / shards)) \
      --conversations $((talks / shards)) --seed $((100 + i)) --tee-share 0.09 --out data/shard-$i.jsonl &
  done
  wait
  cat data/shard-*.jsonl > $corpus.tmp && mv $corpus.tmp $corpus && rm -f data/shard-*.jsonl
fi
common=(--preset gpu --device "$device" --corpus $corpus --eval-every 100000 --agent-tasks 0 --select last
        --row-colour-weight 0.1 --row-match-weight 0.1 --decision-weight 4 --lr "${LR:-5e-4}" --warmup 50)
$PY -m training.train --twin bd --init-from "${INIT_BD:-models/sprout-bd}" --out runs/out/sprout-bd-$stage-gpu \
  --minutes "$bd_min" "${common[@]}"
bd_steps=$($PY -c "import json; print(json.load(open('runs/out/sprout-bd-$stage-gpu/training.json'))['step'])")
$PY -m training.train --twin ar --init-from "${INIT_AR:-models/sprout-ar}" --out runs/out/sprout-ar-$stage-gpu \
  --max-steps "$bd_steps" "${common[@]}"
