#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap mount' of a rich snapshot from a plain, gzip, xz,
# bzip2 and zstd archive, compared member by member with the archive's own
# members and bytes and with 'wsnap ls --json'; writes fail with EROFS; a
# rejected archive is not mounted; mountpoint and option errors; -o uid/gid.
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"
zstd -q -o "$work/snap.tar.zst" "$work/snap.tar"

for ar in snap.tar snap.tar.gz snap.tar.xz snap.tar.bz2 snap.tar.zst; do
	newmnt "mnt-$ar"
	expect_rc 0 "$WSNAP_BIN" mount "$work/$ar" "$mnt"
	is_mounted "$mnt" || fail "$ar: mount returned but nothing is mounted"
	grep -F " $mnt " /proc/self/mountinfo | grep ' fuse.wsnap ' >/dev/null ||
		fail "$ar: not a fuse.wsnap mount"
	expect_rc 0 "$WSNAP_BIN" ls --json "$work/$ar" >"$work/ls.json"
	python3 "$helper" compare "$work/$ar" "$mnt" "$work/ls.json" ||
		fail "$ar: mount differs from the archive"
	[ "$ar" = snap.tar ] && { python3 "$helper" erofs "$mnt" ||
		fail "writes did not fail with EROFS"; }
	expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
	! is_mounted "$mnt" || fail "$ar: still mounted after unmount"
	[ -z "$(ls -A "$mnt")" ] || fail "$ar: mountpoint not empty after unmount"
done

# policy rule 3.9: the longest component (255 bytes) and target (4095)
# Linux holds are mounted, listed and exported alike; one byte more is
# refused by check, mount and export before anything is served or written
python3 - "$work" <<'PY'
import io, sys, tarfile
w = sys.argv[1]
c255, c256 = "c" * 255, "c" * 256
def add(tf, name, kind="f", target=""):
    ti = tarfile.TarInfo(name)
    ti.mtime = 1700000000
    if kind == "l":
        ti.type, ti.linkname = tarfile.SYMTYPE, target
        tf.addfile(ti)
    else:
        ti.size = 3
        tf.addfile(ti, io.BytesIO(b"abc"))
