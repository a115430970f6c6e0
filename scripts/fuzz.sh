#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (clang, AddressSanitizer + UBSan) in
# build-fuzz and runs each for SECONDS (default 60; CI runs 'fuzz.sh 60').
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      default: every built target
#
#   WSNAP_FUZZ_CORPUS_DIR=DIR  persistent corpus, one subdirectory per target
#                              (default build-fuzz/corpus); new inputs are
#                              added there, fuzz/corpus/seed is read-only
#   WSNAP_FUZZ_ARGS="..."      more libFuzzer flags, e.g. "-jobs=4 -workers=4"
#
# Crashes, leaks, timeouts and OOMs are written to build-fuzz/artifacts/
# TARGET/ and make the script fail; reproduce one with
# 'build-fuzz/fuzz/TARGET FILE'. Afterwards fuzz/tarfile_diff.py compares
# wsnap with Python's tarfile and GNU tar (listing and extracting) on every
# input of the corpus that wsnap accepts; a difference fails the script
# too.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;; esac

scripts/deps.sh
dir=build-fuzz
CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DWSNAP_FUZZ=ON -DWSNAP_TESTS=OFF >/dev/null
cmake --build "$dir" -j2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	# every target of fuzz/CMakeLists.txt's WSNAP_FUZZERS list
	for t in $(sed -n 's/^set(WSNAP_FUZZERS \(.*\))$/\1/p' \
		fuzz/CMakeLists.txt); do
		[ -x "$dir/fuzz/$t" ] && targets+=("$t")
	done
	[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets built" >&2; exit 1; }
fi

corpus_root=${WSNAP_FUZZ_CORPUS_DIR:-$dir/corpus}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:quarantine_size_mb=64}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
	corpus=$corpus_root/$t
	artifacts=$dir/artifacts/$t
	mkdir -p "$corpus" "$artifacts"
	echo "== $t: ${secs}s, corpus $corpus"
	# -max_len: big enough for a few members and their extended headers;
	# -timeout: a single input may legitimately inflate ~1 GiB of zeros.
	# shellcheck disable=SC2086
	if ! "$dir/fuzz/$t" -max_total_time="$secs" -max_len=32768 \
		-timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
		-dict=fuzz/tar.dict -artifact_prefix="$artifacts/" \
		${WSNAP_FUZZ_ARGS:-} "$corpus" fuzz/corpus/seed; then
		echo "FAIL: $t found a problem: see $artifacts/" >&2
		status=1
	fi
done
# Parser differentials: whatever wsnap accepts, Python's tarfile (the
# reference's reader) and GNU tar must read alike, over the seeds and what
# was found.
if [ -d "$corpus_root/fuzz_index" ]; then
	echo "== tarfile_diff over the fuzz_index corpus"
	python3 fuzz/tarfile_diff.py "$dir/tools/wsnap" fuzz/corpus/seed \
		"$corpus_root/fuzz_index" || status=1
fi
exit $status
