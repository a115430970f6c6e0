#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap hydrate' of a rich snapshot, with the kernel's overlayfs
# (as root) and with fuse-overlayfs: the workspace reads like the archive
# (and like 'wsnap ls --json'); a file modified, a mode changed, files added,
# deleted and renamed, a directory renamed, deleted and made again, a file
# replaced by a symlink, a file copied up unchanged; 'wsnap diff' lists
# exactly those changes; 'wsnap pack' of the workspace passes check, exports
# to the same tree and equals byte for byte the pack of an exported copy
# changed alike; unmount leaves no mount and no state; an unsafe archive and
# a non-empty workspace are refused; busy, --lazy, --upper kept and reused;
# daemons killed with SIGKILL are cleared by 'wsnap unmount'. What unmount
# refuses to lose is e2e_hydrate_unmount's.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

# implemented CMD: false while CMD is still a stub on main
implemented() {
	local out
	out=$("$W" "$@" 2>&1) || true
	case $out in *"not implemented yet"*) return 1 ;; esac
}

# The changes of the test, applied alike to a workspace and to an
# exported copy; every node they touch gets a fixed mtime, so that the two
# trees pack alike.
modify() {
	local d=$1 p
	printf 'print("changed")\n' >>"$d/src/pkg/main.py"
	chmod 700 "$d/bin/python3.11"
	printf 'new\n' >"$d/new.txt"
	rm "$d/many/f000.txt"
	mv "$d/many/f001.txt" "$d/many/renamed.txt"
	mv "$d/src/pkg/deep" "$d/src/deep2"
	rm "$d/.venv/pyvenv.cfg"
	ln -s ../bin/python3.11 "$d/.venv/pyvenv.cfg"
	# copied up (or rewritten) with the very same bytes: no change
	cat "$d/many/f002.txt" >"$d/f002.tmp"
	cat "$d/f002.tmp" >"$d/many/f002.txt"
	rm "$d/f002.tmp"
	rm -r "$d/modes/dir0700"
	rm -r "$d/empty-dir"
	mkdir "$d/empty-dir"
	printf 'x\n' >"$d/empty-dir/x"
	# bin too: fuse-overlayfs bumps a directory's mtime when the chmod
	# above copies a file of it up, the kernel's overlay does not
	for p in src/pkg/main.py bin bin/python3.11 new.txt many many/renamed.txt \
		src src/pkg src/deep2 .venv .venv/pyvenv.cfg many/f002.txt \
		modes empty-dir empty-dir/x ""; do
		touch -h -d @1750000000 "$d/$p"
	done
}

expected_diff() {
	printf '%s\t%s\n' \
		T .venv/pyvenv.cfg A empty-dir/x M bin/python3.11 \
		D many/f000.txt D many/f001.txt A many/renamed.txt \
		D modes/dir0700 D modes/dir0700/inner A new.txt \
		A src/deep2 A src/deep2/er A src/deep2/er/est \
		A src/deep2/er/est/leaf.txt M src/pkg/main.py \
		D src/pkg/deep D src/pkg/deep/er D src/pkg/deep/er/est \
		D src/pkg/deep/er/est/leaf.txt |
		awk -F'\t' '{ print $2 "\t" $1 }' | LC_ALL=C sort |
		awk -F'\t' '{ print $2 "\t" $1 }'
}

have_ls=0 have_export=0 have_check=0
implemented ls "$ar" && have_ls=1
implemented check "$ar" && have_check=1
implemented export "$ar" "$work/probe-export" && have_export=1
rm -rf "$work/probe-export"
# TODO(hydrate): drop the conditions once ls, check and export are on main
[ $have_ls = 1 ] || echo "note: wsnap ls not implemented yet"
[ $have_export = 1 ] || echo "note: wsnap export not implemented yet"
[ $have_check = 1 ] || echo "note: wsnap check not implemented yet"
lsjson=
if [ $have_ls = 1 ]; then
	lsjson=$work/ls.json
	"$W" ls --json "$ar" >"$lsjson" || fail "wsnap ls --json"
fi

