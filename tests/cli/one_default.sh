#!/usr/bin/env bash
# One configuration, one number: step (its default), tune (its baseline), sweep (a point at the
# defaults) and the demo's pair of commands give the same step time to the microsecond
# (NCCL's own choice under Horovod, Horovod's defaults), also under the user's NCCL settings
# (--nccl-algo, --nccl-env), which must move it. Usage: one_default.sh COLLTUNE
set -euo pipefail
colltune=${1:?path to colltune}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print('%.3f' % (1000 * $1))"; }
declare -A seen
for spec in "dgx-h100:nodes=4 resnet50" "dgx-a100:nodes=2 bert-large" "flat:ranks=8 resnet50" \
            "dgx-h100:nodes=4 resnet50 --nccl-algo Ring" "dgx-h100:nodes=4 resnet50 --nccl-env NCCL_MAX_NCHANNELS=2"; do
  read -r topology model settings <<<"$spec"
  read -r -a nccl <<<"${settings:-}"
  step=$("$colltune" step --topology "$topology" --model "$model" ${nccl[@]+"${nccl[@]}"} --json |
         field "d['step_time_ms']")
  tune=$("$colltune" tune --topology "$topology" --model "$model" --out "$out/tune" ${nccl[@]+"${nccl[@]}"} --json \
           2>/dev/null | field "d['baseline_step_time_ms']")
  # One point: the runtime sweep's default, Horovod.
  sweep=$("$colltune" sweep --topology "$topology" --model "$model" --vary runtime=horovod ${nccl[@]+"${nccl[@]}"} \
            --json 2>/dev/null | field "d['points'][0]['default_step_ms']")
  echo "$spec: step $step us, tune baseline $tune us, sweep defaults $sweep us"
  if [ "$step" != "$tune" ] || [ "$step" != "$sweep" ]; then
    echo "one_default.sh: $spec: the three differ" >&2
    exit 1
  fi
  key="$topology $model"
  if [ -n "${settings:-}" ] && [ "${seen[$key]:-}" = "$step" ]; then
    echo "one_default.sh: $spec: the NCCL settings do not move the step ($step us)" >&2
    exit 1
  fi
  [ -n "${settings:-}" ] || seen[$key]=$step
done
