# SPDX-License-Identifier: MIT
# Sourced by tests/e2e/e2e_mount*.sh: FUSE availability, a scratch directory,
# and mounts that are always taken down on exit, failure included.
set -euo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
helper="$WSNAP_SOURCE_DIR/tests/lib/mount_helper.py"
name=$(basename "$0" .sh)

fail() { echo "FAIL: $name: $*" >&2; exit 1; }

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] &&
		fail "/dev/fuse or fusermount3 missing and WSNAP_REQUIRE_FUSE=1"
	echo "SKIP: $name: no /dev/fuse or fusermount3"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e.XXXXXX")
bg_pids=()

is_mounted() { awk -v p="$1" '$5 == p { f = 1 } END { exit !f }' \
	/proc/self/mountinfo; }

# Every mount under $work is taken down (lazily: also when busy or dead)
# before anything is removed, and rm never crosses into a mount.
cleanup() {
	local p m
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do
		fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			true
	done
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# newmnt NAME: sets mnt to a fresh empty mountpoint under $work.
newmnt() {
	mnt=$work/$1
	mkdir -p "$mnt"
}

# expect_rc WANT CMD...: runs CMD, fails unless it exits WANT; its stderr
# is kept in $work/stderr.
expect_rc() {
	local want=$1 rc=0
	shift
	"$@" 2>"$work/stderr" || rc=$?
	[ "$rc" -eq "$want" ] ||
		fail "'$*' exited $rc, want $want: $(cat "$work/stderr")"
}

# ---- compressed archives read in place, and the spill (cli.md "Compressed
# archives"): a $TMPDIR of the test's own shows whether a spill was made.

# private_tmpdir: $TMPDIR (empty, 0700) and the index cache under $work.
private_tmpdir() {
	export TMPDIR=$work/tmp WSNAP_CACHE_DIR=$work/cache
	mkdir -m 0700 "$TMPDIR"
}

# tmpdir_empty WHAT: nothing in $TMPDIR.
tmpdir_empty() {
	[ -z "$(ls -A "$TMPDIR")" ] || fail "$1: \$TMPDIR holds $(ls -A "$TMPDIR")"
}

# tmpdir_files PID WHAT: how many of the process's descriptors are files
# under $TMPDIR, unlinked ones included (ls does not show those;
# /proc/PID/fd names them, ' (deleted)' appended), into held. Fails if the
# process is gone, where a count of 0 would prove nothing.
tmpdir_files() {
	[ -d "/proc/$1/fd" ] || fail "$2: the daemon (pid $1) is gone"
	held=$(find "/proc/$1/fd" -lname "$TMPDIR/*" 2>/dev/null | wc -l)
}

# no_spill PID WHAT: the daemon PID holds no file under $TMPDIR, and
# $TMPDIR is empty.
no_spill() {
	local held
	tmpdir_files "$1" "$2"
	[ "$held" -eq 0 ] || fail "$2: the daemon holds $held files in \$TMPDIR"
	tmpdir_empty "$2"
}

# spilled PID WHAT: the daemon PID holds the (unlinked) spill file.
spilled() {
	local held
	tmpdir_files "$1" "$2"
	[ "$held" -gt 0 ] ||
		fail "$2: no spill file, yet the stream has no restart points"
}

# mount_fg ARCHIVE [OPT...]: a foreground mount of ARCHIVE at $mnt, once
# it serves; its pid in fg (stopped by cleanup if the test fails).
mount_fg() {
	local a=$1
	shift
	"$WSNAP_BIN" mount -f "$@" "$a" "$mnt" 2>"$work/fg.err" &
	fg=$!
	bg_pids+=("$fg")
	for _ in $(seq 1 600); do
		is_mounted "$mnt" && return 0
		[ -e "/proc/$fg" ] || fail "-f exited: $(cat "$work/fg.err")"
		sleep 0.05
	done
	fail "$a not mounted"
}

# umount_fg: takes mount_fg's mount down; the daemon must exit 0.
umount_fg() {
	fusermount3 -u "$mnt"
	wait "$fg" || fail "-f exited $?: $(cat "$work/fg.err")"
}
