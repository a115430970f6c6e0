#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the limits of policy.md section 5, through the wsnap program.
#
# Each limit is reached with its reason and the member that crossed it
# (N allowed, N + 1 not; skipped members do not count; a sparse file counts
# its full size), through its option and at its default. Then the bombs,
# with peak memory and, where the attack was time, CPU time measured
# (tests/data/peakrss.py) against a generous bound, never a timing:
#  - member count: 3,000,000 empty-file headers (1.5 GB) piped in, at the
#    default limit (2,000,000) and at a lowered one;
#  - decompression: a member declaring 100 GiB in front of 40 GiB of zeros
#    (1.3 MB of zstd), the same with a pax size in gzip, and in 10 KB of
#    bzip2, whose data is not decoded once the member is refused;
#  - after the end marker: at most 4 MiB may follow it, from a
#    file or a pipe; 40 GiB of zeros in zstd and 2.4 GiB in 3 KB of bzip2
#    (14 s of CPU when decoded to the end) are refused in milliseconds;
#  - extension headers: 1000 members with 500 KiB pax
#    comments, refused under --max-total-size 0 and by it when exported;
#  - index memory: 50,000 symlinks with 4 KB paths and targets,
#    within the default --max-index-size and refused under a lower one;
#  - decompressor memory: an xz block declaring a 4 GiB
#    dictionary in front of 1 GiB of zeros (190 KB; 1 GB of memory without
#    a limit), the largest dictionary allowed (128 MiB, read in bounded
#    memory) and the next (refused), and the same for zstd windows.
# The figures are printed at the end.
set -uo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
data=$WSNAP_SOURCE_DIR/tests/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
figures=()
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# Memory bounds in KiB. Sanitizer builds: small quarantine, 2x the bounds.
scale=1
if ldd "$WSNAP_BIN" 2>/dev/null | grep libasan >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
	scale=2
fi
small_kib=$((64 * 1024 * scale))
# a decoder at its memory limit (128 MiB window or dictionary) on top
decoder_kib=$(((128 + 1 + 64) * 1024 * scale))
# CPU time (ms) of a bomb that is refused early, start-up included
cpu_ms=$((2000 * scale))
invalid="wsnap: unsafe tar member '<tar>': invalid tar stream"
# 2,000,000 members: the index promises ~100 bytes per member beyond the
# path bytes (README, "Memory"); allow 384 bytes per member while building.
count_kib=$(((2000000 * 384 / 1024 + 64 * 1024) * scale))

# mk FILE EXPR: FILE (in $tmp) gets the bytes of a tarcraft expression.
mk() {
	python3 -c "import sys; sys.path.insert(0, sys.argv[1])
from tarcraft import *
sys.stdout.buffer.write($2)" "$data" >"$tmp/$1" || fail "mk $1"
}

# expect RC MSG ARGS...: runs 'wsnap ARGS', compares exit code and the
# first stderr line (MSG - for an empty stderr).
expect() {
	local want_rc=$1 want=$2 rc first
	shift 2
	"$WSNAP_BIN" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	first=$(head -n 1 "$tmp/err")
	if [ "$rc" -ne "$want_rc" ]; then
		fail "wsnap $*: exit $rc, want $want_rc ($first)"
	elif [ "$want" = - ] && [ -s "$tmp/err" ]; then
		fail "wsnap $*: unexpected stderr: $first"
	elif [ "$want" != - ] && [ "$first" != "$want" ]; then
		fail "wsnap $*: stderr '$first', want '$want'"
	fi
}
msg() { echo "wsnap: unsafe tar member '$1': $2"; }

