#!/usr/bin/env bash
# Golden outputs: runs every command of commands.txt with the colltune binary and compares its
# stdout (and, for tune, every file it writes) with expected/NN.out.
#   golden.sh check  COLLTUNE   compare; prints a diff and exits 1 on the first difference
#   golden.sh record COLLTUNE   rewrite expected/ from the current binary
# Volatile text is normalised first: the output directory's path and the search's wall time;
# numbers are compared to 12 significant digits (floating-point noise below that, from a
# different but equivalent order of operations, is not a change of result).
set -uo pipefail
mode=${1:?check|record}
colltune=${2:?path to colltune}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

normalise() { sed -e "s#$work/[0-9]*#OUT#g" -e 's#^NCCL_TUNER_PLUGIN=/.*/#NCCL_TUNER_PLUGIN=PLUGIN_DIR/#' -e 's/"search_ms": *[0-9.e+-]*/"search_ms": X/g' \
                  -e 's/evaluated in [0-9.]* ms/evaluated in X ms/g' |
              perl -pe 's/(?<![\w.])(-?\d+\.\d+(?:[eE][-+]?\d+)?)/sprintf("%.12g", $1)/ge'; }

# Runs command line $2 (numbered $1) and prints everything it produced.
run_one() {
  local n=$1 line=$2 out="$work/$1"
  mkdir -p "$out"
  local -a args
  read -r -a args <<<"${line//OUT/$out/files}"
  echo "\$ colltune $line"
  # Progress lines (stderr, every few seconds when it is not a terminal) depend on the machine's speed.
  "$colltune" "${args[@]}" >"$out/output" 2>&1
  local rc=$?
  grep -v '^colltune: progress: ' "$out/output"
  echo "exit $rc"
  if [ -d "$out/files" ]; then
    for f in $(ls "$out/files" | sort); do
      echo "--- $f"
      cat "$out/files/$f"
    done
  fi
}

n=0
status=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  id=$(printf '%02d' "$n")
  actual=$(run_one "$id" "$line" | normalise)
  expected="$here/expected/$id.out"
  if [ "$mode" = record ]; then
    mkdir -p "$here/expected"
    printf '%s\n' "$actual" >"$expected"
  elif ! diff -u "$expected" <(printf '%s\n' "$actual") | head -40; then
    echo "golden: output of command $id changed: colltune $line"
    status=1
  fi
done <"$here/commands.txt"
[ "$mode" = record ] && echo "golden: recorded $n outputs in $here/expected"
exit $status
