#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap diff ARCHIVE WORKSPACE' of a hydrated workspace reads
# only the upper directory, and answers exactly as the full comparison
# (--full, through the overlay) in every output format: after rounds of
# random changes (files, modes, mtimes, renames of files and directories,
# whiteouts, opaque and redirected directories, symlinks), under a --skip
# policy, and for a workspace the policy rejects; with the kernel's
# overlayfs (as root) and fuse-overlayfs. A workspace whose archive changed
# since it was hydrated, or read under another policy, is compared in full.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

for kind in $kinds; do
	ws=$work/ws-$kind
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	same_as_full "$ws"
	expect_rc 0 "$W" diff "$ar" "$ws"
	for round in 1 2 3 4 5 6; do
		python3 "$hh" churn "$ws" $round 25 >/dev/null ||
			fail "$kind: churn round $round"
		same_as_full "$ws"
	done
	# the policy rejects what the workspace became: both say so alike
	ln -s /etc/passwd "$ws/evil"
	same_as_full "$ws"
	expect_rc 3 "$W" diff "$ar" "$ws"
	grep -q "unsafe tar member './evil'" "$work/stderr" ||
		fail "$kind: rejection: $(cat "$work/stderr")"
	rm "$ws/evil"
	# another policy than the workspace's: compared in full
	read_from "$ws" "as a directory" --max-depth 100
	expect_rc 0 "$W" unmount --discard "$ws"

	# a --skip policy, the same for hydrate and diff
	expect_rc 0 "$W" hydrate --overlay $kind --skip many "$ar" "$ws"
	mkdir -p "$ws/many"
	printf 'skipped\n' >"$ws/many/x"
	printf 'seen\n' >"$ws/y"
	rm -r "$ws/src/pkg"
	same_as_full "$ws" --skip many
	read_from "$ws" "as a directory"
	expect_rc 0 "$W" unmount --discard "$ws"

	# the archive changed since: compared in full
	cp "$ar" "$work/copy.tar"
	expect_rc 0 "$W" hydrate --overlay $kind "$work/copy.tar" "$ws"
	touch "$work/copy.tar"
	"$W" diff -v "$work/copy.tar" "$ws" >/dev/null 2>"$work/v.err" || true
	grep -q "read as a directory" "$work/v.err" ||
		fail "$kind: a changed archive was trusted: $(cat "$work/v.err")"
	expect_rc 0 "$W" unmount "$ws"
done
echo "PASS: $name ($kinds)"
