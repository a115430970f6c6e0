#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds wsnap and runs the whole test suite.
#   WSNAP_SANITIZE=address,undefined  build with sanitizers (own build dir)
#   WSNAP_BUILD_DIR=dir               where to build (default build, or
#                                     build-asan with sanitizers)
#   WSNAP_PACKAGE_TEST=1              also install dpkg-dev, debhelper and
#                                     lintian; e2e_package then must run
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
san=${WSNAP_SANITIZE:-}
dir=${WSNAP_BUILD_DIR:-build${san:+-asan}}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DWSNAP_WERROR=ON -DWSNAP_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
