#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: a mounted archive rewritten in place with the same size and
# its mtime put back (what 'rsync --inplace -t' does) keeps its size, inode
# and mtime; only its ctime changes. Such an archive was
# served with its new bytes. Every read the kernel does not answer from
# pages it already holds must now fail with EIO, before and after the page
# cache is dropped, and no byte read may differ from the snapshot's.
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"
cp "$work/snap.tar" "$work/judged.tar" # the bytes as mounted

# rewrite ARCHIVE MEMBER DELTA: 16 bytes of MEMBER's data from DELTA on
# overwritten in place, then the archive's mtime put back
rewrite() {
	local off mt
	off=$(python3 "$helper" offset "$work/judged.tar" "$2")
	mt=$(stat -c %y "$1")
	printf 'XXXXXXXXXXXXXXXX' |
		dd of="$1" bs=1 seek=$((off + $3)) conv=notrunc status=none
	touch -d "$mt" "$1"
	[ "$(stat -c %y "$1")" = "$mt" ] || fail "mtime not put back on $1"
	cmp -s "$1" "$work/judged.tar" && fail "rewrite changed nothing"
	return 0
}

drop_caches() {
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches
	else
		echo "note: $name: cannot drop caches (not root)"
	fi
}

# 1. a large file (once spliced from the archive), read in part before the
#    change, and small ones never read (copied): EIO, never the new bytes
cp "$work/judged.tar" "$work/live.tar"
newmnt mnt
expect_rc 0 "$WSNAP_BIN" mount "$work/live.tar" "$mnt"
head -c 65536 "$mnt/big/multi.bin" >/dev/null
ino=$(stat -c %i "$work/live.tar")
size=$(stat -c %s "$work/live.tar")
rewrite "$work/live.tar" big/multi.bin $((2 * 1024 * 1024))
rewrite "$work/live.tar" many/f039.txt 100
rewrite "$work/live.tar" many/f020.txt 0
[ "$(stat -c %i "$work/live.tar")" = "$ino" ] || fail "inode changed"
[ "$(stat -c %s "$work/live.tar")" = "$size" ] || fail "size changed"
python3 "$helper" read-eio "$work/judged.tar" "$mnt" big/multi.bin \
	many/f039.txt >/dev/null || fail "a rewritten archive was served"
drop_caches
python3 "$helper" read-eio "$work/judged.tar" "$mnt" big/multi.bin \
	many/f039.txt many/f020.txt >/dev/null ||
	fail "a rewritten archive was served after the caches were dropped"
# a file the change did not touch is refused too: the archive is not the
# one judged any more
python3 "$helper" read-eio "$work/judged.tar" "$mnt" src/pkg/main.py \
	>/dev/null || fail "an untouched member of a changed archive was served"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 2. the same archive mounted afresh is judged again and served as it is
#    now
newmnt mnt2
expect_rc 0 "$WSNAP_BIN" mount "$work/live.tar" "$mnt"
python3 "$helper" read-all "$work/live.tar" "$mnt" big/multi.bin \
	many/f039.txt >/dev/null || fail "a fresh mount of the new bytes"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

echo "PASS: $name"
