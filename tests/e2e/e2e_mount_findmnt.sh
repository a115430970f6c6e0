#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end regression: findmnt and df showed every
# mount as 'wsnap', so nobody could tell which archive was mounted where,
# and a missing mountpoint was an error. Now a mount's source is the
# archive's absolute path (a comma, a space or a backslash in it kept) in
# findmnt, df and /proc/self/mountinfo, its type fuse.wsnap and its size
# (df) the snapshot's file bytes; a hydrated workspace's snapshot shows its
# archive too. A missing mountpoint is made (0755, the last component only,
# never through a symlink) and removed again by 'wsnap unmount', by the
# daemon after umount or fusermount3 -u, by -f once unmounted, and after a
# daemon died; an existing one is never removed, nor one whose marker is
# not trusted.
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"
W=$WSNAP_BIN
ar=$work/snap.tar
size_of() { # ARCHIVE: its file bytes rounded up to 4096-byte blocks
	"$W" ls --json "$1" | python3 -c '
import json, sys
n = sum(o["size"] for o in map(json.loads, sys.stdin) if o.get("type") == "file")
print((n + 4095) // 4096 * 4096)'
}
# shows MNT ARCHIVE: findmnt, df and mountinfo name ARCHIVE at MNT
shows() {
	local src
	src=$(realpath "$2")
	[ "$(findmnt -n -o SOURCE --mountpoint "$1")" = "$src" ] ||
		fail "findmnt SOURCE of $1: $(findmnt -n -o SOURCE --mountpoint "$1")"
	[ "$(findmnt -n -o FSTYPE --mountpoint "$1")" = fuse.wsnap ] ||
		fail "findmnt FSTYPE of $1"
	[ "$(df --output=source "$1" | tail -1)" = "$src" ] ||
		fail "df source of $1: $(df --output=source "$1")"
	[ "$(df -B1 --output=size "$1" | tail -1 | tr -d ' ')" = \
		"$(size_of "$2")" ] ||
		fail "df size of $1: $(df -B1 --output=size "$1"), want $(size_of "$2")"
	# the kernel's octal escapes, compared as they are (awk -v would
	# undo them)
	S=$(printf '%s' "$src" | sed 's/\\/\\134/g; s/ /\\040/g') \
		awk -v m="$1" '$5 == m { for (i = 7; $i != "-"; i++);
		if ($(i + 1) == "fuse.wsnap" && $(i + 2) == ENVIRON["S"]) f = 1 }
		END { exit !f }' /proc/self/mountinfo ||
		fail "mountinfo of $1: $(grep -F " $1 " /proc/self/mountinfo)"
}
# gone_soon DIR: DIR disappears within 5 s (a daemon removes it)
gone_soon() {
	local i
	for i in $(seq 100); do [ -e "$1" ] || return 0; sleep 0.05; done
	fail "$2: $1 not removed"
}
marker_of() { echo "$(dirname "$1")/.$(basename "$1").wsnap-mountpoint"; }

# ---- source, type, size ----
for a in snap.tar snap.tar.gz; do
	newmnt "mnt-$a"
	expect_rc 0 "$W" mount "$work/$a" "$mnt"
	shows "$mnt" "$work/$a"
	expect_rc 0 "$W" unmount "$mnt"
done
odd="$work/a, b\\c d.tar"
cp "$ar" "$odd"
newmnt mnt-odd
(cd "$work" && expect_rc 0 "$W" mount "./a, b\\c d.tar" "$mnt")
shows "$mnt" "$odd"
expect_rc 0 "$W" unmount "$mnt"
# -o fsname= of the user still wins
newmnt mnt-fsname
expect_rc 0 "$W" mount -o fsname=mine "$ar" "$mnt"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = mine ] || fail "-o fsname="
expect_rc 0 "$W" unmount "$mnt"

# a hydrated workspace's snapshot names its archive; unmount still knows it
if [ "$(id -u)" = 0 ] || command -v fuse-overlayfs >/dev/null; then
	ws=$work/ws
	expect_rc 0 "$W" hydrate "$ar" "$ws"
	shows "$work/.ws.wsnap/lower" "$ar"
	expect_rc 0 "$W" unmount "$ws"
	[ ! -e "$work/.ws.wsnap" ] && ! is_mounted "$ws" ||
		fail "hydrated workspace not taken down"
