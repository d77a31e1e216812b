#!/bin/bash
# The agent benchmarks of one campaign stage (issue 49; models/README.md, "The training campaign"):
# each twin of runs/out/sprout-{bd,ar}-STAGE on each set, one greedy attempt, one thread each, the
# whole conversation read; two runs side by side on a 2-core machine.
#
#     bash scripts/eval_campaign.sh STAGE [SET ...]        (default: conversations tshirts phrasing)
#
# The JSON of each run goes to runs/STAGE-eval/<twin>-<set>.json, its episodes beside it. A stage
# ships only when it beats the shipped twins on these and the hand-written, office-six and
# template sets (add them as SETs).
set -euo pipefail
stage=${1:?give the stage name, e.g. s2}
shift
sets=("$@")
[ ${#sets[@]} -eq 0 ] && sets=(conversations tshirts phrasing)
PY=${PYTHON:-.venv/bin/python}
out=runs/$stage-eval
mkdir -p "$out"
one() {   # twin set
  OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE $PY -m bench agent --model "runs/out/sprout-$1-$stage" --task-set "$2" \
    --attempts 1 --device cpu --reads conversation --json --episodes "$out/$1-$2.jsonl" \
    > "$out/$1-$2.json" 2> "$out/$1-$2.log"
  echo "$(date +%T) $1 $2 rc=$?" >> "$out/progress"
}
for set in "${sets[@]}"; do
  one bd "$set" &
  one ar "$set"
  wait
done
