#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: a mount under faults. The archive truncated, rewritten or
# deleted after mount; a busy mount refused by unmount and detached by
# --lazy; a daemon killed with SIGKILL, cleared by 'wsnap unmount' and
# mounted again; -f stopped by SIGTERM and by fusermount3 -u.
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"

# wait_gone PID: until the process has exited (bounded)
wait_gone() {
	local i
	for i in $(seq 1 200); do
		[ -e "/proc/$1" ] || return 0
		sleep 0.05
	done
	fail "process $1 did not exit"
}

# 1. plain archive truncated after mount: uncached reads fail with EIO,
#    cached files, listings, attributes and links keep working
cp "$work/snap.tar" "$work/trunc.tar"
newmnt mnt-trunc
expect_rc 0 "$WSNAP_BIN" mount "$work/trunc.tar" "$mnt"
python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py >/dev/null
truncate -s 20000 "$work/trunc.tar"
expect_rc 1 cat "$mnt/big/multi.bin"
grep -q "Input/output error" "$work/stderr" ||
	fail "read after truncation: $(cat "$work/stderr")"
expect_rc 1 cat "$mnt/many/f039.txt"
grep -q "Input/output error" "$work/stderr" || fail "second read: not EIO"
python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py >/dev/null ||
	fail "a cached file no longer reads after truncation"
ls -lR "$mnt" >/dev/null || fail "listing after truncation"
[ "$(readlink "$mnt/.venv/bin/python")" = python3 ] || fail "readlink"
[ "$(stat -c %s "$mnt/big/multi.bin")" -eq $((5 * 1024 * 1024 + 12345)) ] ||
	fail "stat after truncation"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 2. rewritten in place, same size: EIO too
cp "$work/snap.tar" "$work/rewrite.tar"
newmnt mnt-rewrite
expect_rc 0 "$WSNAP_BIN" mount "$work/rewrite.tar" "$mnt"
sleep 0.02 # let the clock tick past the archive's mtime
printf 'garbage' | dd of="$work/rewrite.tar" bs=1 seek=600000 conv=notrunc \
	status=none
expect_rc 1 cat "$mnt/big/multi.bin"
grep -q "Input/output error" "$work/stderr" || fail "rewritten: not EIO"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 3. a spilled compressed archive (bzip2: no seek points) truncated after
#    mount: served from the spill file of the validation pass, still the
#    snapshot's bytes
cp "$work/snap.tar.bz2" "$work/trunc.tar.bz2"
newmnt mnt-truncbz
expect_rc 0 "$WSNAP_BIN" mount "$work/trunc.tar.bz2" "$mnt"
truncate -s 1000 "$work/trunc.tar.bz2"
python3 "$helper" read-all "$work/snap.tar" "$mnt" >/dev/null ||
	fail "bzip2 archive truncated after mount"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 3b. gzip is read in place from its seek points: like a plain archive,
#    truncated or rewritten in place (mtime put back) it reads as EIO,
#    while what is cached, listings and attributes keep working
for how in truncate rewrite; do
	cp "$work/snap.tar.gz" "$work/$how.tar.gz"
	newmnt "mnt-$how-gz"
	expect_rc 0 "$WSNAP_BIN" mount "$work/$how.tar.gz" "$mnt"
	python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py \
		>/dev/null || fail "gzip: first read"
	sleep 0.02 # let the clock tick past the archive's ctime
	if [ "$how" = truncate ]; then
		truncate -s 1000 "$work/$how.tar.gz"
	else
		m=$(stat -c %y "$work/$how.tar.gz")
		dd if="$work/$how.tar.gz" of="$work/$how.tar.gz" bs=4096 \
			count=1 conv=notrunc status=none
		touch -d "$m" "$work/$how.tar.gz"
	fi
	expect_rc 1 cat "$mnt/big/multi.bin"
	grep -q "Input/output error" "$work/stderr" ||
		fail "gzip $how: not EIO: $(cat "$work/stderr")"
	python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py \
		>/dev/null || fail "gzip $how: a cached file no longer reads"
	ls -lR "$mnt" >/dev/null || fail "gzip $how: listing"
	expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
done

