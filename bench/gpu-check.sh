#!/usr/bin/env bash
# bench/gpu-check.sh: colltune's GPU check, for a machine with an NVIDIA GPU, in about 5 minutes.
#
#   bash bench/gpu-check.sh            # from anywhere; OUT=/some/dir to keep the results there
#
# Steps (each bounded by what is left of GPU_CHECK_BUDGET_S, 285 s by default):
# 1. checks that there is a GPU (nvidia-smi) and a toolchain (cmake, nvcc), or stops: exit 2;
# 2. configures (Release, this GPU's architecture, MPI off) and builds, -j$(nproc), only what
#    runs: first the kernels' micro-benchmark and the GPU tests, which need only the collectives
#    libraries; then, niced in the background while they run, the colltune command;
# 3. measures the reduction kernels' bandwidth (fp32, fp16, bf16 sum) against a device-to-device
#    copy in the same run (micro_gpu_reduce); targets: fp32 >= 90% and fp16 >= 80% of the copy;
# 4. runs the GPU tests: test_gpu_kernels (every dtype x op against the CPU, bit for bit),
#    test_gpu_virtual (every algorithm on virtual ranks), test_gpu_nccl;
# 5. runs every allreduce algorithm on 8 virtual ranks of one GPU (2 emulated hosts of 4) from
#    1 MiB to 1 GiB with `colltune bench --transport cuda`: busbw and the bit-exact check.
# The summary (GPU model, every result, the targets) is printed and, step by step, written to
# $OUT/gpu-check-summary.txt next to the logs (or to build-gpu/gpu-check/ without OUT).
# Exit status: 0 when everything passed and the targets were met, 1 otherwise, 2 when the check
# cannot run here (no GPU, no toolchain).
set -uo pipefail

# ---- summaries (also used by tests/collectives/gpu/test_gpu_check.sh on recorded outputs) -----------------

