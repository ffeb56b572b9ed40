#!/usr/bin/env bash
# `simulate --algo nccl` names its bottleneck from what-if copies of the machine priced as the row
# is (NCCL's pick on the copy, priced by its colltune schedule): the network twice as fast is what
# `simulate` itself says of the machine with NICs of twice the rate. Two DGX H100s, Ring on
# NCCL_MAX_NCHANNELS=4 channels (4 of the 8 NICs), 1 GiB: the NICs limit it.
# Usage: nccl_bottleneck.sh COLLTUNE
set -euo pipefail
colltune=${1:?path to colltune}
opts=(--algo nccl --nccl-algo Ring --nccl-env NCCL_MAX_NCHANNELS=4 --bytes 1GiB --json)
row=$("$colltune" simulate --topology dgx-h100:nodes=2 "${opts[@]}")
faster=$("$colltune" simulate --topology dgx-h100:nodes=2,nic_gbit=800 "${opts[@]}")
python3 - "$row" "$faster" <<'PY'
import json, sys
row, faster = (json.loads(t) for t in sys.argv[1:3])
b = row["bottleneck"]
assert b["resource"] == "net", b
assert abs(b["twice_as_fast_us"] / faster["time_us"] - 1) < 1e-9, (b["twice_as_fast_us"], faster["time_us"])
print("network twice as fast: %.2f us, simulate with 800 Gb/s NICs: %.2f us" % (b["twice_as_fast_us"], faster["time_us"]))
PY
