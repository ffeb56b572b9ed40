#!/usr/bin/env bash
# `--json [FILE]` means the same on every command that has it: `--json` and `--json -` print
# JSON instead of the text; `--json FILE` prints the text and writes the JSON to FILE.
# Usage: json_convention.sh path/to/colltune
set -uo pipefail
colltune=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

check() {  # check NAME TEXT_REGEX -- ARGS...
  local name=$1 text=$2
  shift 3
  for form in "--json" "--json -"; do
    # shellcheck disable=SC2086
    out=$("$colltune" "$@" $form 2>/dev/null) || fail "$name $form: exit $?"
    [[ "$out" =~ ^[[:space:]]*[\[\{] ]] || fail "$name $form: output is not JSON: ${out:0:80}"
    grep -Eq "$text" <<<"$out" && fail "$name $form: the text was printed too"
  done
  out=$("$colltune" "$@" --json "$dir/$name.json" 2>&1) || fail "$name --json FILE: exit $?"
  grep -Eq "$text" <<<"$out" || fail "$name --json FILE: no text on stdout"
  [[ "$(head -c1 "$dir/$name.json" 2>/dev/null)" =~ [\[\{] ]] || fail "$name --json FILE: $dir/$name.json is not JSON"
}

check algos "^id +collective" -- algos
check topo_show "^slowest rank-to-rank route" -- topo show dgx-h100
check step "^scaling efficiency" -- step --topology dgx-h100 --model resnet50
check simulate "^# colltune simulate" -- simulate --topology dgx-h100 --algo ring --bytes 1MiB
check tune "^tuned resnet50" -- tune --topology dgx-h100 --model resnet50 --out "$dir/tuned"
check sweep "^# colltune sweep" -- sweep --topology dgx-h100 --model resnet50 --vary nodes=1,2
check bench "^# Avg bus bandwidth" -- bench --ranks 2 -b 1K -e 1K -n 1 -w 0

[ "$failures" -eq 0 ] && echo "json convention: ok"
exit "$failures"
