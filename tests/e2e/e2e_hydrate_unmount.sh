#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end regression (no silent loss): 'wsnap
# unmount WS' deleted every change of a hydrated workspace without asking.
# Now a workspace whose own upper directory holds changes is refused: exit
# 4, one line saying how many paths changed (singular and plural) with the
# hint, everything still mounted, the changes intact. --discard drops
# them; changes undone (a mode set back, a file made and removed, a file
# rewritten with its own bytes, an mtime alone) leave nothing to lose;
# with --upper DIR unmount goes on and keeps DIR; a workspace whose
# snapshot daemon died cannot be compared, and is refused too. With the
# kernel's overlayfs (as root) and fuse-overlayfs.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

# said N WS: the refusal of a workspace with N changed paths, exactly
said() {
	local p=paths it=them
	[ "$1" = 1 ] && p=path it=it
	printf "wsnap: not unmounted: %s %s changed (keep %s with 'wsnap pack \
WORKSPACE OUT', or drop %s with --discard) in workspace '%s'\n" \
		"$1" "$p" "$it" "$it" "$2" | cmp -s - "$work/stderr" ||
		fail "$kind: refusal of $1: $(cat "$work/stderr")"
}

# intact WS WHAT: after a refusal, all is as it was
intact() {
	local st
	st=$(state_of "$1")
	[ "$(type_at "$1")" = "$fstype" ] && [ -f "$st/state" ] &&
		[ "$(type_at "$st/lower")" = fuse.wsnap ] ||
		fail "$kind: $2: a refused unmount changed something"
}

# changes WS: how many paths 'wsnap diff' lists for the workspace
changes() {
	local out
	out=$("$W" diff "$ar" "$1") || [ $? = 1 ] || fail "$kind: diff failed"
	if [ -z "$out" ]; then echo 0; else printf '%s\n' "$out" | wc -l; fi
}

for kind in $kinds; do
	use_kind $kind

	# ---- no change: unmounted as before ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	cat "$ws/src/pkg/main.py" >/dev/null
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"

	# ---- changes undone: the upper directory is not empty, yet nothing
	# would be lost ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	chmod 600 "$ws/many/f004.txt"
	chmod 644 "$ws/many/f004.txt"
	printf 'tmp\n' >"$ws/src/pkg/tmp.txt"
	rm "$ws/src/pkg/tmp.txt"
	cat "$ws/many/f005.txt" >"$work/f005"
	cat "$work/f005" >"$ws/many/f005.txt"
	touch -d @1000000000 "$ws/many/f006.txt"
	[ -n "$(ls -A "$st/upper")" ] || fail "$kind: nothing was copied up"
	[ "$(changes "$ws")" = 0 ] || fail "$kind: diff lists undone changes"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"

	# ---- changes: refused with nothing changed, the count as diff's ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	printf 'new\n' >"$ws/new.txt"
	expect_rc 4 "$W" unmount "$ws"
	said 1 "$ws"
	intact "$ws" "one change"
	expect_rc 4 "$W" unmount --lazy "$ws"
	said 1 "$ws"
	intact "$ws" "one change, --lazy"
	rm "$ws/many/f000.txt"
	printf 'more\n' >>"$ws/src/pkg/main.py"
	chmod 700 "$ws/bin/python3.11"
	mv "$ws/src/pkg/deep" "$ws/src/deep2"
	n=$(changes "$ws")
	[ "$n" -gt 4 ] || fail "$kind: diff lists $n changes"
	expect_rc 4 "$W" unmount "$ws"
	said "$n" "$ws"
	intact "$ws" "$n changes"
	[ "$(cat "$ws/new.txt")" = new ] && [ ! -e "$ws/many/f000.txt" ] &&
		[ -f "$st/upper/new.txt" ] ||
		fail "$kind: changes lost after a refusal"
	# the hint works: pack keeps them, then --discard drops them
	expect_rc 0 "$W" pack "$ws" "$work/kept-$kind.tar"
	expect_rc 0 "$W" unmount --discard "$ws"
	gone "$ws"
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	[ ! -e "$ws/new.txt" ] && [ -f "$ws/many/f000.txt" ] ||
		fail "$kind: --discard did not drop the changes"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"
	expect_rc 0 "$W" hydrate --overlay $kind "$work/kept-$kind.tar" "$ws"
	[ "$(cat "$ws/new.txt")" = new ] || fail "$kind: the pack lost them"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"

	# ---- --upper DIR: never removed, so never refused ----
	up=$work/upper-$kind
	expect_rc 0 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$ws"
	printf 'kept\n' >"$ws/kept.txt"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"
	[ "$(cat "$up/kept.txt")" = kept ] || fail "$kind: --upper not kept"
	expect_rc 0 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$ws"
	expect_rc 0 "$W" unmount --discard "$ws"
	gone "$ws"
	[ -f "$up/kept.txt" ] || fail "$kind: --discard removed --upper"

	# ---- the snapshot daemon died: the changes cannot be counted ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	printf 'new\n' >"$ws/new.txt"
	pid=$(python3 "$hh" pid "$ws")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	expect_rc 4 "$W" unmount "$ws"
	grep -qx "wsnap: not unmounted: cannot tell what changed (.*; --discard \
drops the changes) in workspace '$ws': .*" "$work/stderr" ||
		fail "$kind: dead snapshot: $(cat "$work/stderr")"
	[ -f "$st/upper/new.txt" ] && [ "$(type_at "$ws")" = "$fstype" ] ||
		fail "$kind: dead snapshot: something changed"
	expect_rc 0 "$W" unmount --discard "$ws"
	gone "$ws"
done

"$W" unmount --help | grep -q -- '--discard' || fail "unmount --help"
echo "PASS: $name ($kinds)"
