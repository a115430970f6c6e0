#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 16 threads read random ranges of random files of a mount for
# several seconds, every byte checked against the archive; from a plain and
# from a zstd archive.
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"
zstd -q -o "$work/snap.tar.zst" "$work/snap.tar"
for ar in snap.tar snap.tar.zst; do
	newmnt "mnt-$ar"
	expect_rc 0 "$WSNAP_BIN" mount "$work/$ar" "$mnt"
	python3 "$helper" stress "$work/$ar" "$mnt" 4 16 ||
		fail "$ar: stress"
	expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
done
echo "e2e_mount_stress: ok"
