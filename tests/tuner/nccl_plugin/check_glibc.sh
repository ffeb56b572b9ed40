#!/usr/bin/env bash
# check_glibc.sh PLUGIN: passes when PLUGIN loads on glibc 2.17 and later: every symbol version it
# imports is GLIBC_2.17 or older, and it needs no C++ runtime or libgcc_s (which carry versions of
# their own, and which NCCL's process may hold in an older release). NCCL logs a plugin that
# fails to dlopen at INFO only and runs without it, so a newer symbol would silently turn the
# tuning table off where users run NCCL (Ubuntu 22.04: glibc 2.35; RHEL 8: 2.28).
set -euo pipefail
plugin=$1
status=0
newest=$(objdump -T "$plugin" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -1)
echo "newest glibc symbol version: ${newest:-none}"
while read -r version; do
  if [[ -n "$version" ]] && [[ "$(printf '%s\n%s\n' "$version" GLIBC_2.17 | sort -V | tail -1)" != GLIBC_2.17 ]]; then
    echo "too new: $version:"
    objdump -T "$plugin" | grep "$version" | sed 's/^/  /'
    status=1
  fi
done < <(objdump -T "$plugin" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u)
needed=$(objdump -p "$plugin" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')
echo "needs: $needed"
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libm.so.6 | ld-linux-x86-64.so.2 | ld-linux-aarch64.so.1) ;;
    *) echo "needs $lib: the plugin must need nothing beyond libc"; status=1 ;;
  esac
done
if objdump -T "$plugin" | grep -Eq 'GLIBCXX_|CXXABI_|GCC_[0-9]'; then
  echo "imports C++ runtime or libgcc_s symbols:"
  objdump -T "$plugin" | grep -E 'GLIBCXX_|CXXABI_|GCC_[0-9]' | sed 's/^/  /'
  status=1
fi
exit $status
