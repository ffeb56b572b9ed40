#!/usr/bin/env bash
# Runs every command of the README's ```sh blocks as printed, with the built colltune first on
# PATH, in a scratch directory that sees the repository's examples/ and tests/. A command passes when it
# exits 0. Not run here, each for its reason:
#  - make ...        : the quick start itself (CI runs make test; make demo has its own test);
#  - export PATH=... : this script puts the built colltune on PATH;
#  - horovodrun ...  : Horovod is not a dependency of colltune;
#  - lines piping into `dot` when Graphviz is not installed (it is optional), and mpirun lines
#    when MPI is not installed (the build then has no MPI transport).
# Usage: readme_commands.sh README.md path/to/colltune
set -uo pipefail
readme=$(realpath "$1")
colltune=$(realpath "$2")
repo=$(dirname "$readme")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$repo/examples" "$scratch/examples"
ln -s "$repo/tests" "$scratch/tests"  # the published nccl-tests logs the README calibrates on
export PATH="$(dirname "$colltune"):$PATH"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

# The commands: lines of ```sh blocks, trailing "# comment" removed.
mapfile -t commands < <(awk '/^```sh$/ {inblock=1; next} /^```/ {inblock=0} inblock && NF' "$readme" |
                        sed -E 's/[[:space:]]+#[[:space:]].*$//')
ran=0 failed=0
for cmd in "${commands[@]}"; do
  case "$cmd" in
    make\ *|make|export\ PATH=*|horovodrun\ *) continue ;;
  esac
  if [[ "$cmd" == *"| dot"* ]] && ! command -v dot >/dev/null; then echo "skip (no graphviz): $cmd"; continue; fi
  if [[ "$cmd" == mpirun* ]] && ! command -v mpirun >/dev/null; then echo "skip (no MPI): $cmd"; continue; fi
  ran=$((ran + 1))
  if (cd "$scratch" && timeout 300 bash -c "$cmd" >"$scratch/out.txt" 2>&1); then
    echo "ok: $cmd"
  else
    echo "FAILED (exit $?): $cmd"; sed 's/^/    /' "$scratch/out.txt" | tail -20
    failed=$((failed + 1))
  fi
done
echo "$ran README commands run, $failed failed"
[ "$ran" -gt 0 ] && [ "$failed" -eq 0 ]
