#!/usr/bin/env bash
# One configuration, one number: step (its default), tune (its baseline), sweep (a point at the
# defaults) and the demo's pair of commands give the same step time to the microsecond
# (NCCL's own choice under Horovod, Horovod's defaults). Usage: one_default.sh COLLTUNE
set -euo pipefail
colltune=${1:?path to colltune}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print('%.3f' % (1000 * $1))"; }
for spec in "dgx-h100:nodes=4 resnet50" "dgx-a100:nodes=2 bert-large" "flat:ranks=8 resnet50"; do
  read -r topology model <<<"$spec"
  step=$("$colltune" step --topology "$topology" --model "$model" --json | field "d['step_time_ms']")
  tune=$("$colltune" tune --topology "$topology" --model "$model" --out "$out/tune" --json 2>/dev/null |
         field "d['baseline_step_time_ms']")
  # One point: the runtime sweep's default, Horovod.
  sweep=$("$colltune" sweep --topology "$topology" --model "$model" --vary runtime=horovod --json 2>/dev/null |
          field "d['points'][0]['default_step_ms']")
  echo "$topology $model: step $step us, tune baseline $tune us, sweep defaults $sweep us"
  if [ "$step" != "$tune" ] || [ "$step" != "$sweep" ]; then
    echo "one_default.sh: $topology $model: the three differ" >&2
    exit 1
  fi
done
