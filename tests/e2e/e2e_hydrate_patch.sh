#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap diff -p --binary ARCHIVE WORKSPACE' of a workspace
# hydrated from the rich snapshot: after edits, additions,
# deletions, a mode change, symlink and type changes, a directory renamed
# and a binary file changed in place, the patch read from the upper
# directory is the patch of the full comparison (--full), and git apply
# of it onto an export of the snapshot gives the workspace, as wsnap diff
# sees it; with the kernel's overlayfs (as root) and fuse-overlayfs.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

command -v git >/dev/null || fail "git missing (scripts/deps.sh installs it)"
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_CEILING_DIRECTORIES=$work
mkdir -p "$HOME"
umask 022

# change WS: what a run could do to a workspace, in ways git can carry
change() {
	local ws=$1
	printf 'print("changed")\n' >"$ws/src/pkg/main.py"
	printf 'more\n' >>"$ws/many/f001.txt"
	rm "$ws/many/f002.txt"
	chmod 755 "$ws/many/f003.txt"
	printf 'added\n' >"$ws/added file.txt"
	printf 'tab\n' >"$ws/tab	and"$'\n'"newline"
	ln -sfn python3.11 "$ws/.venv/bin/python"
	rm -r "$ws/src/pkg/deep"
	mkdir -p "$ws/new/dir"
	printf 'new\n' >"$ws/new/dir/file"
	rm "$ws/many/f004.txt"
	ln -s f005.txt "$ws/many/f004.txt"
	mv "$ws/implicit" "$ws/moved"
	printf '\0\1\2' | dd of="$ws/big/multi.bin" bs=1 seek=4096 \
		conv=notrunc status=none
	printf 'bin\0ary\n' >"$ws/new.bin"
}

for kind in $kinds; do
	ws=$work/ws-$kind
	x=$work/x-$kind
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	change "$ws"
	read_from "$ws" "from its upper directory"
	expect_rc 1 "$W" diff --binary "$ar" "$ws" >"$work/p"
	expect_rc 1 "$W" diff --binary --full "$ar" "$ws" >"$work/p.full"
	cmp -s "$work/p" "$work/p.full" ||
		fail "$kind: the patch from the upper directory is not the full one"
	grep -q '^GIT binary patch$' "$work/p" || fail "$kind: no binary patch"
	expect_rc 0 "$W" export "$ar" "$x"
	(cd "$x" && git apply --check <"$work/p" && git apply <"$work/p") \
		>"$work/apply.out" 2>&1 ||
		fail "$kind: git apply: $(cat "$work/apply.out")"
	expect_rc 0 "$W" diff "$x" "$ws" >"$work/left"
	[ ! -s "$work/left" ] || fail "$kind: not the workspace: $(cat "$work/left")"
	expect_rc 0 "$W" unmount --discard "$ws"
	rm -rf "$x"
done
echo "PASS: $name ($kinds)"
