#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: install dependencies, build wsnap, make a sample snapshot of
# a small workspace, validate it, mount it read-only, look around in it,
# read a file through the mount, and unmount. The mount is taken down on
# any exit, failure included.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
wsnap=$PWD/build/tools/wsnap
work=$(mktemp -d)
mnt=$work/mnt
cleanup() {
	if grep -qF " $mnt " /proc/self/mountinfo 2>/dev/null; then
		"$wsnap" unmount --lazy "$mnt" 2>/dev/null ||
			fusermount3 -uz "$mnt" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/ws/src/pkg" "$work/ws/bin" "$work/ws/.venv/bin"
printf 'print("hello from the snapshot")\n' >"$work/ws/src/pkg/main.py"
printf '# sample workspace\n' >"$work/ws/README.md"
printf '#!/bin/sh\nexec python3 src/pkg/main.py\n' >"$work/ws/bin/start"
chmod 755 "$work/ws/bin/start"
ln -s ../../bin/start "$work/ws/.venv/bin/start"
tar -C "$work/ws" --sort=name --owner=0 --group=0 --numeric-owner \
	-czf "$work/sample.tar.gz" .

cd "$work"
echo "\$ wsnap check -v sample.tar.gz"
"$wsnap" check -v sample.tar.gz
echo "\$ wsnap ls sample.tar.gz"
"$wsnap" ls sample.tar.gz
if [ ! -c /dev/fuse ]; then
	echo "(no /dev/fuse on this machine: the mount part is left out)"
	exit 0
fi
mkdir mnt
echo "\$ wsnap mount sample.tar.gz mnt"
"$wsnap" mount sample.tar.gz mnt
echo "\$ ls -lAR mnt"
ls -lAR mnt
echo "\$ cat mnt/src/pkg/main.py"
cat mnt/src/pkg/main.py
echo "\$ (cd mnt && .venv/bin/start)"
(cd mnt && .venv/bin/start)
echo "\$ touch mnt/new-file"
touch mnt/new-file 2>&1 || true
echo "\$ wsnap unmount mnt"
cd /
"$wsnap" unmount "$mnt"
