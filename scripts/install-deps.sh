#!/usr/bin/env bash
# Installs the Debian packages hpc-batch builds and tests with. Idempotent;
# skips apt entirely when everything is already there.
set -euo pipefail
# dpkg-dev and file: cpack -G DEB works out the .deb's library dependencies
# with dpkg-shlibdeps, and CPack finds the ELF files to give it with `file`.
# strace: a root test traces the executor to hold its seccomp list exact.
# clang-format and clang-tidy: scripts/lint.sh. lintian: the .deb's check.
#
#   scripts/install-deps.sh [--build-only]
#
# --build-only: what building the four programs needs (the quick start).
packages=(cmake ninja-build g++ pkg-config libseccomp-dev libcap-ng-dev libcereal-dev
          libcli11-dev libgtest-dev libgmock-dev passwd util-linux)
if [ "${1:-}" != --build-only ]; then
  packages+=(clang dpkg-dev file strace clang-format clang-tidy lintian)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