for kind in $kinds; do
	use_kind $kind

	# ---- hydrate: the workspace reads like the archive ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	[ "$(type_at "$ws")" = $fstype ] ||
		fail "$kind: $ws is a '$(type_at "$ws")' mount"
	[ "$(type_at "$st/lower")" = fuse.wsnap ] ||
		fail "$kind: no snapshot mount at $st/lower"
	grep -qx "overlay $kind" "$st/state" || fail "$kind: state file"
	python3 "$hh" compare "$ar" "$ws" $lsjson ||
		fail "$kind: workspace differs from the archive"

	# ---- changes, then diff ----
	modify "$ws"
	[ -L "$ws/.venv/pyvenv.cfg" ] && [ -f "$ws/src/deep2/er/est/leaf.txt" ] &&
		[ ! -e "$ws/src/pkg/deep" ] && [ "$(cat "$ws/empty-dir/x")" = x ] ||
		fail "$kind: changes not visible in the workspace"
	[ ! -e "$ws/modes/dir0700" ] || fail "$kind: removed directory back"
	expect_rc 1 "$W" diff "$ar" "$ws" >/dev/null
	"$W" diff "$ar" "$ws" >"$work/diff.out" || true
	expected_diff >"$work/diff.want"
	diff -u "$work/diff.want" "$work/diff.out" >&2 ||
		fail "$kind: diff of the workspace is not the changes made"
	same_as_full "$ws"

	# ---- pack: the next snapshot ----
	expect_rc 0 "$W" pack "$ws" "$work/next-$kind.tar"
	[ $have_check = 1 ] && { expect_rc 0 "$W" check "$work/next-$kind.tar"; }
	expect_rc 0 "$W" diff "$work/next-$kind.tar" "$ws"
	if [ $have_export = 1 ]; then
		expect_rc 0 "$W" export "$work/next-$kind.tar" "$work/next-x-$kind"
		python3 "$hh" tree "$ws" "$work/next-x-$kind" ||
			fail "$kind: export of the pack differs from the workspace"
		# the same changes made to an exported copy pack byte for byte
		expect_rc 0 "$W" export "$ar" "$work/copy-$kind"
		modify "$work/copy-$kind"
		expect_rc 0 "$W" pack "$work/copy-$kind" "$work/copy-$kind.tar"
		cmp "$work/next-$kind.tar" "$work/copy-$kind.tar" ||
			fail "$kind: pack of the workspace differs from the copy's"
	fi

	# ---- busy: refused with nothing changed, then --lazy ----
	(cd "$ws/src" && exec sleep 60) &
	busy=$!
	bg_pids+=("$busy")
	sleep 0.3
	expect_rc 4 "$W" unmount --discard "$ws"
	grep -q "busy" "$work/stderr" || fail "$kind: busy: $(cat "$work/stderr")"
	[ "$(type_at "$ws")" = $fstype ] && [ -f "$st/state" ] &&
		[ "$(type_at "$st/lower")" = fuse.wsnap ] ||
		fail "$kind: a refused unmount changed something"
	[ -f "$ws/new.txt" ] || fail "$kind: workspace lost after a refusal"
	expect_rc 0 "$W" unmount --lazy --discard "$ws"
	gone "$ws"
	kill "$busy" 2>/dev/null || true
	wait "$busy" 2>/dev/null || true

	# ---- unmount leaves nothing ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"
	[ -z "$(ls -A "$ws")" ] || fail "$kind: workspace not empty after unmount"

	# ---- --upper DIR: kept by unmount, and hydrated again ----
	up=$work/upper-$kind
	expect_rc 0 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$ws"
	printf 'kept\n' >"$ws/kept.txt"
	rm "$ws/many/f003.txt"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"
	[ -f "$up/kept.txt" ] || fail "$kind: --upper not kept"
	expect_rc 0 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$ws"
	[ "$(cat "$ws/kept.txt")" = kept ] && [ ! -e "$ws/many/f003.txt" ] ||
		fail "$kind: --upper changes not back"
	"$W" diff "$ar" "$ws" >"$work/diff.out" || true
	printf 'A\tkept.txt\nD\tmany/f003.txt\n' | cmp -s - "$work/diff.out" ||
		fail "$kind: diff over a reused upper: $(cat "$work/diff.out")"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"
	[ -f "$up/kept.txt" ] || fail "$kind: --upper removed"

	# ---- the snapshot daemon killed: unmount clears it all ----
	expect_rc 0 "$W" hydrate --overlay $kind "$ar" "$ws"
	pid=$(python3 "$hh" pid "$ws")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	! cat "$ws/src/pkg/main.py" >/dev/null 2>&1 ||
		fail "$kind: reads still served by a killed daemon"
	expect_rc 0 "$W" unmount "$ws"
	gone "$ws"

	# ---- fuse-overlayfs killed: unmount clears it all ----
	if [ $kind = fuse ]; then
		expect_rc 0 "$W" hydrate --overlay fuse "$ar" "$ws"
		pid=$(pgrep -f "^fuse-overlayfs .* $ws\$")
		kill -KILL "$pid"
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		expect_rc 0 "$W" unmount "$ws"
		gone "$ws"
	fi
