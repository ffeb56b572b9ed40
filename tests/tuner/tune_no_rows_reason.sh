#!/usr/bin/env bash
# A tuning that keeps NCCL's own choice on a calibrated machine says why nccl_tuner.conf has no
# rows without claiming that no other pick is faster at any size: the step decided, not the sizes
# (on the calibrated OCI log, auto's table beats NCCL's pick at some sizes).
# Usage: tune_no_rows_reason.sh path/to/colltune TOPOLOGY LOG
set -uo pipefail
colltune=$1 topology=$2 log=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$colltune" calibrate --topology "$topology" "$log" -o "$dir/cal.json" > /dev/null || { echo "FAILED: calibrate"; exit 1; }
"$colltune" tune --topology "$dir/cal.json" --model resnet50 --fix algorithm=nccl --out "$dir/nccl" > /dev/null ||
  { echo "FAILED: tune --fix algorithm=nccl"; exit 1; }
"$colltune" tune --topology "$dir/cal.json" --model resnet50 --fix algorithm=auto --out "$dir/auto" > /dev/null ||
  { echo "FAILED: tune --fix algorithm=auto"; exit 1; }
grep -q '^allreduce,' "$dir/auto/nccl_tuner.conf" || { echo "FAILED: auto wrote no rows here; pick another log"; exit 1; }
want="# No rows: the tuned configuration keeps NCCL's own algorithm and protocol choice (no per-size override predicts a faster step)."
grep -qxF "$want" "$dir/nccl/nccl_tuner.conf" || { echo "FAILED: nccl_tuner.conf:"; cat "$dir/nccl/nccl_tuner.conf"; exit 1; }
if grep -q '^allreduce,' "$dir/nccl/nccl_tuner.conf"; then echo "FAILED: rows under algorithm nccl"; exit 1; fi
echo "ok"
