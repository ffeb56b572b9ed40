#!/usr/bin/env bash
# install_and_consume.sh BUILD_DIR CONSUMER_SRC: installs the build into a temporary prefix,
# builds the consumer project against it with find_package(colltune), and runs it. Also checks
# that the NCCL tuner plugin is installed and that the installed colltune's nccl.env names it.
set -euo pipefail
build=$1; consumer=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/colltune"
plugin=$(ls "$tmp"/prefix/lib*/libcolltune-nccl-tuner.so)
"$tmp/prefix/bin/colltune" tune --topology dgx-h100:nodes=2 --model resnet50 \
  --strategy random --budget 3 --out "$tmp/tuned" >/dev/null
grep -qx "NCCL_TUNER_PLUGIN=$plugin" "$tmp/tuned/nccl.env"
grep -qx "NCCL_TUNER_CONFIG_FILE=$tmp/tuned/nccl_tuner.conf" "$tmp/tuned/nccl.env"
echo "plugin: $plugin"
cmake -S "$consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j2 >/dev/null
out=$("$tmp/build/consumer")
echo "$out"
echo "$out" | grep -Eq '^ranks=16 steps=[0-9]+ predicted_us=[0-9.]+$'
