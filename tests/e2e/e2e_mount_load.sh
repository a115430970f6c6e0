#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: a mount under load and faults.
#  1. 64 concurrent readers (8 processes x 8 threads) for 30 seconds over
#     3,000 files of a plain archive, every byte checked, no error; the
#     daemon's memory sampled and required to stay flat; then 10 seconds
#     over the same snapshot as zstd (served from the spill file);
#  2. holders (an open descriptor, a working directory inside) seen by
#     fuser, the mount detached with 'fusermount3 -uz' under them: they keep
#     reading the right bytes, the daemon exits once they let go, and the
#     mountpoint takes a new mount;
#  3. the daemon killed with SIGKILL: 'fusermount3 -u' clears the dead
#     mount and a new mount works.
# tests/lib/mount_load.py makes the archive and does the reading.
. "$(dirname "$0")/../lib/mount_lib.sh"
load="$WSNAP_SOURCE_DIR/tests/lib/mount_load.py"
# A sanitizer build's quarantine (256 MiB by default) holds freed memory
# back and would read as growth: keep it small for the daemon.
if ldd "$WSNAP_BIN" 2>/dev/null | grep libasan >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
fi

# wait_gone PID: until the process has exited (bounded, 20 s)
wait_gone() {
	local i
	for i in $(seq 1 400); do
		[ -e "/proc/$1" ] || return 0
		sleep 0.05
	done
	fail "process $1 did not exit"
}

# check_files MNT: a few files read back whole and checked
check_files() {
	python3 - "$1" "$load" <<'EOF' || fail "files differ on $1"
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("ml", sys.argv[2])
ml = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ml)
for p in ["d00/f0000.bin", "d07/f0531.bin", "big/b3.bin"]:
    with open(os.path.join(sys.argv[1], p), "rb") as f:
        data = f.read()
    assert data == ml.expect(ml.pattern(p), 0, len(data)), p
EOF
}

python3 "$load" make "$work" 3000
zstd -q -o "$work/load.tar.zst" "$work/load.tar"

# 1. load
for spec in "load.tar 30" "load.tar.zst 10"; do
	read -r ar secs <<<"$spec"
	newmnt "mnt-load-$ar"
	expect_rc 0 "$WSNAP_BIN" mount "$work/$ar" "$mnt"
	pid=$(python3 "$load" pid "$work/$ar" "$mnt")
	python3 "$load" load "$work" "$mnt" "$secs" 8 8 "$pid" ||
		fail "$ar: load"
	expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
	wait_gone "$pid"
done

# 2. holders, then a lazy detach under them
newmnt mnt-hold
expect_rc 0 "$WSNAP_BIN" mount "$work/load.tar" "$mnt"
pid=$(python3 "$load" pid "$work/load.tar" "$mnt")
holders=()
for f in d01/f0080.bin d02/f0151.bin big/b1.bin; do
	out="$work/hold-${f//\//_}.out"
	python3 "$load" hold "$mnt" "$f" 4 >"$out" 2>&1 &
	holders+=("$!")
	bg_pids+=("$!")
done
n=0
for i in $(seq 1 400); do
	n=$(grep -l ready "$work"/hold-*.out 2>/dev/null | wc -l || true)
	[ "$n" -eq 3 ] && break
	sleep 0.05
done
[ "$n" -eq 3 ] || fail "holders not ready: $(cat "$work"/hold-*.out)"
users=$(fuser -m "$mnt" 2>/dev/null || true)
for h in "${holders[@]}"; do
	[[ " $users " == *" $h"* ]] || fail "fuser -m does not list holder $h ($users)"
done
fusermount3 -uz "$mnt" || fail "fusermount3 -uz"
! is_mounted "$mnt" || fail "fusermount3 -uz left the mount"
[ -e "/proc/$pid" ] || fail "the daemon exited while holders still read"
for h in "${holders[@]}"; do
	wait "$h" || fail "a holder failed after the lazy unmount: $(cat "$work"/hold-*.out)"
done
grep -q "reads ok" "$work"/hold-big_b1.bin.out || fail "holder output"
wait_gone "$pid"
expect_rc 0 "$WSNAP_BIN" mount "$work/load.tar" "$mnt"
check_files "$mnt"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"

# 3. SIGKILL, cleared by fusermount3 -u
newmnt mnt-kill
expect_rc 0 "$WSNAP_BIN" mount "$work/load.tar" "$mnt"
pid=$(python3 "$load" pid "$work/load.tar" "$mnt")
kill -KILL "$pid"
wait_gone "$pid"
expect_rc 2 ls "$mnt"
grep -q "Transport endpoint is not connected" "$work/stderr" ||
	fail "dead daemon: $(cat "$work/stderr")"
fusermount3 -u "$mnt" 2>"$work/stderr" ||
	fail "fusermount3 -u on a dead mount: $(cat "$work/stderr")"
! is_mounted "$mnt" || fail "fusermount3 -u left the dead mount"
expect_rc 0 "$WSNAP_BIN" mount "$work/load.tar" "$mnt"
check_files "$mnt"
expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
echo "e2e_mount_load: ok"
