#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: bench/run.sh --quick against the built wsnap, in a temporary
# work dir. It must exit 0 whatever stage the subcommands are at (a missing
# or failing one is an 'n/a' row), print the machine line and every
# section's tables with well-formed rows (section 9's through an nginx of
# its own, gone afterwards), write the same report with --out,
# measure the peers for real, and leave no mount and no generated data
# behind. Also: a bad --sections is a usage error.
set -euo pipefail
: "${WSNAP_BIN:?}"
src=${WSNAP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() {
	echo "FAIL: $*" >&2
	[ ! -s "${tmp:-}/stderr" ] || tail -20 "$tmp/stderr" >&2
	exit 1
}

tmp=$(mktemp -d /tmp/wsnap-bench-smoke.XXXXXX)
cleanup() {
	# Only if run.sh itself failed to: whatever is mounted in our tree.
	awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

rc=0
bash "$src/bench/run.sh" --sections 2,6 --workdir "$tmp/w0" \
	>/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--sections 2,6 exits $rc, want 2"

rc=0
t0=$SECONDS
timeout 90 bash "$src/bench/run.sh" --quick --workdir "$tmp/work" \
	--out "$tmp/report.md" --wsnap "$WSNAP_BIN" \
	>"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
[ "$rc" -ne 124 ] || fail "run.sh --quick took over 90 s"
[ "$rc" -eq 0 ] || fail "run.sh --quick exits $rc"
out=$tmp/stdout

grep -q '^# wsnap benchmark' "$out" || fail "no title"
grep -Eq '^- machine: .*[0-9]+ cores, .* RAM, kernel .* on ' "$out" ||
	fail "no machine line"
for s in 2 3 4 5 7 8 9 10; do
	grep -q "^## $s\. " "$out" || fail "no section $s"
done
header='| tool | wall s | peak MiB | ratio vs wsnap | target | met | runs |'
n=$(grep -cxF "$header" "$out")
[ "$n" -eq 34 ] || fail "$n tables, want 34 (2a-d, 3a-l, 4a-b, 5a-b, 7a-b, 8a, 9b, 9d-e, 10a-h)"
counts='| measure | requests | bytes | wall s | target | met | runs |'
n=$(grep -cxF "$counts" "$out")
[ "$n" -eq 3 ] || fail "$n tables of counts, want 3 (9a, 9c, 9f)"

# Every row has the 7 cells; every wall cell is a number, 'over N s' or
# 'n/a (reason)'; in a table of counts, so is its third cell, and the
# requests and bytes before it are numbers, or '-' where not measured.
bad=$(awk -F' [|] ' '/^## Targets/ { exit }
	/^\| tool \|/ { w = 2; next }
	/^\| measure \|/ { w = 4; next }
	/^\| / && !/^\| ---/ {
	if (NF != 7) { print "cells: " $0; next }
	if ($w !~ /^([0-9]+\.[0-9]+|over [0-9.]+ s|n\/a \(.+\))$/)
		print "wall: " $0
	if (w == 4 && ($2 !~ /^([0-9]+|-)$/ || $3 !~ /^([0-9]+|-)$/))
		print "counts: " $0 }' "$out")
[ -z "$bad" ] || fail "malformed rows: $bad"

# The summary lists every target (36) with what was measured.
n=$(sed -n '/^## Targets/,$p' "$out" | grep -cE '^\| [0-9]+[a-z] \|') || true
[ "$n" -eq 36 ] || fail "$n rows in the summary of targets, want 36"
grep -Eq '^[0-9]+ of 36 targets met' "$out" || fail "no count of targets met"

# The peers are measured for real, not reported n/a.
for peer in 'GNU tar -tf' 'bsdtar -tf' 'Python tarfile (all members)' \
	'GNU tar -x' 'diff -r of the two exported trees' 'GNU tar -c' \
	'git diff --no-index of the two trees' 'curl -r 0-0 URL (one request)' \
	'curl -o /dev/null URL (the whole object)' 'curl URL piped to tar -x' 'zstd -dc >/dev/null' \
	'gzip -dc >/dev/null'; do
	grep -Eq "^\| $(printf '%s' "$peer" | sed 's/[().]/\\&/g') \| [0-9]+\.[0-9]+ \| [0-9.]+ \|" \
		"$out" || fail "peer '$peer' has no measured row"
done
grep -Eq "^\| curl: their data's byte ranges, one connection \| [0-9]+ \| [0-9]+ \| [0-9]+\.[0-9]+ \|" \
	"$out" || fail "no counted curl row (9c)"
# A wsnap row is either measured or says why not.
grep -Eq '^\| wsnap check \| ([0-9]+\.[0-9]+|n/a \(.+\)) \|' "$out" ||
	fail "no wsnap check row"
grep -Eq '^\| wsnap mount URL \+ ls \| ([0-9]+ \| [0-9]+ \| [0-9]+\.[0-9]+|- \| - \| n/a \(.+\)) \|' \
	"$out" || fail "no wsnap row in 9a"

cmp -s "$out" "$tmp/report.md" || fail "--out report differs from stdout"
if awk -v p="$tmp/" 'index($5, p) == 1 { f = 1 } END { exit !f }' \
	/proc/self/mountinfo; then
	fail "mounts left behind under $tmp"
fi
! pgrep -f "$tmp/work/" >/dev/null ||
	fail "processes left behind (section 9's nginx?): $(pgrep -af "$tmp/work/")"
[ ! -e "$tmp/work" ] || [ -z "$(ls -A "$tmp/work")" ] ||
	fail "generated data left behind: $(ls -A "$tmp/work")"
echo "e2e_bench_smoke: ok ($(grep -c '^| ' "$out") table lines, $((SECONDS - t0)) s)"
