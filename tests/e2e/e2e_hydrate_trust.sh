#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end regression (policy.md section 11): unmount
# and hydrate act only on what hydrate made. 'wsnap unmount WS' used to
# trust '.WS.wsnap/state' wholesale and remove the trees it named, and a
# failed hydrate removed a '.DIR.wsnap-work' it had not made. Here a state
# is forged (its directory a symlink, another user's, group or other
# writable, naming a victim), or a real one changed after hydrate (its
# work directory swapped for a symlink or another directory, its file
# edited), a '.DIR.wsnap-work' is there before hydrate, and two
# workspaces share one --upper on another file system: every time the
# victim survives, and unmount refuses (exit 4) with nothing changed.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

# shellcheck disable=SC2086
set -- $kinds
kind=$1

victim=$work/victim
mkdir -p "$victim/sub"
printf 'precious\n' >"$victim/keep"
printf 'precious\n' >"$victim/sub/deep"

alive() {
	[ -f "$victim/keep" ] && [ -f "$victim/sub/deep" ] ||
		fail "$1: the victim was removed"
}

# forge DIR WS: a state in DIR for workspace WS naming the victim as its
# fresh upper directory and as its work directory
forge() {
	printf '%s\n' "wsnap-hydrate 1" "workspace $2" "archive -" \
		"policy 0123456789abcdef0123456789abcdef" "overlay $kind" \
		"lower $1/lower" "upper $victim" "own-upper 1" \
		"work $victim" >"$1/state"
}

# refused WHAT WS: unmount of WS exits 4 saying why; the victim stays
refused() {
	expect_rc 4 "$W" unmount "$2"
	grep -q "untrusted state of a hydrated workspace" "$work/stderr" ||
		fail "$1: $(cat "$work/stderr")"
	[ "$(wc -l <"$work/stderr")" = 1 ] || fail "$1: not one line"
	alive "$1"
}

# ---- forged states: nothing hydrated at all ----
ws=$work/ws-forged
st=$(state_of "$ws")
mkdir "$ws" "$work/evil"
chmod 700 "$work/evil"
forge "$work/evil" "$ws"
ln -s "$work/evil" "$st"
refused "state directory a symlink" "$ws"
[ -L "$st" ] && [ -f "$work/evil/state" ] || fail "symlink: state changed"
grep -q "(a symlink)" "$work/stderr" || fail "symlink: $(cat "$work/stderr")"
# hydrate does not send the user to unmount it either
expect_rc 4 "$W" hydrate "$ar" "$ws"
! grep -q "wsnap unmount" "$work/stderr" && grep -q "remove it by hand" \
	"$work/stderr" || fail "hydrate over a forged state: $(cat "$work/stderr")"
rm "$st"

mkdir -m 700 "$st"
forge "$st" "$ws"
if [ "$(id -u)" = 0 ]; then
	chown nobody "$st"
	refused "state directory of another user" "$ws"
	grep -q "owned by uid" "$work/stderr" || fail "owner: $(cat "$work/stderr")"
	chown 0 "$st"
fi
for mode in 770 707 777 1777; do
	chmod $mode "$st"
	refused "state directory mode $mode" "$ws"
done
chmod 700 "$st"
refused "a trusted state naming the victim" "$ws"
grep -q "hydrate does not make" "$work/stderr" ||
	fail "victim named: $(cat "$work/stderr")"
rm -r "$st"

# ---- real workspaces, --upper on another file system ----
if [ "$(id -u)" != 0 ]; then
	echo "PASS: $name (forged states only: another file system needs root)"
	exit 0
fi
other=$work/other
mkdir "$other"
mount -t tmpfs -o size=64m wsnap-e2e "$other"
up=$other/up
wk=$other/.up.wsnap-work
ws=$work/ws1
st=$(state_of "$ws")
expect_rc 0 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$ws"
[ -d "$wk" ] && grep -q "^work-id " "$st/state" ||
	fail "the work directory beside --upper is not recorded"
printf 'mine\n' >"$ws/mine.txt"
ino=$(stat -c %i "$wk")

# still mounted, state unchanged
intact() {
	is_mounted "$ws" && is_mounted "$st/lower" && [ -f "$st/state" ] &&
		[ "$(cat "$ws/mine.txt")" = mine ] || fail "$1: something changed"
	alive "$1"
}

# a second workspace on the same --upper: refused, the first one's work
# directory is not rolled back
expect_rc 4 "$W" hydrate --overlay $kind --upper "$up" "$ar" "$work/ws2"
grep -q "File exists" "$work/stderr" || fail "shared --upper: $(cat "$work/stderr")"
[ "$(stat -c %i "$wk")" = "$ino" ] || fail "shared --upper: work directory removed"
[ ! -e "$(state_of "$work/ws2")" ] && ! is_mounted "$work/ws2" ||
	fail "shared --upper: the failed hydrate left state or a mount"
intact "shared --upper"

# the work directory swapped for a symlink to the victim
mv "$wk" "$other/moved"
ln -s "$victim" "$wk"
refused "work directory a symlink" "$ws"
intact "work directory a symlink"
[ -L "$wk" ] || fail "symlink: removed"
rm "$wk"

# ... for another directory
mkdir "$wk"
printf 'theirs\n' >"$wk/keep"
refused "work directory replaced" "$ws"
intact "work directory replaced"
[ -f "$wk/keep" ] || fail "replaced work directory: removed"
rm -r "$wk"
mv "$other/moved" "$wk"

# the state edited to name the victim
cp "$st/state" "$work/state.saved"
sed -i "s|^work .*|work $victim|" "$st/state"
refused "state naming the victim" "$ws"
intact "state naming the victim"
cp "$work/state.saved" "$st/state"

expect_rc 0 "$W" unmount "$ws"
[ ! -e "$st" ] && [ ! -e "$wk" ] && ! is_mounted "$ws" ||
	fail "unmount after the refusals did not finish the job"
[ -f "$up/mine.txt" ] || fail "--upper lost"

# a '.DIR.wsnap-work' there before hydrate is not rolled back
mkdir -p "$other/up2" "$other/.up2.wsnap-work"
printf 'theirs\n' >"$other/.up2.wsnap-work/keep"
expect_rc 4 "$W" hydrate --overlay $kind --upper "$other/up2" "$ar" "$work/ws3"
[ -f "$other/.up2.wsnap-work/keep" ] || fail "pre-existing work directory removed"
[ ! -e "$(state_of "$work/ws3")" ] && ! is_mounted "$work/ws3" ||
	fail "pre-existing work directory: state or a mount left"
alive "pre-existing work directory"
echo "PASS: $name ($kind)"
