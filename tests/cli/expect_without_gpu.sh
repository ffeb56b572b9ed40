#!/usr/bin/env bash
# expect_without_gpu.sh: expect.sh for the behaviour of a machine without a GPU (the one-line
# "no CUDA device" errors). On a machine that has a GPU the test is skipped (exit 77, ctest's
# SKIP_RETURN_CODE), saying so: the behaviour it checks cannot happen there.
set -u
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  echo "skipped: this machine has a GPU ($(nvidia-smi -L | head -1))"
  exit 77
fi
exec bash "$(dirname "$0")/expect.sh" "$@"
