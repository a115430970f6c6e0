#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap check' on every archive of the malformed corpus
# (tests/data/malformed, made by tests/data/make_malformed.py), each read
# from the file and from a pipe. For each: the exit code and the first
# stderr line must be exactly those in tests/data/malformed/EXPECTED, any
# further stderr line must be a 'wsnap: hint:', stdout must be empty, and
# peak memory must stay under a bound (the corpus holds decompression bombs
# of up to 40 GiB: they must be refused or read in bounded memory).
# tests/data/run_corpus.py drives the runs.
#   WSNAP_CORPUS_FILTER=REGEX  run only the files matching REGEX
set -euo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
data=$WSNAP_SOURCE_DIR/tests/data

# Peak RSS bound (KiB) for every run. wsnap keeps at most a few MiB of
# headers and the index of a few members here; libarchive's decompressors
# need a few MiB more. Sanitizer builds carry shadow memory and a quarantine:
# shrink the quarantine and allow more.
max_kib=$((64 * 1024))
if ldd "$WSNAP_BIN" 2>/dev/null | grep libasan >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
	max_kib=$((512 * 1024))
fi
exec python3 "$data/run_corpus.py" "$WSNAP_BIN" "$data/malformed" "$max_kib" \
	"${WSNAP_CORPUS_FILTER:-.}"
