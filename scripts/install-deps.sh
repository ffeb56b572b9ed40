#!/usr/bin/env bash
# Installs the Debian packages colltune needs to build and test, when they are missing.
# Idempotent: does nothing (and needs no network) when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost-graph-dev      # topology graph, shortest/widest paths; Boost.PropertyTree parses NCCL XML
  nlohmann-json3-dev      # topology / workload / result JSON
  libopenmpi-dev openmpi-bin  # mpi transport, MPI_Allreduce baseline
  libgtest-dev libgmock-dev   # tests
  libbenchmark-dev        # micro-benchmarks
  libcli11-dev            # command line
  libeigen3-dev           # Gaussian process in the Bayesian optimiser
  libyaml-cpp-dev         # Horovod YAML emitter and its tests
  libhwloc-dev            # topo detect: CPU sockets and cores (optional: sysfs fallback)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
