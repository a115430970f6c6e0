#!/usr/bin/env bash
# End-to-end: the limits of policy.md section 5, through the wsnap program.
#
# Each limit is reached with its reason and the member that crossed it
# (N allowed, N + 1 not; skipped members do not count; a sparse file counts
# its full size), through its option and at its default. Then the bombs,
# with peak memory measured (tests/data/peakrss.py) against a generous
# bound, never a timing:
#  - member count: 3,000,000 empty-file headers (1.5 GB) piped in, at the
#    default limit (2,000,000) and at a lowered one;
#  - decompression: a member declaring 100 GiB in front of 40 GiB of zeros
#    (1.3 MB of zstd), the same with a pax size in gzip, and 40 GiB of plain
#    zeros after the end marker, which is read to the end of the stream.
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

# measure LABEL BOUND_KIB RC MSG CMD...: runs CMD under peakrss (stdin is
# the caller's), checks exit code, first stderr line and peak RSS.
measure() {
	local label=$1 bound=$2 want_rc=$3 want=$4 rc kib first start ms
	shift 4
	start=$(date +%s%N)
	python3 "$data/peakrss.py" "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	first=$(head -n 1 "$tmp/err")
	kib=$(cat "$tmp/rss" 2>/dev/null || echo 0)
	figures+=("$(printf '%-44s %8d KiB (bound %8d KiB) %7d ms' \
		"$label" "$kib" "$bound" "$ms")")
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$label: exit $rc, want $want_rc ($first)"
	elif [ "$want" = - ] && [ -s "$tmp/err" ]; then
		fail "$label: unexpected stderr: $first"
	elif [ "$want" != - ] && [ "$first" != "$want" ]; then
		fail "$label: stderr '$first', want '$want'"
	fi
	[ "$kib" -gt 0 ] || fail "$label: no peak RSS measured"
	[ "$kib" -le "$bound" ] || fail "$label: peak RSS $kib KiB > $bound KiB"
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
# the 64 GiB default, with sparse files of 5 stored bytes
mk sp64.tar 'pax_sparse_10("sp", [(0, 5), (64 << 30, 0)], 64 << 30,
b"hello") + end()'
expect 0 - check "$tmp/sp64.tar"
mk sp64b.tar 'pax_sparse_10("sp", [(0, 5), ((64 << 30) - 9, 0)],
(64 << 30) - 9, b"hello") + file("ten", b"0123456789") + end()'
expect 3 "$(msg ten 'archive extracted size exceeds limit')" \
	check "$tmp/sp64b.tar"

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
python3 "$stream" zeros-after-end 40 >"$tmp/zeros.tar.zst"
measure "40 GiB zeros after the end marker, zstd" "$small_kib" 0 - \
	"$WSNAP_BIN" check "$tmp/zeros.tar.zst" </dev/null
# the same cut by one byte: refused, so the zeros really were read through
head -c -1 "$tmp/zeros.tar.zst" >"$tmp/zeros-cut.tar.zst"
measure "40 GiB zeros after the end, last byte cut" "$small_kib" 3 \
	"wsnap: unsafe tar member '<tar>': invalid tar stream" \
	"$WSNAP_BIN" check "$tmp/zeros-cut.tar.zst" </dev/null
measure "4 GiB zeros in gzip in gzip (nested: refused)" "$small_kib" 3 \
	"wsnap: unsafe tar member '<tar>': invalid tar stream" \
	"$WSNAP_BIN" check "$data/malformed/bomb-after-end.tar.gz.gz" \
	</dev/null
measure "5 x 1 GiB members, 3 GiB total limit" "$small_kib" 3 \
	"$(msg f4 'archive extracted size exceeds limit')" \
	"$WSNAP_BIN" check --max-total-size 3221225472 \
	"$data/malformed/bomb-total.tar.zst" </dev/null

# ------------------------------------------------------- disk: export, piped
# From a pipe, export spills the decompressed stream to a temporary file
# (the policy needs every header before the first write). Under a 64 MiB
# cap on any file written (ulimit -f), a bomb must be refused by its limit
# (exit 3), never fill the disk (EFBIG/SIGXFSZ would be exit 4 or 153), and
# 40 GiB of zeros after the end marker must not be spilled at all.
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
export_capped 0 - "$tmp/zeros.tar.zst"
[ "$(cat "$tmp/dest/d/a" 2>/dev/null)" = hello ] ||
	fail "export after 40 GiB of trailing zeros: d/a missing"

echo "e2e_limits: peak memory of the bombs:"
printf '  %s\n' "${figures[@]}"
echo "e2e_limits: $fails failures"
[ "$fails" -eq 0 ]