fi

# ---- a missing mountpoint: made, and removed at unmount ----
mnt=$work/made
expect_rc 0 "$W" mount "$ar" "$mnt"
shows "$mnt" "$ar"
[ "$(stat -c %a "$work/made")" = "$(printf '%o' $((0755 & ~$(umask))))" ] ||
	fail "made with mode $(stat -c %a "$work/made")"
[ -f "$(marker_of "$mnt")" ] || fail "no marker beside the mountpoint made"
expect_rc 0 "$W" unmount "$mnt"
# unmount removes them, or the daemon does as it exits (whichever comes
# first; the daemon's removal may end just after unmount returns)
gone_soon "$mnt" "unmount"
gone_soon "$(marker_of "$mnt")" "unmount: its marker"
# ... by the daemon, after umount(8) or fusermount3 -u
expect_rc 0 "$W" mount "$ar" "$mnt"
umount "$mnt" 2>/dev/null || fusermount3 -u "$mnt"
gone_soon "$mnt" "umount"
gone_soon "$(marker_of "$mnt")" "umount: its marker" # removed after the directory
# ... by -f once unmounted
"$W" mount -f "$ar" "$mnt" 2>"$work/fg.err" &
fg=$!
bg_pids+=("$fg")
for i in $(seq 100); do is_mounted "$mnt" && break; sleep 0.05; done
is_mounted "$mnt" || fail "-f: not mounted: $(cat "$work/fg.err")"
fusermount3 -u "$mnt"
wait "$fg" || fail "-f exited $?: $(cat "$work/fg.err")"
[ ! -e "$mnt" ] || fail "-f: made mountpoint left"
# ... after its daemon died
expect_rc 0 "$W" mount "$ar" "$mnt"
pid=$(python3 "$helper" pid "$ar" "$mnt")
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
expect_rc 0 "$W" unmount "$mnt"
[ ! -e "$mnt" ] || fail "dead daemon: made mountpoint left"

# ---- what is never made or removed ----
newmnt existing
expect_rc 0 "$W" mount "$ar" "$mnt"
[ ! -e "$(marker_of "$mnt")" ] || fail "a marker for an existing directory"
expect_rc 0 "$W" unmount "$mnt"
[ -d "$mnt" ] || fail "an existing mountpoint was removed"
# a marker that is not the caller's own, or names another directory
printf 'wsnap-mountpoint 1\n%s %s\n' "$(stat -c '%d %i' "$mnt")" \
	"$(python3 -c 'import os,sys; s=os.stat(sys.argv[1]);
print("%d.%09d" % divmod(s.st_ctime_ns, 10**9))' "$mnt")" >"$(marker_of "$mnt")"
chmod 666 "$(marker_of "$mnt")"
expect_rc 0 "$W" mount "$ar" "$mnt"
expect_rc 0 "$W" unmount "$mnt"
[ -d "$mnt" ] || fail "removed on a marker writable by others"
chmod 600 "$(marker_of "$mnt")"
mkdir "$work/other"
cp "$(marker_of "$mnt")" "$(marker_of "$work/other")"
expect_rc 0 "$W" mount "$ar" "$work/other"
expect_rc 0 "$W" unmount "$work/other"
[ -d "$work/other" ] || fail "removed on a marker of another directory"
# (the marker the caller wrote for this very directory is theirs to trust)
expect_rc 0 "$W" mount "$ar" "$mnt"
expect_rc 0 "$W" unmount "$mnt"
[ ! -e "$mnt" ] || fail "a trusted marker was not honoured"
# a dangling symlink is not followed, a missing parent not made
ln -s "$work/target" "$work/dangling"
expect_rc 4 "$W" mount "$ar" "$work/dangling"
grep -q "File exists" "$work/stderr" || fail "dangling: $(cat "$work/stderr")"
[ -L "$work/dangling" ] && [ ! -e "$work/target" ] ||
	fail "made through a dangling symlink"
# nothing is made for a rejected archive
printf 'not a tar\n' >"$work/bad.tar"
expect_rc 3 "$W" mount "$work/bad.tar" "$work/never"
[ ! -e "$work/never" ] || fail "a mountpoint made for a rejected archive"
echo "PASS: $name"