with tarfile.open(w + "/long-ok.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "d/" + c255)
    add(tf, "l", "l", ("a/" * 2047) + "b")   # 4095 bytes, inside the root
with tarfile.open(w + "/long-comp.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "d/" + c256)
with tarfile.open(w + "/long-target.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "l", "l", ("a/" * 2047) + "bb")  # 4096 bytes
PY
newmnt mnt-long
expect_rc 0 "$WSNAP_BIN" mount "$work/long-ok.tar" "$mnt"
expect_rc 0 "$WSNAP_BIN" ls --json "$work/long-ok.tar" >"$work/ls.json"
python3 "$helper" compare "$work/long-ok.tar" "$mnt" "$work/ls.json" ||
	fail "255-byte component or 4095-byte target: mount differs"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
expect_rc 0 "$WSNAP_BIN" export "$work/long-ok.tar" "$work/long-out"
[ "$(readlink "$work/long-out/l" | wc -c)" -eq 4096 ] ||
	fail "4095-byte target not exported"
[ "$(cat "$work/long-out/d/"c*)" = abc ] || fail "255-byte name not exported"
for t in long-comp:"path component too long" long-target:"symlink target too long"; do
	ar=${t%%:*} reason=${t#*:}
	for cmd in check "ls" "export" "mount"; do
		extra=; [ "$cmd" = export ] && extra="$work/out-$ar"
		[ "$cmd" = mount ] && { newmnt "mnt-$ar"; extra=$mnt; }
		rc=0; "$WSNAP_BIN" "$cmd" "$work/$ar.tar" $extra 2>"$work/err" >/dev/null || rc=$?
		[ $rc -eq 3 ] || fail "$cmd $ar: exit $rc, want 3"
		grep -q ": $reason\$" "$work/err" || fail "$cmd $ar: $(cat "$work/err")"
		[ "$cmd" = export ] && [ -e "$work/out-$ar" ] && fail "export $ar wrote DEST"
		[ "$cmd" = mount ] && is_mounted "$mnt" && fail "mount $ar mounted"
	done
done

# the presented owner
newmnt mnt-owner
expect_rc 0 "$WSNAP_BIN" mount -o uid=1234,gid=5678 "$work/snap.tar" "$mnt"
WSNAP_EXPECT_UID=1234 WSNAP_EXPECT_GID=5678 \
	python3 "$helper" compare "$work/snap.tar" "$mnt" ||
	fail "-o uid=,gid= not presented"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# policy options apply: skipped members are absent, an option lets an
# external symlink through
newmnt mnt-skip
expect_rc 0 "$WSNAP_BIN" mount --skip big --skip src/pkg/main.py \
	"$work/snap.tar" "$mnt"
[ ! -e "$mnt/big" ] && [ ! -e "$mnt/src/pkg/main.py" ] ||
	fail "--skip: skipped members are served"
[ -f "$mnt/src/pkg/__init__.py" ] && [ -d "$mnt/many" ] ||
	fail "--skip: other members missing"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
python3 - "$work/venv.tar" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo(".venv/bin/python3")
    ti.type, ti.linkname = tarfile.SYMTYPE, "/usr/bin/python3"
    tf.addfile(ti)
PY
newmnt mnt-venv
expect_rc 3 "$WSNAP_BIN" mount "$work/venv.tar" "$mnt"
grep -q "hint: --allow-external-symlinks" "$work/stderr" ||
	fail "no hint for an external symlink: $(cat "$work/stderr")"
expect_rc 0 "$WSNAP_BIN" mount --allow-external-symlinks "$work/venv.tar" \
	"$mnt"
[ "$(readlink "$mnt/.venv/bin/python3")" = /usr/bin/python3 ] ||
	fail "external symlink target"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# -o cache_dir=: the decompressed stream of a compressed archive is spilled
# there, unlinked at once; standard options (allow_other) pass through
newmnt mnt-cache
mkdir "$work/cache"
expect_rc 0 "$WSNAP_BIN" mount -o allow_other,cache_dir="$work/cache" \
	"$work/snap.tar.xz" "$mnt"
grep -F " $mnt " /proc/self/mountinfo | grep allow_other >/dev/null ||
	fail "allow_other not passed to the mount"
pid=$(python3 "$helper" pid "$work/snap.tar.xz" "$mnt")
ls -l "/proc/$pid/fd" | grep -F "$work/cache/" >/dev/null ||
	fail "no spill file of the daemon in cache_dir"
[ -z "$(ls -A "$work/cache")" ] || fail "spill file not unlinked"
# the daemon, the mount command's only child, detached itself as
# fuse_daemonize would (serve.c): a session of its own, "/" as working
# directory, standard streams on /dev/null
[ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] ||
	fail "the daemon is not in a session of its own"
[ "$(readlink "/proc/$pid/cwd")" = / ] || fail "the daemon's cwd is not /"
for fd in 0 1 2; do
	[ "$(readlink "/proc/$pid/fd/$fd")" = /dev/null ] ||
		fail "the daemon's fd $fd is not /dev/null"
done
python3 "$helper" read-all "$work/snap.tar.xz" "$mnt" >/dev/null ||
	fail "reads from the spill file in cache_dir"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# a rejected archive: exit 3, the policy message, nothing mounted
python3 - "$work/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("ok.txt"); ti.size = 2
    tf.addfile(ti, io.BytesIO(b"ok"))
    ti = tarfile.TarInfo("../evil"); ti.size = 1
    tf.addfile(ti, io.BytesIO(b"x"))
PY
newmnt mnt-evil
expect_rc 3 "$WSNAP_BIN" mount "$work/evil.tar" "$mnt"
grep -qx "wsnap: unsafe tar member '../evil': parent traversal" \
	"$work/stderr" || fail "rejection message: $(cat "$work/stderr")"
! is_mounted "$mnt" || fail "a rejected archive was mounted"
[ -z "$(ls -A "$mnt")" ] || fail "mountpoint of a rejected archive not empty"

# mountpoint errors: one line, exit 4, nothing mounted (a missing
# mountpoint is made: e2e_mount_findmnt; its missing parent is not)
expect_rc 4 "$WSNAP_BIN" mount "$work/snap.tar" "$work/missing/mnt"
[ "$(wc -l <"$work/stderr")" -eq 1 ] && grep -q "No such file or directory" \
	"$work/stderr" || fail "missing mountpoint: $(cat "$work/stderr")"
[ ! -e "$work/missing" ] || fail "the parent of a mountpoint was made"
expect_rc 4 "$WSNAP_BIN" mount "$work/snap.tar" "$work/snap.tar.gz"
[ "$(wc -l <"$work/stderr")" -eq 1 ] && grep -q "Not a directory" \
	"$work/stderr" || fail "file mountpoint: $(cat "$work/stderr")"
newmnt full; full=$mnt
touch "$full/x"
expect_rc 4 "$WSNAP_BIN" mount "$work/snap.tar" "$full"
[ "$(wc -l <"$work/stderr")" -eq 1 ] && grep -q "Directory not empty" \
	"$work/stderr" || fail "non-empty mountpoint: $(cat "$work/stderr")"
! is_mounted "$full" || fail "mounted over a non-empty directory"

# usage errors: exit 2
newmnt mnt-usage
expect_rc 2 "$WSNAP_BIN" mount -o no_such_fuse_option "$work/snap.tar" "$mnt"
expect_rc 2 "$WSNAP_BIN" mount -o uid=abc "$work/snap.tar" "$mnt"
expect_rc 2 "$WSNAP_BIN" mount "$work/snap.tar"
expect_rc 2 "$WSNAP_BIN" mount --no-such-option "$work/snap.tar" "$mnt"
! is_mounted "$mnt" || fail "mounted despite a usage error"
"$WSNAP_BIN" mount --help | grep '^usage: wsnap mount' >/dev/null ||
	fail "mount --help"
"$WSNAP_BIN" unmount --help | grep '^usage: wsnap unmount' >/dev/null ||
	fail "unmount --help"

# unmount of what is not a wsnap mount
expect_rc 4 "$WSNAP_BIN" unmount "$mnt"
grep -q "nothing is mounted" "$work/stderr" ||
	fail "unmount of a plain directory: $(cat "$work/stderr")"
expect_rc 4 "$WSNAP_BIN" unmount /proc
grep -q "not a wsnap mount" "$work/stderr" ||
	fail "unmount of /proc: $(cat "$work/stderr")"

# --json and -v (doc/json.md): the outcome of mount and unmount, errors
# with errno and hint; with -f the record comes once the mount answers
newmnt mnt-json
expect_rc 0 "$WSNAP_BIN" mount --json -v "$work/snap.tar" "$mnt" >"$work/j.out"
grep -qxF "wsnap: mount: mounted at '$mnt'" "$work/stderr" &&
	grep -q "^wsnap: mount: '$work/snap.tar': [0-9]* members: " "$work/stderr" ||
	fail "mount -v: $(cat "$work/stderr")"
python3 - "$work/j.out" "$work/snap.tar" "$mnt" <<'PY' || fail "mount --json: $(cat "$work/j.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["ok"] is True and o["archive"] == sys.argv[2], o
assert o["mountpoint"] == sys.argv[3], o
assert set(o) == {"ok", "archive", "mountpoint", "members", "directories",
                  "implicit_directories", "files", "symlinks", "bytes",
                  "compression"}, o
PY
expect_rc 0 "$WSNAP_BIN" unmount --json -q "$mnt" >"$work/j.out"
[ -s "$work/stderr" ] && fail "unmount -q wrote to stderr"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o == {"ok": True, "mountpoint": sys.argv[2]}, o' \
	"$work/j.out" "$mnt" || fail "unmount --json: $(cat "$work/j.out")"
expect_rc 4 "$WSNAP_BIN" unmount --json "$mnt" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "io" and o["file"] == sys.argv[2], o' \
	"$work/j.out" "$mnt" || fail "unmount --json error: $(cat "$work/j.out")"
expect_rc 3 "$WSNAP_BIN" mount --json "$work/venv.tar" "$mnt" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "rejected" and o["member"] == ".venv/bin/python3" and o["hint"].startswith("--allow-external-symlinks "), o' \
	"$work/j.out" || fail "mount --json rejection: $(cat "$work/j.out")"
expect_rc 4 "$WSNAP_BIN" mount --json "$work/snap.tar" "$work/missing/mnt" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "io" and o["errno"] == "ENOENT", o' \
	"$work/j.out" || fail "mount --json io error: $(cat "$work/j.out")"
expect_rc 2 "$WSNAP_BIN" mount --json -o uid=abc "$work/snap.tar" "$mnt" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "usage" and "message" in o, o' \
	"$work/j.out" || fail "mount --json usage error: $(cat "$work/j.out")"
"$WSNAP_BIN" mount -f --json "$work/snap.tar" "$mnt" >"$work/f.out" 2>/dev/null &
bg_pids+=($!)
for _ in $(seq 100); do [ -s "$work/f.out" ] && break; sleep 0.1; done
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is True and o["mountpoint"] == sys.argv[2], o' \
	"$work/f.out" "$mnt" || fail "mount -f --json: $(cat "$work/f.out")"
is_mounted "$mnt" || fail "mount -f --json reported a mount that is not there"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
wait "${bg_pids[-1]}" || fail "mount -f exited with an error"
echo "e2e_mount: ok"