# micro_summary CSV: the kernels' bandwidth (memory traffic) and their ratio to the copy of the
# same size, from micro_gpu_reduce's --benchmark_format=csv output; then one line per target,
# judged at the largest size: "target fp32 sum >= 0.90 x copy: met (0.95)" or "missed".
micro_summary() {
  awk -F, '
    function pick(name) {
      if (name ~ /^BM_DeviceCopy\//) return "copy"
      if (name ~ /^BM_DeviceReduce_f32_sum\//) return "f32"
      if (name ~ /^BM_DeviceReduce_f16_sum\//) return "f16"
      if (name ~ /^BM_DeviceReduce_bf16_sum\//) return "bf16"
      return ""
    }
    function human(b) { return b >= 1073741824 ? (b / 1073741824) " GiB" : (b / 1048576) " MiB" }
    NR > 1 {
      name = $1; gsub(/"/, "", name)
      kind = pick(name)
      if (kind == "") next
      split(name, parts, "/"); size = parts[2] + 0
      if ($9 == "true") { err[kind] = $10; next }
      rate[kind, size] = $6 / 1e9
      if (!(size in seen)) { seen[size] = 1; sizes[++n] = size }
    }
    END {
      printf "kernel bandwidth, GB/s of memory traffic (copy: 2n bytes, reduce: 3n), ratio to the copy:\n"
      printf "  %-9s %10s %18s %18s %18s\n", "size", "copy", "fp32 sum", "fp16 sum", "bf16 sum"
      largest = 0
      for (i = 1; i <= n; ++i) {
        s = sizes[i]; if (s > largest) largest = s
        c = rate["copy", s]
        line = sprintf("  %-9s %10.1f", human(s), c)
        for (k = 1; k <= 3; ++k) {
          kind = (k == 1 ? "f32" : k == 2 ? "f16" : "bf16")
          v = rate[kind, s]
          line = line sprintf(" %10.1f (%4.2f)", v, c > 0 ? v / c : 0)
        }
        print line
      }
      for (kind in err) printf "  %s: error: %s\n", kind, err[kind]
      if (n == 0) { print "target fp32 sum >= 0.90 x copy: missed (no measurement)"; print "target fp16 sum >= 0.80 x copy: missed (no measurement)"; exit }
      c = rate["copy", largest]
      split("f32 0.90 fp32,f16 0.80 fp16", targets, ",")
      for (t = 1; t <= 2; ++t) {
        split(targets[t], f, " ")
        r = c > 0 ? rate[f[1], largest] / c : 0
        printf "target %s sum >= %s x copy at %s: %s (%.2f)\n", f[3], f[2], human(largest), (r >= f[2] ? "met" : "missed"), r
      }
    }' "$1"
}

# sweep_summary TABLE: from `colltune bench` output, per algorithm the busbw (out of place / in
# place) at the smallest and largest size and the wrong elements over all sizes; then the
# check line and the averages as printed.
sweep_summary() {
  awk '
    /^# device / { sub(/^# /, ""); print "  " $0 }
    /^# Out of bounds values/ || /^# Avg bus bandwidth/ { sub(/^# /, ""); footer[++m] = "  " $0; next }
    /^#/ || NF == 0 { next }
    $6 == "not" { na[$5]++; next }
    NF == 13 {
      a = $5; size = $1 + 0
      if (!(a in first)) { order[++n] = a; first[a] = size; small[a] = $8 " / " $12 }
      last[a] = size; big[a] = $8 " / " $12
      wrong[a] += ($9 == "N/A" ? 0 : $9) + ($13 == "N/A" ? 0 : $13)
    }
    END {
      printf "  %-20s %22s %22s %7s\n", "algorithm", "busbw smallest (GB/s)", "busbw largest (GB/s)", "#wrong"
      for (i = 1; i <= n; ++i) {
        a = order[i]
        printf "  %-20s %22s %22s %7d%s\n", a, small[a], big[a], wrong[a], (a in na ? "  (" na[a] " sizes not applicable)" : "")
      }
      for (i = 1; i <= m; ++i) print footer[i]
    }' "$1"
}

if [ "${GPU_CHECK_SOURCE_ONLY:-0}" = 1 ]; then return 0 2> /dev/null || exit 0; fi

# ---- the check ---------------------------------------------------------------------------------

START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET_S:-285}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${GPU_CHECK_BUILD:-$ROOT/build-gpu}
LOGDIR=${OUT:-$BUILD/gpu-check}
SUMMARY=$LOGDIR/gpu-check-summary.txt
FAILED=()

die() { echo "gpu-check: error: $*" >&2; exit 2; }
left() { echo $((BUDGET - (SECONDS - START))); }
# note LINE...: prints and appends to the summary, so a run cut short keeps what it found.
note() { printf '%s\n' "$@" | tee -a "$SUMMARY"; }
# bounded SECONDS CMD...: runs CMD with at most SECONDS (at least 5).
bounded() {
  local s=$1; shift
  [ "$s" -lt 5 ] && s=5
  timeout --kill-after=5 "$s" "$@"
}

command -v nvidia-smi > /dev/null 2>&1 || die "nvidia-smi not found: this check needs an NVIDIA GPU and its driver"
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2> /dev/null | head -1)
[ -n "$GPU" ] || die "no GPU visible to nvidia-smi ($(nvidia-smi -L 2>&1 | head -1))"
command -v cmake > /dev/null 2>&1 || die "cmake not found"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || die "nvcc not found (PATH or /usr/local/cuda/bin)"
ARCH=$(echo "$GPU" | awk -F', ' '{ gsub(/\./, "", $4); print $4 }')
[[ "$ARCH" =~ ^[0-9]+$ ]] || die "cannot read the compute capability from nvidia-smi: '$GPU'"
NVCC_VERSION=$("$NVCC" --version | grep -o 'release [0-9]*\.[0-9]*' | grep -o '[0-9.]*$')
DRIVER_CUDA=$(nvidia-smi | grep -o 'CUDA Version: [0-9]*\.[0-9]*' | grep -o '[0-9.]*$')
# A CUDA runtime runs on drivers of its major version or newer (minor-version compatibility).
if [ -n "$DRIVER_CUDA" ] && [ -n "$NVCC_VERSION" ] && [ "${DRIVER_CUDA%%.*}" -lt "${NVCC_VERSION%%.*}" ]; then
  die "the driver supports CUDA $DRIVER_CUDA, nvcc is CUDA $NVCC_VERSION: programs built with it cannot run here"
fi

mkdir -p "$LOGDIR" || die "cannot create $LOGDIR"
: > "$SUMMARY"
note "colltune GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)" \
     "GPU (nvidia-smi): $GPU; $(nvidia-smi -L | wc -l) GPU(s) visible; driver CUDA ${DRIVER_CUDA:-?}" \
     "host: $(nproc) cores, nvcc $NVCC_VERSION"

# ---- build: first what runs on the GPU alone, then colltune in the background ----------------
LAUNCHER=()
command -v ccache > /dev/null 2>&1 && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
GPU_TARGETS=(micro_gpu_reduce test_gpu_kernels test_gpu_virtual)
t0=$SECONDS
bounded 60 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCOLLTUNE_WITH_CUDA=ON -DCOLLTUNE_WITH_MPI=OFF \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" "${LAUNCHER[@]}" > "$LOGDIR/configure.log" 2>&1
build_rc=$?
grep -q "NCCL=ON" "$LOGDIR/configure.log" && GPU_TARGETS+=(test_gpu_nccl)
[ "$build_rc" -eq 0 ] && bounded $(($(left) - 150)) cmake --build "$BUILD" -j"$(nproc)" --target "${GPU_TARGETS[@]}" \
  > "$LOGDIR/build.log" 2>&1
build_rc=$?
if [ "$build_rc" -ne 0 ]; then
  note "build: FAILED (exit $build_rc after $((SECONDS - t0)) s; $LOGDIR/configure.log, build.log):"
  tail -15 "$LOGDIR/build.log" 2> /dev/null || tail -15 "$LOGDIR/configure.log"
  exit 1
fi
note "build of the kernels and GPU tests: ok in $((SECONDS - t0)) s (sm_$ARCH; $(grep -o 'NCCL=[A-Z]*' "$LOGDIR/configure.log" | head -1))"
# The rest of colltune (topology, simulator, tuner, CLI) for the virtual-rank sweep builds while
# the GPU measures; it runs niced, so the tests' host threads keep their cores.
t1=$SECONDS
nice -n 10 timeout --kill-after=5 $(($(left) - 50)) cmake --build "$BUILD" -j"$(nproc)" --target colltune \
  > "$LOGDIR/build-colltune.log" 2>&1 &
CLI_BUILD=$!
COLLTUNE=$BUILD/cli/colltune

# ---- kernel bandwidth ----------------------------------------------------------------------------
note "" "== reduction kernels against a device-to-device copy (micro_gpu_reduce)"
bounded 40 "$BUILD/bench/micro/micro_gpu_reduce" --benchmark_min_time=0.2 --benchmark_format=csv \
  > "$LOGDIR/micro_gpu_reduce.csv" 2> "$LOGDIR/micro_gpu_reduce.log"
micro_summary "$LOGDIR/micro_gpu_reduce.csv" | tee "$LOGDIR/micro.txt" | tee -a "$SUMMARY"
if grep -q "no CUDA device" "$LOGDIR/micro.txt"; then
  note "RESULT: the CUDA runtime sees no device although nvidia-smi does; stopping ($LOGDIR/micro.txt)"
  kill "$CLI_BUILD" 2> /dev/null
  exit 2
fi
grep -q "missed" "$LOGDIR/micro.txt" && FAILED+=("kernel bandwidth targets")

# ---- GPU tests -----------------------------------------------------------------------------------
# run_test NAME SECONDS: one GPU test executable, its gtest summary into the summary.
run_test() {
  local name=$1 secs=$2 exe rc passed skipped failed
  exe=$BUILD/tests/collectives/gpu/$name
  [ -x "$exe" ] || { note "$name: not built"; FAILED+=("$name (not built)"); return; }
  bounded "$secs" "$exe" --gtest_brief=1 > "$LOGDIR/$name.log" 2>&1
  rc=$?
  passed=$(grep -o '\[  PASSED  \] [0-9]*' "$LOGDIR/$name.log" | grep -o '[0-9]*$')
  skipped=$(grep -o '\[  SKIPPED \] [0-9]*' "$LOGDIR/$name.log" | grep -o '[0-9]*$')
  failed=$(grep -c '^\[  FAILED  \] .*\.' "$LOGDIR/$name.log")
  if grep -q "no CUDA device" "$LOGDIR/$name.log"; then
    note "$name: SKIPPED for want of a device ($LOGDIR/$name.log)"
    FAILED+=("$name (no device)")
  elif [ "$rc" -eq 0 ]; then
    note "$name: passed (${passed:-0} passed, ${skipped:-0} skipped)"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    note "$name: NOT FINISHED within ${secs} s (the time left of the budget)"
    FAILED+=("$name (time)")
  else
    note "$name: FAILED (exit $rc, $failed failed; $LOGDIR/$name.log):"
    grep '^\[  FAILED  \] .*\.' "$LOGDIR/$name.log" | head -10 | tee -a "$SUMMARY"
    grep -B2 -A6 'Failure' "$LOGDIR/$name.log" | head -30
    FAILED+=("$name")
  fi
}
cap() { local n=$(($(left) - $1)); [ "$n" -gt "$2" ] && n=$2; echo "$n"; }  # min(left - $1, $2)

note "" "== GPU tests"
run_test test_gpu_kernels "$(cap 90 60)"
run_test test_gpu_virtual "$(cap 65 100)"
[ -x "$BUILD/tests/collectives/gpu/test_gpu_nccl" ] && run_test test_gpu_nccl "$(cap 55 30)"

# ---- the virtual-rank sweep ----------------------------------------------------------------------
wait "$CLI_BUILD"
cli_rc=$?
note "" "== every allreduce algorithm on 8 virtual ranks of one GPU, 1 MiB to 1 GiB (colltune bench --transport cuda)"
if [ "$cli_rc" -ne 0 ]; then
  note "build of colltune: FAILED or NOT FINISHED (exit $cli_rc after $((SECONDS - t1)) s; $LOGDIR/build-colltune.log)"
  tail -10 "$LOGDIR/build-colltune.log"
  FAILED+=("colltune build")
else
  note "(colltune built in the background in $((SECONDS - t1)) s)"
  ALGOS=$("$COLLTUNE" algos | awk '$2 == "allreduce" { printf "%s%s", sep, $1; sep = "," }')
  bounded $(($(left) - 3)) "$COLLTUNE" bench --transport cuda --ranks 8 --ranks-per-host 4 --algo "$ALGOS" \
    -b 1M -e 1G -f 4 -n 5 -w 2 -c 1 --timeout 60s --json "$LOGDIR/bench-cuda-8ranks.json" \
    > "$LOGDIR/bench-cuda-8ranks.txt" 2>&1
  bench_rc=$?
  sweep_summary "$LOGDIR/bench-cuda-8ranks.txt" | tee -a "$SUMMARY"
  if [ "$bench_rc" -ne 0 ] || ! grep -q "Out of bounds values : 0 OK" "$LOGDIR/bench-cuda-8ranks.txt"; then
    note "virtual-rank sweep: FAILED or NOT FINISHED (exit $bench_rc; $LOGDIR/bench-cuda-8ranks.txt):"
    tail -5 "$LOGDIR/bench-cuda-8ranks.txt" | tee -a "$SUMMARY"
    FAILED+=("virtual-rank sweep")
  fi
fi

note "" "checked in $((SECONDS - START)) s"
if [ ${#FAILED[@]} -eq 0 ]; then
  note "RESULT: PASS (tests passed, every result bit-exact, kernel targets met)"
  exit 0
fi
note "RESULT: FAIL: $(IFS=';'; echo "${FAILED[*]}")"
exit 1
