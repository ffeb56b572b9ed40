#!/usr/bin/env bash
# The parts of bench/gpu-check.sh that need no GPU: its summaries of recorded outputs (kernel
# bandwidth ratios and the targets' verdicts; the virtual-rank sweep per algorithm, wrong counts
# summed). Usage: test_gpu_check.sh REPO_ROOT
set -u
root=$1
data=$root/tests/data/gpu_check
GPU_CHECK_SOURCE_ONLY=1 source "$root/bench/gpu-check.sh"
status=0
expect() {  # expect NAME TEXT PATTERN: TEXT has a line matching the extended regex PATTERN
  if ! printf '%s\n' "$2" | grep -Eq -- "$3"; then
    echo "FAIL $1: no line matches /$3/ in:"; printf '%s\n' "$2"; status=1
  fi
}

micro=$(micro_summary "$data/micro_gpu_reduce.csv")
expect "copy row" "$micro" '^  1 GiB +4000\.0 +3800\.0 \(0\.95\) +3100\.0 \(0\.78\) +3600\.0 \(0\.90\)$'
expect "256 MiB row" "$micro" '^  256 MiB +4096\.0 +3900\.0 \(0\.95\)'
expect "fp32 met" "$micro" '^target fp32 sum >= 0\.90 x copy at 1 GiB: met \(0\.95\)$'
expect "fp16 missed" "$micro" '^target fp16 sum >= 0\.80 x copy at 1 GiB: missed \(0\.78\)$'
none=$(micro_summary "$data/micro_gpu_reduce_no_device.csv")
expect "no device error" "$none" 'error: .*no CUDA device'
expect "no measurement" "$none" '^target fp32 sum >= 0\.90 x copy: missed \(no measurement\)$'

table=$data/bench-cuda-8ranks.txt
sweep=$(sweep_summary "$table")
expect "device" "$sweep" '^  device NVIDIA H200'
expect "six algorithms" "$(printf '%s\n' "$sweep" | grep -cE '^  (ring|tree|dbtree|rhd|hierarchical|hierarchical_leader) ')" '^6$'
ring_small=$(awk '$5 == "ring" { print $8 " / " $12; exit }' "$table")
ring_big=$(awk '$5 == "ring" { last = $8 " / " $12 } END { print last }' "$table")
expect "ring busbw" "$sweep" "^  ring +${ring_small} +${ring_big} +0$"
expect "check line" "$sweep" '^  Out of bounds values : 0 OK$'
expect "average" "$sweep" '^  Avg bus bandwidth \(hierarchical_leader\) : '
# Wrong elements of both measurements are summed per algorithm.
broken=$(mktemp)
trap 'rm -f "$broken"' EXIT
awk '$5 == "tree" && NF == 13 { $9 = 2; $13 = 5 } { print }' "$table" > "$broken"
expect "wrong summed" "$(sweep_summary "$broken")" '^  tree .* 14$'
[ "$status" -eq 0 ] && echo "gpu-check summaries: ok"
exit "$status"
