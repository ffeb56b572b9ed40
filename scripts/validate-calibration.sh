#!/usr/bin/env bash
# The published-log validation of docs/calibration.md: for each nccl-tests log of
# tests/data/nccl-tests-logs (sources in its SOURCES.md), the machine it ran on as a colltune
# topology, the uncalibrated model's error, and calibrate --holdout: fitted on every other size,
# the error on the sizes it did not see. Prints a Markdown table.
# Usage: scripts/validate-calibration.sh [path/to/colltune]
set -euo pipefail
colltune=${1:-build/cli/colltune}
logs=$(dirname "$0")/../tests/data/nccl-tests-logs
# log | topology (as the log's SOURCES.md row describes the machine) | extra flags
cases=(
  "autodl-2080ti-2gpu-pcie-allreduce.txt|pcie-box:gpus=2|"
  "autodl-2080ti-2gpu-pcie-allgather.txt|pcie-box:gpus=2|"
  "nccl-tests-309-hgx-h100-2node-ib-allreduce.txt|dgx-h100:nodes=2|"
  "nccl-tests-309-h100-vm-4node-ib-allreduce.txt|dgx-h100:nodes=4|"
  "nccl-tests-290-h100-2node-ib-allreduce-algo-ring.txt|dgx-h100:nodes=2|--nccl-algo Ring"
  "oci-a100-2node-roce-allreduce.txt|dgx-a100:nodes=2|"
  "gcp-a3mega-h100-2node-tcpxo-allreduce.txt|dgx-h100:nodes=2,nic_gbit=200|"
  "nccl-tests-290-h100-1node-nvswitch-allreduce.txt|dgx-h100|"
  "nccl-tests-290-h100-2node-ib-allreduce.txt|dgx-h100:nodes=2|"
)
pct() { python3 -c "import sys; print('%.1f%%' % (100 * float(sys.argv[1])))" "$1"; }
echo "| log | topology | rows modelled / not | uncalibrated median error | fitted | held-out median (max) error |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  IFS='|' read -r log topology flags <<<"$c"
  # shellcheck disable=SC2086
  if ! cmp=$("$colltune" compare --topology "$topology" $flags "$logs/$log" --json 2>&1); then
    echo "| $log | $topology | 0 / all | ${cmp#colltune: error: } | | |"
    continue
  fi
  # shellcheck disable=SC2086
  cal=$("$colltune" calibrate --topology "$topology" $flags --holdout "$logs/$log" --json 2>&1) || {
    echo "| $log | $topology | | | ${cal#colltune: error: } | |"; continue; }
  python3 - "$log" "$topology" "$cmp" "$cal" <<'PY'
import json, sys
log, topology, cmp, cal = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
p = lambda x: "%.1f%%" % (100 * x)
fitted = ", ".join("%s %.3g" % (n, cal["values"][n]) for n in cal["fitted"])
print("| %s | %s | %d / %d | %s | %s | %s (%s) |" % (log, topology, len(cmp["rows"]), len(cmp["not_modelled"]),
      p(cmp["overall"]["median_abs_error"]), fitted, p(cal["holdout_median_abs_error"]), p(cal["holdout_max_abs_error"])))
PY
done
