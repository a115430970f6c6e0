#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: symlink targets and names judged for the filesystem they land
# on (policy.md 4 and 7.7). 'check' refuses a target that
# escapes only when names fold; 'export' refuses names that collide, or
# links that resolve differently, where the destination folds case: a
# casefold ext4 directory (chattr +F), FAT, and a FUSE filesystem (bindfs),
# which cannot be told to compare bytes. XFS compares bytes and takes them.
# Each filesystem runs where this kernel and machine have it (loop devices,
# CONFIG_UNICODE for casefold, vfat, /dev/fuse) and says 'skip:' where not;
# with WSNAP_REQUIRE_FUSE=1 the FUSE part must run.
set -euo pipefail
: "${WSNAP_BIN:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skip: $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-casefold-XXXXXX")
mounts=()
cleanup() {
	local m i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		m=${mounts[i]}
		if mountpoint -q "$m" 2>/dev/null; then
			umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null ||
				umount -l "$m" 2>/dev/null || true
		fi
	done
	for img in "$work"/*.img; do
		[ -e "$img" ] || continue
		losetup -j "$img" -O NAME -n 2>/dev/null | while read -r dev; do
			losetup -d "$dev" 2>/dev/null || true
		done
	done
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# mk_tar OUT SPEC...: f:NAME:CONTENT, d:NAME, l:NAME:TARGET
mk_tar() {
	python3 - "$@" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for spec in sys.argv[2:]:
        kind, rest = spec.split(":", 1)
        if kind == "f":
            name, content = rest.split(":", 1)
            i = tarfile.TarInfo(name); i.size = len(content.encode())
            t.addfile(i, io.BytesIO(content.encode()))
        elif kind == "d":
            i = tarfile.TarInfo(rest); i.type = tarfile.DIRTYPE; i.mode = 0o755
            t.addfile(i)
        else:
            name, target = rest.split(":", 1)
            i = tarfile.TarInfo(name); i.type = tarfile.SYMTYPE; i.linkname = target
            t.addfile(i)
EOF
}

# expect RC MESSAGE CMD...: exit code and the one line on stderr
expect() {
	local want=$1 msg=$2 rc=0
	shift 2
	"$@" 2>err || rc=$?
	[ "$rc" -eq "$want" ] || fail "$*: exit $rc, wanted $want: $(cat err)"
	[ -z "$msg" ] || grep -qxF "$msg" err || fail "$*: message: $(cat err)"
}

mk_tar issue.tar l:p1/p2/s:../.. l:p1/p2/link:S/../../outside
mk_tar collide.tar f:x:x f:README:upper f:readme:lower
mk_tar caselink.tar d:Dir f:Dir/f:f l:l:dir/f
mk_tar clean.tar d:Dir f:Dir/f:f l:l:Dir/f f:other:o

# --- the strict walk, whatever the destination ---
expect 3 "wsnap: unsafe tar member 'p1/p2/link': symlink target escapes archive root: S/../../outside" \
	"$WSNAP_BIN" check issue.tar
expect 3 "" "$WSNAP_BIN" export issue.tar never
[ ! -e never ] || fail "a rejected archive created its destination"
"$WSNAP_BIN" check collide.tar || fail "check refused names that differ by case"
"$WSNAP_BIN" check caselink.tar || fail "check refused a target safe either way"

# refused  DEST: the hazardous archives are refused there, nothing written;
# the clean one is exported
refused() {
	local d=$1
	expect 3 "wsnap: unsafe tar member 'readme': destination folds case: README" \
		"$WSNAP_BIN" export collide.tar "$d/c1"
	[ ! -e "$d/c1" ] || fail "$d: a refused export left its destination"
	mkdir "$d/c2"
	expect 3 "wsnap: unsafe tar member 'l': destination folds case: Dir" \
		"$WSNAP_BIN" export caselink.tar "$d/c2"
	[ -z "$(ls -A "$d/c2")" ] || fail "$d: written before the refusal: $(ls -A "$d/c2")"
}
# taken DEST: everything is exported as it is
taken() {
	local d=$1
	"$WSNAP_BIN" export collide.tar "$d/t1" || fail "$d: collide.tar refused"
	[ "$(cat "$d/t1/README")" = upper ] && [ "$(cat "$d/t1/readme")" = lower ] ||
		fail "$d: README and readme"
	"$WSNAP_BIN" export caselink.tar "$d/t2" || fail "$d: caselink.tar refused"
}

# loopfs NAME SIZE MKFS...: a fresh filesystem image mounted on $work/NAME;
# false when this machine cannot (no loop device, no such filesystem)
loopfs() {
	local name=$1 size=$2
	shift 2
	truncate -s "$size" "$name.img"
	"$@" "$name.img" >/dev/null 2>&1 || return 1
	mkdir -p "$name"
	mount -o loop "$name.img" "$name" 2>/dev/null || return 1
	mounts+=("$work/$name")
}

ran=0
# --- ext4 with casefold: per directory, and what +F makes inherits it ---
if ! command -v mkfs.ext4 >/dev/null || ! command -v chattr >/dev/null; then
	skip "ext4 casefold: e2fsprogs missing"
elif ! loopfs ext4cf 32M mkfs.ext4 -q -O casefold; then
	skip "ext4 casefold: the kernel cannot mount it (CONFIG_UNICODE, loop devices)"
else
	mkdir ext4cf/cf ext4cf/plain
	chattr +F ext4cf/cf || fail "chattr +F"
	refused ext4cf/cf
	taken ext4cf/plain
	"$WSNAP_BIN" export clean.tar ext4cf/cf/ok || fail "ext4 casefold: clean.tar"
	[ "$(readlink ext4cf/cf/ok/l)" = Dir/f ] || fail "ext4 casefold: link"
	# a casefold directory inside a destination that does not fold
	mkdir -p ext4cf/plain/m/sub && chattr +F ext4cf/plain/m/sub
	mk_tar sub.tar f:first:1 f:sub/B:2 f:sub/b:3
	expect 3 "wsnap: unsafe tar member 'sub/b': destination folds case: sub/B" \
		"$WSNAP_BIN" export sub.tar ext4cf/plain/m
	[ -z "$(ls -A ext4cf/plain/m/sub)" ] || fail "ext4 casefold: written into sub"
	ran=$((ran + 1))
fi

# --- FAT: every directory folds ---
if ! command -v mkfs.vfat >/dev/null; then
	skip "vfat: dosfstools missing"
elif ! loopfs vfat 32M mkfs.vfat; then
	skip "vfat: the kernel cannot mount it"
else
	refused vfat
	ran=$((ran + 1))
fi

# --- XFS compares bytes (ASCII-CI XFS folds where a kernel still has it) ---
if ! command -v mkfs.xfs >/dev/null; then
	skip "xfs: xfsprogs missing"
elif ! loopfs xfs 300M mkfs.xfs -q; then
	skip "xfs: the kernel cannot mount it"
else
	taken xfs
	ran=$((ran + 1))
	if loopfs xfsci 300M mkfs.xfs -q -n version=ci; then
		refused xfsci
	else
		skip "xfs ascii-ci: not in this kernel"
	fi
fi

# --- FUSE (bindfs): no way to tell how it compares names, so it folds ---
if ! command -v bindfs >/dev/null || [ ! -c /dev/fuse ]; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] && fail "bindfs or /dev/fuse missing and WSNAP_REQUIRE_FUSE=1"
	skip "fuse: bindfs or /dev/fuse missing"
else
	mkdir -p under fuse
	if bindfs --no-allow-other under fuse 2>/dev/null; then
		mounts+=("$work/fuse")
		refused fuse
		"$WSNAP_BIN" export clean.tar fuse/ok || fail "fuse: clean.tar"
		[ "$(cat under/ok/other)" = o ] || fail "fuse: clean.tar content"
		ran=$((ran + 1))
	else
		[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] && fail "bindfs mount failed"
		skip "fuse: bindfs cannot mount here"
	fi
fi
echo "filesystems exercised: $ran"
