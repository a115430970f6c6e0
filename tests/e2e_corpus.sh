#!/usr/bin/env bash
# End-to-end: 'wsnap check' on every archive of the malformed corpus
# (tests/data/malformed, made by tests/data/make_malformed.py), each read
# from the file and from a pipe. For each: the exit code and the first
# stderr line must be exactly those in tests/data/malformed/EXPECTED, any
# further stderr line must be a 'wsnap: hint:', stdout must be empty, and
# peak memory must stay under a bound (the corpus holds decompression bombs
# of up to 40 GiB: they must be refused or read in bounded memory).
#   WSNAP_CORPUS_FILTER=REGEX  run only the files matching REGEX
set -uo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
dir=$WSNAP_SOURCE_DIR/tests/data/malformed
peakrss=$WSNAP_SOURCE_DIR/tests/data/peakrss.py
filter=${WSNAP_CORPUS_FILTER:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Peak RSS bound (KiB) for every run. wsnap keeps at most a few MiB of
# headers and the index of a few members here; libarchive's decompressors
# need a few MiB more. Sanitizer builds carry shadow memory and a quarantine:
# shrink the quarantine and allow more.
max_kib=$((64 * 1024))
if ldd "$WSNAP_BIN" 2>/dev/null | grep libasan >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
	max_kib=$((512 * 1024))
fi

# Until 'wsnap check' exists there is nothing to test: say so loudly.
"$WSNAP_BIN" check "$dir/base.tar" 2>"$tmp/probe" >/dev/null
if grep -q 'not implemented' "$tmp/probe"; then
	echo "e2e_corpus: SKIP: wsnap check is not implemented yet"
	exit 0
fi

fails=0
runs=0
worst_kib=0
worst_file=
report() {
	echo "FAIL: $1 ($2): $3" >&2
	fails=$((fails + 1))
}

# check_one FILE MODE RC OPTS MSG
check_one() {
	local file=$1 mode=$2 want_rc=$3 opts=$4 want=$5 rc kib first rest
	local -a args=()
	[ "$opts" != - ] && read -r -a args <<<"$opts"
	if [ "$mode" = file ]; then
		timeout 300 python3 "$peakrss" "$tmp/rss" "$WSNAP_BIN" check \
			"${args[@]}" "$dir/$file" >"$tmp/out" 2>"$tmp/err"
		rc=$?
	else
		cat "$dir/$file" | timeout 300 python3 "$peakrss" "$tmp/rss" \
			"$WSNAP_BIN" check "${args[@]}" - >"$tmp/out" 2>"$tmp/err"
		rc=$?
	fi
	runs=$((runs + 1))
	if [ "$rc" -ne "$want_rc" ]; then
		report "$file" "$mode" "exit $rc, want $want_rc; stderr: $(head -c 300 "$tmp/err")"
		return
	fi
	if [ -s "$tmp/out" ]; then
		report "$file" "$mode" "unexpected stdout: $(head -c 200 "$tmp/out")"
	fi
	if [ "$want" = - ]; then
		if [ -s "$tmp/err" ]; then
			report "$file" "$mode" "unexpected stderr: $(head -c 300 "$tmp/err")"
		fi
	else
		first=$(head -n 1 "$tmp/err")
		if [ "$first" != "$want" ]; then
			report "$file" "$mode" "stderr '$first', want '$want'"
		fi
		rest=$(tail -n +2 "$tmp/err" | grep -v '^wsnap: hint: ' || true)
		if [ -n "$rest" ]; then
			report "$file" "$mode" "extra stderr: $rest"
		fi
	fi
	kib=$(cat "$tmp/rss")
	if [ "$kib" -gt "$worst_kib" ]; then
		worst_kib=$kib
		worst_file="$file ($mode)"
	fi
	if [ "$kib" -gt "$max_kib" ]; then
		report "$file" "$mode" "peak RSS ${kib} KiB > ${max_kib} KiB"
	fi
}

lines=0
while IFS=$'\t' read -r file rc opts msg; do
	case $file in '' | '#'*) continue ;; esac
	[[ $file =~ $filter ]] || continue
	lines=$((lines + 1))
	if [ ! -f "$dir/$file" ]; then
		report "$file" - "missing from $dir"
		continue
	fi
	check_one "$file" file "$rc" "$opts" "$msg"
	check_one "$file" pipe "$rc" "$opts" "$msg"
done <"$dir/EXPECTED"

[ "$lines" -gt 0 ] || { echo "FAIL: no corpus entries" >&2; exit 1; }
echo "e2e_corpus: $runs runs over $lines archives, $fails failures;" \
	"peak RSS ${worst_kib} KiB ($worst_file)"
[ "$fails" -eq 0 ]
