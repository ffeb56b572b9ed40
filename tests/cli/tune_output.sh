#!/usr/bin/env bash
# tune_output.sh COLLTUNE: `colltune tune --out DIR` writes its files as one unit.
#  1. kill trials: tune into a directory holding a complete resnet50 set is killed (SIGKILL,
#     SIGINT, SIGTERM) after a random delay; DIR must then hold every file of one run (all
#     resnet50 or all vgg16), SIGINT/SIGTERM runs must end with 130/143 (or 0 when they
#     finished first) and leave no temporaries; the next run removes what SIGKILL left.
#  2. two concurrent runs into one DIR: both exit 0 and DIR holds one complete set.
#  3. a full disk (a file size limit): exit 2, the message names the file and the reason, and
#     the --out directory the run created is gone.
set -u
colltune=$1
trials=${COLLTUNE_KILL_TRIALS:-12}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tune_output.sh: $*" >&2; exit 1; }
# The names tune writes, as its --json summary lists them (the "files" array, one per line).
files=()
while IFS= read -r f; do files+=("$f"); done < <(
  "$colltune" tune --topology dgx-h100:nodes=2 --model resnet50 --json --out "$tmp/names" 2>/dev/null |
    awk '/"files": \[/ {on = 1; next} on && /\]/ {on = 0} on {gsub(/[",[:space:]]/, ""); n = split($0, p, "/"); print p[n]}')
[ "${#files[@]}" -ge 2 ] || fail "could not read the output file names from tune --json"
rm -rf "$tmp/names"
tune() { "$colltune" tune --topology dgx-h100:nodes=2 --model "$1" --out "$2" > /dev/null 2>&1; }

# The model all the files were written for, or a failure.
set_model() {
  local dir=$1 model=""
  for f in "${files[@]}"; do
    local m=""
    grep -q resnet50 "$dir/$f" 2>/dev/null && m=resnet50
    grep -q vgg16 "$dir/$f" 2>/dev/null && m=${m:+both}${m:-vgg16}
    [ -n "$m" ] && [ "$m" != both ] || fail "$dir/$f is missing or not from one run ($m)"
    [ -z "$model" ] || [ "$model" = "$m" ] || fail "$dir mixes files of $model and $m"
    model=$m
  done
  echo "$model"
}

# Entries that are neither the files' links nor colltune's lock, live link and live generation.
leftovers() {
  local dir=$1 live
  live=$(readlink "$dir/.colltune/current")
  ls -A "$dir" | grep -vxF -e .colltune $(printf -- '-e %s ' "${files[@]}")
  ls -A "$dir/.colltune" | grep -vxF -e lock -e current -e "$live"
}

out=$tmp/out
tune resnet50 "$out" || fail "first run failed"
for sig in KILL INT TERM; do
  for ((t = 0; t < trials; t++)); do
    "$colltune" tune --topology dgx-h100:nodes=2 --model vgg16 --out "$out" > /dev/null 2>&1 &
    pid=$!
    sleep "0.$((RANDOM % 60))"
    kill -s "$sig" "$pid" 2> /dev/null
    wait "$pid"
    rc=$?
    case $sig in
      INT) [ "$rc" = 130 ] || [ "$rc" = 0 ] || fail "SIGINT trial $t: exit status $rc, expected 130" ;;
      TERM) [ "$rc" = 143 ] || [ "$rc" = 0 ] || fail "SIGTERM trial $t: exit status $rc, expected 143" ;;
    esac
    set_model "$out" > /dev/null || exit 1
    if [ "$sig" != KILL ] && [ -n "$(leftovers "$out")" ]; then
      fail "SIG$sig trial $t left: $(leftovers "$out" | tr '\n' ' ')"
    fi
  done
  tune resnet50 "$out" || fail "run after the SIG$sig trials failed"
  [ -z "$(leftovers "$out")" ] || fail "the run after SIG$sig trials left: $(leftovers "$out" | tr '\n' ' ')"
done

conc=$tmp/concurrent
tune resnet50 "$conc" & a=$!
tune vgg16 "$conc" & b=$!
wait "$a" || fail "concurrent run 1 failed"
wait "$b" || fail "concurrent run 2 failed"
set_model "$conc" > /dev/null || exit 1
[ -z "$(leftovers "$conc")" ] || fail "concurrent runs left: $(leftovers "$conc" | tr '\n' ' ')"

full=$tmp/full/new/out
msg=$(bash -c "trap '' XFSZ; ulimit -f 8; exec \"$colltune\" tune --topology dgx-h100:nodes=2 --model resnet50 --out \"$full\"" 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "full disk: exit status $rc, expected 2 ($msg)"
echo "$msg" | grep -Eq "out/[a-z_.]+: cannot write \(File too large\)" || fail "full disk: message '$msg'"
[ ! -e "$tmp/full/new" ] || fail "full disk: the output directory was left behind"
echo "tune_output.sh: ok ($trials trials per signal)"