# measure_cpu LABEL BOUND_KIB BOUND_MS RC MSG CMD...: runs CMD under
# peakrss (stdin is the caller's), checks exit code, first stderr line,
# peak RSS and (BOUND_MS > 0) CPU time, user and system.
measure_cpu() {
	local label=$1 bound=$2 cpu_bound=$3 want_rc=$4 want=$5 rc kib cpu first
	shift 5
	python3 "$data/peakrss.py" "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	first=$(head -n 1 "$tmp/err")
	read -r kib cpu <"$tmp/rss" 2>/dev/null || kib=0 cpu=0
	figures+=("$(printf '%-48s %8d KiB (bound %8d KiB) %7d ms cpu' \
		"$label" "$kib" "$bound" "$cpu")")
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$label: exit $rc, want $want_rc ($first)"
	elif [ "$want" = - ] && [ -s "$tmp/err" ]; then
		fail "$label: unexpected stderr: $first"
	elif [ "$want" != - ] && [ "$first" != "$want" ]; then
		fail "$label: stderr '$first', want '$want'"
	fi
	[ "$kib" -gt 0 ] || fail "$label: no peak RSS measured"
	[ "$kib" -le "$bound" ] || fail "$label: peak RSS $kib KiB > $bound KiB"
	[ "$cpu_bound" -eq 0 ] || [ "$cpu" -le "$cpu_bound" ] ||
		fail "$label: CPU time $cpu ms > $cpu_bound ms"
}
# measure LABEL BOUND_KIB RC MSG CMD...: the same without a CPU bound.
measure() {
	local label=$1 bound=$2
	shift 2
	measure_cpu "$label" "$bound" 0 "$@"
}

# ---------------------------------------------------------------- members
mk m3.tar 'dir("./") + file("a") + file("b") + file("c") + end()'
expect 0 - check --max-members 3 "$tmp/m3.tar"
expect 3 "$(msg c 'archive member count exceeds limit')" \
	check --max-members 2 "$tmp/m3.tar"
expect 0 - check --max-members 2 --skip b "$tmp/m3.tar"
expect 3 "$(msg a 'archive member count exceeds limit')" \
	check --max-members 0 "$tmp/m3.tar"
mk root.tar 'dir("./") + dir(".") + end()'
expect 0 - check --max-members 0 "$tmp/root.tar"

# ---------------------------------------------------------------- total size
mk t.tar 'file("a", b"x" * 10) + file("b", b"y" * 20) + file("c", b"z" * 30)
+ dir("d/") + symlink("d/l", "../a") + end()'
expect 0 - check --max-total-size 60 "$tmp/t.tar"
expect 3 "$(msg c 'archive extracted size exceeds limit')" \
	check --max-total-size 59 "$tmp/t.tar"
expect 0 - check --max-total-size 30 --skip c "$tmp/t.tar"
expect 3 "$(msg b 'archive extracted size exceeds limit')" \
	check --max-total-size 29 --skip c "$tmp/t.tar"
mk sp.tar 'gnu_sparse("sp", [(0, 5), (1000, 0)], 1000, b"hello") + end()'
expect 0 - check --max-total-size 1000 "$tmp/sp.tar"
expect 3 "$(msg sp 'archive extracted size exceeds limit')" \
	check --max-total-size 999 "$tmp/sp.tar"
# the 64 GiB default, with sparse files of 5 stored bytes: 64 GiB less
# their extension headers (a pax header, its body, the map: 1536 bytes)
mk sp64.tar 'pax_sparse_10("sp", [(0, 5), ((64 << 30) - 1536, 0)],
(64 << 30) - 1536, b"hello") + end()'
expect 0 - check "$tmp/sp64.tar"
mk sp64b.tar 'pax_sparse_10("sp", [(0, 5), ((64 << 30) - 1545, 0)],
(64 << 30) - 1545, b"hello") + file("ten", b"0123456789") + end()'
expect 3 "$(msg ten 'archive extracted size exceeds limit')" \
	check "$tmp/sp64b.tar"
# [wsnap] extension headers count with file data: a's pax header and its
# 2014-byte body take 512 + 2048 bytes, so a counts 2570 and b 5 more
mk x.tar 'pax([("comment", "c" * 2000)]) + file("a", b"x" * 10)
+ file("b", b"y" * 5) + end()'
expect 0 - check --max-total-size 2575 "$tmp/x.tar"
expect 3 "$(msg b 'archive extracted size exceeds limit')" \
	check --max-total-size 2574 "$tmp/x.tar"
expect 3 "$(msg a 'archive extracted size exceeds limit')" \
	check --max-total-size 2569 "$tmp/x.tar"
expect 0 - check --max-total-size 5 --skip a "$tmp/x.tar"
# a root entry's too (its members count for nothing else)
mk xr.tar 'pax([("comment", "c" * 2000)]) + dir("./") + end()'
expect 0 - check --max-total-size 2560 --max-members 0 "$tmp/xr.tar"
expect 3 "$(msg . 'archive extracted size exceeds limit')" \
	check --max-total-size 2559 "$tmp/xr.tar"

