#!/usr/bin/env bash
# check_exports.sh PLUGIN: passes when the defined dynamic symbols of PLUGIN are exactly the
# tuner structs NCCL looks up (ncclTunerPlugin_v2 .. v6).
set -euo pipefail
expected="ncclTunerPlugin_v2 ncclTunerPlugin_v3 ncclTunerPlugin_v4 ncclTunerPlugin_v5 ncclTunerPlugin_v6"
actual=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ' | sed 's/ $//')
if [[ "$actual" != "$expected" ]]; then
  echo "exported: $actual"
  echo "expected: $expected"
  exit 1
fi
echo "exports: $actual"