# 4. the archive deleted after mount: the daemon holds its descriptor. A
#    spilled compressed archive (xz of one block) is served from the spill
#    file as before; deleting
#    a plain one sets its ctime, which a rewrite with the mtime put back
#    also does: what is not cached reads as EIO, and what
#    is cached is still the snapshot's
cp "$work/snap.tar.xz" "$work/del-snap.tar.xz"
newmnt mnt-del-xz
expect_rc 0 "$WSNAP_BIN" mount "$work/del-snap.tar.xz" "$mnt"
rm "$work/del-snap.tar.xz"
python3 "$helper" read-all "$work/snap.tar" "$mnt" >/dev/null ||
	fail "snap.tar.xz deleted after mount"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
cp "$work/snap.tar" "$work/del-snap.tar"
newmnt mnt-del-tar
expect_rc 0 "$WSNAP_BIN" mount "$work/del-snap.tar" "$mnt"
python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py >/dev/null
rm "$work/del-snap.tar"
python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py \
	>/dev/null || fail "a cached file no longer reads after deletion"
python3 "$helper" read-eio "$work/snap.tar" "$mnt" big/multi.bin \
	many/f039.txt >/dev/null || fail "snap.tar deleted after mount"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 5. busy: refused with nothing changed, then --lazy
newmnt mnt-busy
expect_rc 0 "$WSNAP_BIN" mount "$work/snap.tar" "$mnt"
exec 7<"$mnt/src/pkg/main.py"
expect_rc 4 "$WSNAP_BIN" unmount "$mnt"
grep -qi "busy" "$work/stderr" || fail "busy: $(cat "$work/stderr")"
grep -q -- "--lazy" "$work/stderr" || fail "busy: no hint to --lazy"
is_mounted "$mnt" || fail "a refused unmount changed something"
python3 "$helper" read-all "$work/snap.tar" "$mnt" big/multi.bin >/dev/null ||
	fail "busy mount no longer serves"
pid=$(python3 "$helper" pid "$work/snap.tar" "$mnt")
expect_rc 0 "$WSNAP_BIN" unmount --lazy "$mnt"
! is_mounted "$mnt" || fail "--lazy left the mount"
read -r line <&7 || true
[ "$line" = 'print("hello from the snapshot")' ] ||
	fail "an open file stopped working after --lazy"
exec 7<&-
wait_gone "$pid"

# 6. the daemon killed: the stale mount answers ENOTCONN, mount refuses it,
#    unmount clears it, a new mount works
newmnt mnt-kill
expect_rc 0 "$WSNAP_BIN" mount "$work/snap.tar" "$mnt"
pid=$(python3 "$helper" pid "$work/snap.tar" "$mnt")
kill -KILL "$pid"
wait_gone "$pid"
expect_rc 2 ls "$mnt"
grep -q "Transport endpoint is not connected" "$work/stderr" ||
	fail "dead daemon: $(cat "$work/stderr")"
expect_rc 4 "$WSNAP_BIN" mount "$work/snap.tar" "$mnt"
grep -q "wsnap unmount" "$work/stderr" || fail "stale: $(cat "$work/stderr")"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
! is_mounted "$mnt" || fail "stale mount not cleared"
expect_rc 0 "$WSNAP_BIN" mount "$work/snap.tar" "$mnt"
python3 "$helper" read-all "$work/snap.tar" "$mnt" >/dev/null ||
	fail "mount after clearing a stale one"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 7. -f stays in the foreground; SIGTERM and fusermount3 -u end it cleanly
for how in TERM INT fusermount; do
	newmnt "mnt-fg-$how"
	# a background job of a script ignores SIGINT: restore the default
	python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$WSNAP_BIN" mount -f "$work/snap.tar" \
		"$mnt" 2>"$work/fg.err" &
	fg=$!
	bg_pids+=("$fg")
	for i in $(seq 1 200); do
		is_mounted "$mnt" && break
		[ -e "/proc/$fg" ] || fail "-f exited: $(cat "$work/fg.err")"
		sleep 0.05
	done
	python3 "$helper" read-all "$work/snap.tar" "$mnt" src/pkg/main.py \
		>/dev/null || fail "-f mount does not serve"
	if [ "$how" = fusermount ]; then
		fusermount3 -u "$mnt"
	else
		kill -"$how" "$fg"
	fi
	rc=0
	wait "$fg" || rc=$?
	[ "$rc" -eq 0 ] || fail "-f after $how exited $rc: $(cat "$work/fg.err")"
	! is_mounted "$mnt" || fail "-f after $how left the mount"
done
echo "e2e_mount_faults: ok"
