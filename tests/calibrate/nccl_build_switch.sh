#!/usr/bin/env bash
# Two NCCL builds on one machine (nccl#2441), through the CLI: the builds class the host's AMD
# CPU differently, and their logs leave the slow LL regime at different sizes. On the dump each
# build writes, `simulate --algo nccl` must pick LL at the log's last slow size and another
# protocol at its first fast one (found in the log: where busbw more than doubles from one size
# to the next); `calibrate` on the log must keep the CPU class in the calibrated file, whose
# picks must be the same.
# Usage: nccl_build_switch.sh path/to/colltune LOG DUMP_SPEC
set -uo pipefail
colltune=$1 log=$2 dump=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
read -r slow fast < <(python3 - "$log" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"^\s*(\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s", line)
    if m:
        rows.append((int(m.group(1)), float(m.group(2))))
jumps = [(a[0], b[0]) for a, b in zip(rows, rows[1:]) if b[1] > 2 * a[1]]
print(*jumps[0]) if len(jumps) == 1 else print("none none")
PY
)
[ "$slow" != none ] || fail "$log: no single size where busbw more than doubles"
protocol() {  # TOPOLOGY BYTES -> NCCL's protocol there
  "$colltune" simulate --json --topology "$1" --algo nccl --bytes "$2" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["protocol"])'
}
check() {  # TOPOLOGY
  local at_slow at_fast
  at_slow=$(protocol "$1" "$slow") || fail "simulate $1 at $slow B"
  at_fast=$(protocol "$1" "$fast") || fail "simulate $1 at $fast B"
  [ "$at_slow" = LL ] || fail "$1: NCCL's model picks $at_slow at $slow B, the log's last slow size (LL expected)"
  [ "$at_fast" != LL ] || fail "$1: NCCL's model still picks LL at $fast B, where the log's busbw jumped"
}
check "$dump"
"$colltune" calibrate --topology "$dump" "$log" -o "$dir/cal.json" > "$dir/cal.log" 2>&1 ||
  fail "calibrate: $(tail -1 "$dir/cal.log")"
grep -q '"nccl_cpu"' "$dir/cal.json" || fail "the calibrated file lost the CPU class"
check "$dir/cal.json"
echo "ok: LL at $slow B, another protocol at $fast B, on the dump and on the calibrated file"
