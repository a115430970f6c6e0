# Sourced by tests/e2e_mount*.sh: FUSE availability, a scratch directory,
# and mounts that are always taken down on exit, failure included.
set -euo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
helper="$WSNAP_SOURCE_DIR/tests/mount_helper.py"
name=$(basename "$0" .sh)

fail() { echo "FAIL: $name: $*" >&2; exit 1; }

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] &&
		fail "/dev/fuse or fusermount3 missing and WSNAP_REQUIRE_FUSE=1"
	echo "SKIP: $name: no /dev/fuse or fusermount3"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e.XXXXXX")
mounts=()
bg_pids=()

is_mounted() { grep -qF " $1 " /proc/self/mountinfo; }

cleanup() {
	local m p
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for m in "${mounts[@]}"; do
		is_mounted "$m" && fusermount3 -uz "$m" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# newmnt NAME: a fresh empty mountpoint, remembered for cleanup.
newmnt() {
	mkdir -p "$work/$1"
	mounts+=("$work/$1")
	echo "$work/$1"
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