# ---------------------------------------------------------------- index size
# [wsnap] 96 bytes per entry, its path and NUL, a symlink's target and
# NUL: a/b makes "a" (98) and "a/b" (100), l -> a/b 102 more
mk i.tar 'file("a/b") + symlink("l", "a/b") + end()'
expect 0 - check --max-index-size 300 "$tmp/i.tar"
expect 3 "$(msg l 'archive index size exceeds limit')" \
	check --max-index-size 299 "$tmp/i.tar"
expect 3 "$(msg a/b 'archive index size exceeds limit')" \
	check --max-index-size 197 "$tmp/i.tar"
expect 0 - check --max-index-size 0 --skip a --skip l "$tmp/i.tar"

# ---------------------------------------------------------------- file size
expect 0 - check --max-file-size 30 "$tmp/t.tar"
expect 3 "$(msg c 'file size exceeds limit')" \
	check --max-file-size 29 "$tmp/t.tar"
expect 0 - check --max-file-size 29 --skip c "$tmp/t.tar"
expect 0 - check --max-file-size 1000 "$tmp/sp.tar"
expect 3 "$(msg sp 'file size exceeds limit')" \
	check --max-file-size 999 "$tmp/sp.tar"

# ---------------------------------------------------------------- path length
mk p.tar 'dir("./abc//") + file("./abc//defg") + end()'
expect 0 - check --max-path-length 8 "$tmp/p.tar"
expect 3 "$(msg ./abc//defg 'path too long')" \
	check --max-path-length 7 "$tmp/p.tar"
expect 0 - check --max-path-length 7 --skip abc/defg "$tmp/p.tar"
# the 4096 default: 17 components of 240 bytes and 16 slashes
mk p4096.tar 'pax([("path", "/".join(["x" * 240] * 17))]) + file("a")
+ end()'
expect 0 - check "$tmp/p4096.tar"
long=$(python3 -c 'print("/".join(["x" * 240] * 16 + ["y" * 241]))')
mk p4097.tar "pax([('path', '$long')]) + file('a') + end()"
expect 3 "$(msg "$long" 'path too long')" check "$tmp/p4097.tar"

# ---------------------------------------------------------------- depth
mk d.tar 'file("a/b/c", b"1") + end()'
expect 0 - check --max-depth 3 "$tmp/d.tar"
expect 3 "$(msg a/b/c 'path too deep')" check --max-depth 2 "$tmp/d.tar"
mk d256.tar 'pax([("path", "/".join(["d"] * 256))]) + file("a") + end()'
expect 0 - check "$tmp/d256.tar"
deep=$(python3 -c 'print("/".join(["d"] * 257))')
mk d257.tar "pax([('path', '$deep')]) + file('a') + end()"
expect 3 "$(msg "$deep" 'path too deep')" check "$tmp/d257.tar"

# ---------------------------------------------------------------- bombs
stream=$data/make_stream.py
# (process substitution, not a pipeline: measure must run in this shell)
measure "3M members, --max-members 1000 (pipe)" "$small_kib" 3 \
	"$(msg f0001001 'archive member count exceeds limit')" \
	"$WSNAP_BIN" check --max-members 1000 - \
	< <(python3 "$stream" members 3000000)
measure "3M members, default limit (pipe)" "$count_kib" 3 \
	"$(msg f2000001 'archive member count exceeds limit')" \
	"$WSNAP_BIN" check - < <(python3 "$stream" members 3000000)

bomb=$data/malformed/bomb-declared-100g.tar.zst
measure "100 GiB declared, 40 GiB zeros, zstd (file)" "$small_kib" 3 \
	"$(msg bomb 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check "$bomb" </dev/null
measure "100 GiB declared, 40 GiB zeros, zstd (pipe)" "$small_kib" 3 \
	"$(msg bomb 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check - <"$bomb"
measure "100 GiB pax size, gzip (file)" "$small_kib" 3 \
	"$(msg bomb 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check "$data/malformed/bomb-declared-100g-pax.tar.gz" \
	</dev/null
# the same in 10 KB of bzip2 (40 GiB of zeros, 20 s of CPU to decode): the
# member is judged before its data is decoded, and the reader stops
python3 "$stream" bzip2-declared 1000 >"$tmp/declared.tar.bz2"
measure_cpu "100 GiB declared, 40 GiB zeros, bzip2 (pipe)" "$small_kib" \
	"$cpu_ms" 3 "$(msg bomb 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check - <"$tmp/declared.tar.bz2"
