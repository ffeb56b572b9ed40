#!/usr/bin/env bash
# The loop's last step, as a cluster owner types it: calibrate on an nccl-tests log, tune on the
# calibrated file, and the NCCL tuner table holds a row wherever colltune predicts another cell
# faster than NCCL's own pick by more than the margin, each with its predicted gain in a comment
# (and, where the row reaches beyond the sizes the log measured, a comment that says so).
# Usage: tuned_table.sh path/to/colltune LOG TOPOLOGY MIN_ROWS [TEXT the table must contain]
set -uo pipefail
colltune=$1 log=$2 topology=$3 min_rows=$4 text=${5:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
"$colltune" calibrate --topology "$topology" "$log" -o "$dir/cal.json" > "$dir/cal.log" 2>&1 ||
  fail "calibrate: $(tail -1 "$dir/cal.log")"
"$colltune" tune --topology "$dir/cal.json" --model resnet50 --out "$dir/out" > "$dir/tune.log" 2>&1 ||
  fail "tune: $(tail -1 "$dir/tune.log")"
table="$dir/out/nccl_tuner.conf"
rows=$(grep -c '^allreduce,' "$table")
gains=$(grep -cE '^# .*: gain [0-9.]+%(;|$)' "$table")
cat "$table"
[ "$rows" -ge "$min_rows" ] || fail "$rows rows, expected at least $min_rows"
[ "$gains" -eq "$rows" ] || fail "$rows rows but $gains predicted gains"
[ -z "$text" ] || grep -qF "$text" "$table" || fail "the table does not say: $text"
echo "ok: $rows rows, each with its predicted gain"
