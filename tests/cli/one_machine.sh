#!/usr/bin/env bash
# One machine described four ways (its preset, the preset exported to colltune JSON, an NCCL
# topology dump with :nodes=N, and fat-tree with matching parameters) gets one answer from the
# command users type: `simulate --algo nccl` (NCCL's pick, priced by its colltune schedule) picks
# the same algorithm, protocol and channels at every size and prices them within 5 %.
# Usage: one_machine.sh COLLTUNE TOPOLOGY_DATA_DIR
set -euo pipefail
colltune=${1:?path to colltune}
data=${2:?tests/data/topology}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
check() {  # check PRESET OTHER...
  local preset=$1; shift
  "$colltune" topo export "$preset" -o "$dir/exported.json"
  "$colltune" simulate --topology "$preset" --algo nccl --bytes 1KiB:1GiB -f 4 --json > "$dir/a.json"
  for other in "$dir/exported.json" "$@"; do
    "$colltune" simulate --topology "$other" --algo nccl --bytes 1KiB:1GiB -f 4 --json > "$dir/b.json"
    python3 - "$dir/a.json" "$dir/b.json" "$preset" "$other" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert len(a) == len(b) > 8, (len(a), len(b))
for x, y in zip(a, b):
    pick = lambda r: (r["bytes"], r["algorithm"], r["protocol"], r["channels"])
    if pick(x) != pick(y) or abs(y["time_us"] / x["time_us"] - 1) > 0.05:
        sys.exit("%s vs %s at %d B: %s %.2f us against %s %.2f us" % (sys.argv[3], sys.argv[4], x["bytes"],
                 pick(x)[1:], x["time_us"], pick(y)[1:], y["time_us"]))
print("%s = %s: %d sizes" % (sys.argv[3], sys.argv[4], len(a)))
PY
  done
}
check dgx-h100:nodes=4 "$data/dgx-h100-nccl-topo.xml:nodes=4" fat-tree:nodes=4
check dgx-a100:nodes=4 "$data/dgx-a100-nccl-topo.xml:nodes=4" fat-tree:nodes=4,gpu=a100,nvlink=300,nic_gbit=200,cpu=epyc-7742