# work after the end marker is bounded: decoding stops 4 MiB past it
python3 "$stream" zeros-after-end 40 >"$tmp/zeros.tar.zst"
measure_cpu "40 GiB zeros after the end marker, zstd" "$small_kib" \
	"$cpu_ms" 3 "$invalid" "$WSNAP_BIN" check "$tmp/zeros.tar.zst" \
	</dev/null
measure "4 GiB zeros in gzip in gzip (nested: refused)" "$small_kib" 3 \
	"wsnap: unsafe tar member '<tar>': invalid tar stream" \
	"$WSNAP_BIN" check "$data/malformed/bomb-after-end.tar.gz.gz" \
	</dev/null
measure "5 x 1 GiB members, 3 GiB total limit" "$small_kib" 3 \
	"$(msg f4 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check --max-total-size 3221225472 \
	"$data/malformed/bomb-total.tar.zst" </dev/null

# ------------------------------------------------- after the end marker
# At most 4 MiB (WSNAP_READER_MAX_TRAILING_BYTES) may follow the end
# marker, from a file (measured by its size) or a pipe (decoded): N and
# N + 1. (The corpus has the same for zstd and bzip2.)
mk small.tar 'dir("d/") + file("d/a", b"hello\n") + end()'
{ cat "$tmp/small.tar" && head -c $((4 << 20)) /dev/zero; } >"$tmp/after4m.tar"
{ cat "$tmp/small.tar" && head -c $(((4 << 20) + 1)) /dev/zero; } \
	>"$tmp/after4m1.tar"
expect 0 - check "$tmp/after4m.tar"
expect 0 - check - <"$tmp/after4m.tar"
expect 3 "$invalid" check "$tmp/after4m1.tar"
expect 3 "$invalid" check - <"$tmp/after4m1.tar"
# 3 KB of bzip2: 60 streams of 40 MiB of zeros after a small archive
python3 "$stream" bzip2-after-end 60 >"$tmp/zeros.tar.bz2"
[ "$(stat -c %s "$tmp/zeros.tar.bz2")" -lt 4096 ] ||
	fail "zeros.tar.bz2 is not 3 KB"
measure_cpu "2.4 GiB zeros after the end, 3 KB of bzip2" "$small_kib" \
	"$cpu_ms" 3 "$invalid" "$WSNAP_BIN" check "$tmp/zeros.tar.bz2" \
	</dev/null
measure_cpu "the same from a pipe" "$small_kib" "$cpu_ms" 3 "$invalid" \
	"$WSNAP_BIN" check - <"$tmp/zeros.tar.bz2"

# ------------------------------------------------- decompressor memory
# xz: liblzma with a 129 MiB memory limit (dictionaries up to 128 MiB)
python3 "$stream" xz-zeros 40 1024 >"$tmp/dict4g.tar.xz"
[ "$(stat -c %s "$tmp/dict4g.tar.xz")" -lt $((256 << 10)) ] ||
	fail "dict4g.tar.xz is not small"
measure_cpu "xz, 4 GiB dictionary declared, 1 GiB zeros" "$small_kib" \
	"$cpu_ms" 3 "$invalid" "$WSNAP_BIN" check "$tmp/dict4g.tar.xz" \
	</dev/null
measure_cpu "the same from a pipe" "$small_kib" "$cpu_ms" 3 "$invalid" \
	"$WSNAP_BIN" check - <"$tmp/dict4g.tar.xz"
python3 "$stream" xz-zeros 30 256 >"$tmp/dict128m.tar.xz"
measure "xz, 128 MiB dictionary, 256 MiB of zeros" "$decoder_kib" 0 - \
	"$WSNAP_BIN" check "$tmp/dict128m.tar.xz" </dev/null
python3 "$stream" xz-zeros 31 256 >"$tmp/dict192m.tar.xz"
measure "xz, 192 MiB dictionary (the next size)" "$small_kib" 3 \
	"$invalid" "$WSNAP_BIN" check "$tmp/dict192m.tar.xz" </dev/null
# zstd: libzstd's default window limit, 128 MiB
python3 "$stream" zstd-zeros 17 0 256 >"$tmp/win128m.tar.zst"
measure "zstd, 128 MiB window, 256 MiB of data" "$decoder_kib" 0 - \
	"$WSNAP_BIN" check "$tmp/win128m.tar.zst" </dev/null
python3 "$stream" zstd-zeros 17 1 256 >"$tmp/win144m.tar.zst"
measure "zstd, 144 MiB window (the next size)" "$small_kib" 3 "$invalid" \
	"$WSNAP_BIN" check "$tmp/win144m.tar.zst" </dev/null

