#!/usr/bin/env bash
# expect.sh CODE REGEX NO_FILES_DIR COMMAND ARGS...
# Runs COMMAND; fails unless it exits with CODE, its stdout+stderr match REGEX (extended grep,
# empty = anything) and, when NO_FILES_DIR is given, that directory holds no files afterwards.
# Arguments may contain @DATA@ and @EXAMPLES@, replaced by the test data / examples folders,
# and @TMP@, replaced by a fresh temporary directory.
set -u
code=$1; regex=$2; nofiles=$3; shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for a in "$@"; do
  a=${a//@DATA@/$COLLTUNE_TEST_DATA}
  a=${a//@EXAMPLES@/$COLLTUNE_EXAMPLES}
  a=${a//@TMP@/$tmp}
  args+=("$a")
done
nofiles=${nofiles//@TMP@/$tmp}
# A hang is a failure, not a stuck suite: 120 s, longer in sanitizer builds (COLLTUNE_EXPECT_TIMEOUT),
# where a calibration's thousands of pricings run several times slower.
out=$(timeout "${COLLTUNE_EXPECT_TIMEOUT:-120}" "${args[@]}" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$code" ]; then
  echo "expect.sh: exit status $rc, expected $code"; exit 1
fi
if [ -n "$regex" ] && ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "expect.sh: output does not match /$regex/"; exit 1
fi
if [ -n "$nofiles" ] && [ -n "$(find "$nofiles" -type f 2>/dev/null)" ]; then
  echo "expect.sh: files were left in $nofiles:"; find "$nofiles" -type f; exit 1
fi
exit 0
