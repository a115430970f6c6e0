# SPDX-License-Identifier: MIT
# Sourced by tests/e2e/e2e_hydrate*.sh, after mount_lib.sh: the rich snapshot
# $ar, the overlay kinds to test ($kinds: kernel as root, fuse where
# fuse-overlayfs is installed), what is mounted where (type_at, gone), and
# the check that the diff of a hydrated workspace read from its upper
# directory answers as the full comparison.
. "$(dirname "$0")/../lib/mount_lib.sh"

W=$WSNAP_BIN
hh=$WSNAP_SOURCE_DIR/tests/lib/hydrate_helper.py
python3 "$helper" make "$work"
ar=$work/snap.tar

kinds=
[ "$(id -u)" = 0 ] && kinds=kernel
if command -v fuse-overlayfs >/dev/null; then
	kinds="$kinds fuse"
elif [ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ]; then
	fail "fuse-overlayfs missing and WSNAP_REQUIRE_FUSE=1"
fi
[ -n "$kinds" ] || { echo "SKIP: $name: no overlay can be mounted"; exit 0; }

# state_of WS: the state directory of a workspace
state_of() { echo "$(dirname "$1")/.$(basename "$1").wsnap"; }

# use_kind KIND: the overlay kind to test, its mount type ($fstype), the
# workspace $ws and its state directory $st
use_kind() {
	kind=$1
	fstype=overlay
	[ "$kind" = fuse ] && fstype=fuse.fuse-overlayfs
	ws=$work/ws-$kind
	st=$(state_of "$ws")
}

# type_at PATH: the type of the topmost mount at PATH ("" for none)
type_at() { awk -v p="$1" '$5 == p { for (i = 7; $i != "-"; i++); t = $(i + 1) }
	END { print t }' /proc/self/mountinfo; }
mounts_under() { awk -v w="$1" 'index($5, w) == 1' /proc/self/mountinfo |
	wc -l; }

# gone WS: no mount at the workspace nor in its state directory, no state
gone() {
	local st
	st=$(state_of "$1")
	! is_mounted "$1" || fail "$1 still mounted"
	[ "$(mounts_under "$st")" = 0 ] || fail "mounts left under $st"
	[ ! -e "$st" ] || fail "state left: $(ls -A "$st")"
}

# read_from WS HOW [POLICY...]: 'diff -v' says side B is read HOW
read_from() {
	local ws=$1 how=$2
	shift 2
	"$W" diff -v "$@" "$ar" "$ws" >/dev/null 2>"$work/v.err" || true
	grep -q "^wsnap: diff: B: .* read $how" "$work/v.err" ||
		fail "diff $*: B not read $how: $(cat "$work/v.err")"
}

# same_as_full WS [POLICY...]: the diff read from the upper directory (it
# must be) answers exactly as the full comparison (--full, through the
# overlay), in every output format, rejections included
same_as_full() {
	local ws=$1 opts rc1 rc2
	shift
	read_from "$ws" "from its upper directory" "$@"
	read_from "$ws" "as a directory" --full "$@"
	for opts in "" --json --stat "--json --stat" "--mtime --json"; do
		rc1=0 rc2=0
		# shellcheck disable=SC2086
		"$W" diff $opts "$@" "$ar" "$ws" >"$work/d1" 2>"$work/e1" || rc1=$?
		# shellcheck disable=SC2086
		"$W" diff --full $opts "$@" "$ar" "$ws" >"$work/d2" 2>"$work/e2" ||
			rc2=$?
		[ $rc1 = $rc2 ] && cmp -s "$work/d1" "$work/d2" &&
			cmp -s "$work/e1" "$work/e2" || {
			diff -u "$work/d2" "$work/d1" >&2 || true
			cat "$work/e1" "$work/e2" >&2
			fail "diff $opts $*: exit $rc1 from the upper directory, $rc2 in full"
		}
	done
}