# ------------------------------------------------- extension headers
# 1000 members with 500 KiB pax comments (spilled 500 MB under
# --max-total-size 0): each counts 512 + 512512 bytes of headers
python3 "$stream" pax-comments 1000 500 | zstd -q -c >"$tmp/comments.tar.zst"
[ "$(stat -c %s "$tmp/comments.tar.zst")" -lt $((256 << 10)) ] ||
	fail "comments.tar.zst is not small"
measure_cpu "1000 x 500 KiB pax comments, --max-total-size 0" \
	"$small_kib" "$cpu_ms" 3 \
	"$(msg c0000001 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check --max-total-size 0 "$tmp/comments.tar.zst" \
	</dev/null
measure "the same, default limits (500 MB of headers)" "$small_kib" 0 - \
	"$WSNAP_BIN" check "$tmp/comments.tar.zst" </dev/null

# ------------------------------------------------- index memory
# 50,000 symlinks, paths of 3,864 bytes (one directory of 16 components)
# and targets of 3,999: 96 + 3,865 + 4,000 = 7,961 bytes of index each
# (398 MB; 600 MB peak before the targets were no longer copied).
# The default bound (1 GiB) holds them. Under 64 MiB the directories take
# 16 x 96 + 241 x (1 + ... + 16) = 34,312 bytes, so 8,425 links fit and
# the 8,426th is refused.
python3 "$stream" symlinks 50000 | zstd -q -c >"$tmp/links.tar.zst"
index_kib=$(((1024 + 64) * 1024 * scale))
measure "50,000 symlinks, 4 KB paths and targets" "$index_kib" 0 - \
	"$WSNAP_BIN" check "$tmp/links.tar.zst" </dev/null
link=$(python3 -c 'print("/".join(["x" * 240] * 16) + "/l0008426")')
measure "the same, --max-index-size 64M" $(((64 + 64) * 1024 * scale)) 3 \
	"$(msg "$link" 'archive index size exceeds limit')" \
	"$WSNAP_BIN" check --max-index-size 64M "$tmp/links.tar.zst" </dev/null

# ------------------------------------------------------- disk: export, piped
# From a pipe, export spills the decompressed stream to a temporary file
# (the policy needs every header before the first write). Under a 64 MiB
# cap on any file written (ulimit -f), a bomb must be refused by its limit
# (exit 3), never fill the disk (EFBIG/SIGXFSZ would be exit 4 or 153), and
# zeros after the end marker must not be spilled.
# export_capped RC MSG ARCHIVE ARGS...: export ARCHIVE from a pipe
export_capped() {
	local want_rc=$1 want=$2 ar=$3 rc first
	shift 3
	rm -rf "$tmp/dest"
	(ulimit -f 65536 && exec "$WSNAP_BIN" export "$@" - "$tmp/dest") \
		<"$ar" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	first=$(head -n 1 "$tmp/err")
	if [ "$rc" -ne "$want_rc" ]; then
		fail "export $* < $(basename "$ar"): exit $rc, want $want_rc ($first)"
	elif [ "$want" != - ] && [ "$first" != "$want" ]; then
		fail "export $* < $(basename "$ar"): '$first', want '$want'"
	fi
}
export_capped 3 "$(msg bomb 'archive extracted size exceeds limit')" "$bomb"
export_capped 3 "$(msg bomb 'archive extracted size exceeds limit')" \
	"$data/malformed/bomb-declared-100g-pax.tar.gz"
export_capped 3 "$(msg f1 'archive extracted size exceeds limit')" \
	"$data/malformed/bomb-total.tar.zst" --max-total-size 33554432
# headers count: 32 MiB take 65 members of 513,024 header bytes
export_capped 3 "$(msg c0000066 'archive extracted size exceeds limit')" \
	"$tmp/comments.tar.zst" --max-total-size 32M
export_capped 3 "$invalid" "$tmp/zeros.tar.zst"
export_capped 0 - "$tmp/after4m.tar"
[ "$(cat "$tmp/dest/d/a" 2>/dev/null)" = hello ] ||
	fail "export after 4 MiB of trailing zeros: d/a missing"

echo "e2e_limits: peak memory of the bombs:"
printf '  %s\n' "${figures[@]}"
echo "e2e_limits: $fails failures"
[ "$fails" -eq 0 ]
