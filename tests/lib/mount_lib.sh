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

# no_spill PID DIR WHAT: process PID (a filesystem daemon) holds no
# descriptor into DIR (not even an unlinked file, which ls would not show),
# and DIR is empty: nothing was spilled there
no_spill() {
	local held
	held=$(find "/proc/$1/fd" -lname "$2/*" 2>/dev/null | wc -l)
	[ "$held" -eq 0 ] || fail "$3: the daemon holds $held files in $2"
	[ -z "$(ls -A "$2")" ] || fail "$3: $2 holds $(ls -A "$2")"
}
