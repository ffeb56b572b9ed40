#!/usr/bin/env bash
# The loop a cluster owner runs, through the CLI as they type it: calibrate on an nccl-tests log
# (every other size), then on the calibrated file `simulate --algo nccl` and `compare` price
# every size left out. They must print the same number (one price path), calibrate must price
# every row whose algorithm has a colltune schedule (no "not modelled"), and a calibrated alpha
# must move simulate's prediction as it moves compare's.
# Usage: user_path.sh path/to/colltune LOG TOPOLOGY
set -uo pipefail
colltune=$1 log=$2 topology=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
row='^ *([0-9]+: +)?[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ '
awk -v row="$row" '$0 ~ row { if (n++ % 2) next } { print }' "$log" > "$dir/fit.txt"
awk -v row="$row" '$0 ~ row { if (n++ % 2 == 0) next } { print }' "$log" > "$dir/held.txt"
"$colltune" calibrate --topology "$topology" "$dir/fit.txt" -o "$dir/cal.json" > "$dir/cal.log" 2>&1 ||
  fail "calibrate: $(tail -1 "$dir/cal.log")"
grep -qi "not modelled" "$dir/cal.log" && fail "calibrate left rows not modelled: $(grep -i -A2 'not modelled' "$dir/cal.log")"
"$colltune" compare --json --topology "$dir/cal.json" "$dir/held.txt" > "$dir/cmp.json" || fail "compare"
checked=0
while read -r bytes predicted; do
  simulated=$("$colltune" simulate --json --topology "$dir/cal.json" --algo nccl --bytes "$bytes" |
              python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["time_us"]))')
  # The number, not its spelling: a JSON writer may print a double with more digits than the
  # shortest that reads back to it (64507.814305753804 for 64507.8143057538).
  predicted=$(python3 -c 'import sys; print(repr(float(sys.argv[1])))' "$predicted")
  [ "$simulated" = "$predicted" ] || fail "$bytes B: simulate says $simulated us, compare $predicted us"
  checked=$((checked + 1))
done < <(grep -oE '"bytes": [0-9]+|"predicted_us": [0-9.e+-]+' "$dir/cmp.json" | paste - - | awk '{print $2, $4}')
[ "$checked" -gt 3 ] || fail "only $checked rows compared"
echo "ok: $checked held-out sizes, simulate and compare agree"
