#!/usr/bin/env bash
# The main job: install dependencies, build wsnap, make a sample snapshot of
# a small workspace, validate it and show it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
wsnap=$PWD/build/tools/wsnap
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/ws/src/pkg" "$work/ws/bin" "$work/ws/.venv/bin"
printf 'print("hello from the snapshot")\n' >"$work/ws/src/pkg/main.py"
printf '# sample workspace\n' >"$work/ws/README.md"
printf '#!/bin/sh\nexec python3 src/pkg/main.py\n' >"$work/ws/bin/start"
chmod 755 "$work/ws/bin/start"
ln -s ../../bin/start "$work/ws/.venv/bin/start"
tar -C "$work/ws" --sort=name --owner=0 --group=0 --numeric-owner \
	-czf "$work/sample.tar.gz" .

echo "\$ wsnap check -v sample.tar.gz"
"$wsnap" check -v "$work/sample.tar.gz"
echo "\$ wsnap ls sample.tar.gz"
"$wsnap" ls "$work/sample.tar.gz"
