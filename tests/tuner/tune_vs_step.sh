#!/usr/bin/env bash
# One price path in the tuner: the step `tune` predicts for a candidate is the step `colltune step`
# predicts for that candidate (its chunk included: step --chunk), bit for bit, for the ten fastest candidates of a tuning and for
# the best of every algorithm the runtime offers (NCCL's own choice, the per-size table "auto",
# each forced NCCL algorithm), on the topology given (a calibrated one included).
# Usage: tune_vs_step.sh path/to/colltune TOPOLOGY MODEL [RUNTIME [LOG]]
#   LOG: an nccl-tests log of TOPOLOGY; the check then runs on TOPOLOGY calibrated on it.
set -uo pipefail
colltune=$1 topology=$2 model=$3 runtime=${4:-horovod} log=${5:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -n "$log" ]; then
  "$colltune" calibrate --topology "$topology" "$log" -o "$dir/cal.json" > /dev/null || { echo "FAILED: calibrate"; exit 1; }
  topology=$dir/cal.json
fi
failures=0
checked=0
# Each candidate of colltune.json's "top" as step's options, with tune's predicted step time.
candidates() {
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for c in j["top"][:int(sys.argv[2])]:
    flags = ["--algo", c["algorithm"], "--fusion-threshold", "%dB" % c["fusion_threshold_bytes"],
             "--cycle-time", "%.17gms" % c["cycle_time_ms"]]
    if c["fp16_compression"]: flags.append("--fp16-compress")
    if c["hierarchical"]: flags.append("--hierarchical")
    if c["chunk_bytes"]: flags += ["--chunk", "%dB" % c["chunk_bytes"]]
    print(repr(c["step_time_ms"]), " ".join(flags))
PY
}
check() {  # check N [FIX...]: the N fastest candidates
  local n=$1
  shift
  "$colltune" tune --topology "$topology" --model "$model" --runtime "$runtime" --out "$dir/out" "$@" > /dev/null ||
    { echo "FAILED: tune $*"; failures=$((failures + 1)); return; }
  while read -r predicted flags; do
    # shellcheck disable=SC2086
    got=$("$colltune" step --topology "$topology" --model "$model" --runtime "$runtime" $flags --json |
          python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["step_time_ms"]))')
    checked=$((checked + 1))
    [ "$got" = "$predicted" ] || { echo "FAILED: $flags: tune predicted $predicted ms, step $got ms"; failures=$((failures + 1)); }
  done < <(candidates "$dir/out/colltune.json" "$n")
}
check 10
# The algorithms the runtime offers: NCCL's own choice under Horovod and NCCL, not under colltune's.
algos="nccl auto ring dbtree"
[ "$runtime" = colltune ] && algos="auto ring dbtree nccl_tree"
for algo in $algos; do check 2 --fix "algorithm=$algo"; done
[ "$checked" -ge 10 ] || { echo "FAILED: only $checked candidates checked"; exit 1; }
[ "$failures" -eq 0 ] || exit 1
echo "ok: $checked candidates, tune and step agree bit for bit"