done

# ---- refusals: nothing made, nothing mounted ----
python3 - "$work/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("ok.txt"); ti.size = 2
    tf.addfile(ti, io.BytesIO(b"ok"))
    ti = tarfile.TarInfo("../evil"); ti.size = 1
    tf.addfile(ti, io.BytesIO(b"x"))
PY
ws=$work/ws-evil
expect_rc 3 "$W" hydrate "$work/evil.tar" "$ws"
grep -qx "wsnap: unsafe tar member '../evil': parent traversal" \
	"$work/stderr" || fail "rejection message: $(cat "$work/stderr")"
[ ! -e "$ws" ] && [ ! -e "$(state_of "$ws")" ] ||
	fail "a rejected archive left a workspace or state"
[ "$(mounts_under "$work/")" = 0 ] || fail "a rejected archive was mounted"

ws=$work/ws-full
mkdir "$ws"
printf 'mine\n' >"$ws/mine.txt"
expect_rc 4 "$W" hydrate "$ar" "$ws"
grep -q "Directory not empty" "$work/stderr" &&
	grep -q -- "--force" "$work/stderr" ||
	fail "non-empty workspace: $(cat "$work/stderr")"
[ ! -e "$(state_of "$ws")" ] && ! is_mounted "$ws" ||
	fail "a refused workspace got state or a mount"
expect_rc 0 "$W" hydrate --force "$ar" "$ws"
[ ! -e "$ws/mine.txt" ] && [ -f "$ws/src/pkg/main.py" ] ||
	fail "--force: the overlay does not hide the workspace"
expect_rc 4 "$W" hydrate --force "$ar" "$ws"
grep -q "already hydrated" "$work/stderr" ||
	fail "hydrating twice: $(cat "$work/stderr")"
expect_rc 0 "$W" unmount "$ws"
gone "$ws"
[ "$(cat "$ws/mine.txt")" = mine ] || fail "--force: own file lost"

# -v names the paths quoted and escaped like member names
ws=$work/ws-v$'\xe2\x80\xae'
mkdir "$ws"
expect_rc 0 "$W" hydrate -v "$ar" "$ws" >"$work/v.out"
grep -qF "wsnap: hydrate: '$work/ws-v\\u202e': " "$work/stderr" &&
	! grep -q $'\xe2\x80\xae' "$work/stderr" ||
	fail "hydrate -v: $(cat "$work/stderr")"
[ -s "$work/v.out" ] && fail "hydrate -v wrote to stdout: $(cat "$work/v.out")"
expect_rc 0 "$W" unmount -v "$ws"
grep -qxF "wsnap: unmount: took down the workspace '$work/ws-v\\u202e'" \
	"$work/stderr" || fail "unmount -v: $(cat "$work/stderr")"
gone "$ws"

# --json: the outcome record of hydrate, unmount and their errors
# (doc/json.md), the paths exact
expect_rc 0 "$W" hydrate --json -q "$ar" "$ws" >"$work/j.out"
[ -s "$work/stderr" ] && fail "hydrate -q wrote to stderr: $(cat "$work/stderr")"
python3 - "$work/j.out" "$ws" <<'EOF' || fail "hydrate --json: $(cat "$work/j.out")"
import json, os, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["ok"] is True and o["workspace"] == sys.argv[2], o
for k in ("archive", "overlay", "upper", "lower", "state", "members",
          "directories", "implicit_directories", "files", "symlinks",
          "bytes", "compression"):
    assert k in o, (k, o)
assert o["overlay"] in ("kernel", "fuse-overlayfs"), o
EOF
expect_rc 4 "$W" hydrate --json "$ar" "$ws" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "io" and o["errno"] == "EEXIST" and "file" in o, o' \
	"$work/j.out" || fail "hydrate --json error: $(cat "$work/j.out")"
expect_rc 0 "$W" unmount --json "$ws" >"$work/j.out"
python3 - "$work/j.out" "$ws" <<'EOF' || fail "unmount --json: $(cat "$work/j.out")"
import json, sys
o = json.load(open(sys.argv[1], encoding="utf-8"))
assert o == {"ok": True, "workspace": sys.argv[2]}, o
EOF
gone "$ws"
expect_rc 4 "$W" unmount --json "$ws" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "io" and "message" in o, o' \
	"$work/j.out" || fail "unmount --json error: $(cat "$work/j.out")"

expect_rc 2 "$W" hydrate --overlay bogus "$ar" "$ws"
expect_rc 2 "$W" hydrate "$ar"
echo "PASS: $name ($kinds)"
