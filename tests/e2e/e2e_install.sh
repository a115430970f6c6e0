#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 'DESTDIR=... cmake --install' of the build: exactly the program, its two
# man pages, the mount(8) helper, the bash completion, README.md, LICENSE
# and doc/*.md, under the configured GNUInstallDirs; and the installed
# mount.fuse.wsnap translates mount(8)'s options into 'wsnap mount': every
# policy option of 'wsnap help mount' as an -o word, mount(8)'s own options
# dropped, the rest passed on with -o (checked with -f -v, which prints the
# command and runs nothing), and a real mount through it where FUSE works,
# whose source findmnt and df show as the archive.
set -euo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}" "${WSNAP_BUILD_DIR:?}"
fail() { echo "FAIL: e2e_install: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-install.XXXXXX")
cleanup() {
	if [ -d "$work/mnt" ] && awk -v p="$work/mnt" '$5 == p { f = 1 }
		END { exit !f }' /proc/self/mountinfo; then
		fusermount3 -uz "$work/mnt" 2>/dev/null || true
	fi
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# cached NAME DEFAULT: the build's cache value of NAME, or DEFAULT
cached() {
	local v
	v=$(sed -n "s/^$1:[A-Z]*=//p" "$WSNAP_BUILD_DIR/CMakeCache.txt")
	printf '%s\n' "${v:-$2}"
}
prefix=$(cached CMAKE_INSTALL_PREFIX /usr/local)
# under DIR: DIR as installed, below the prefix unless absolute
under() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$prefix/$1" ;; esac; }
bindir=$(under "$(cached CMAKE_INSTALL_BINDIR bin)")
mandir=$(under "$(cached CMAKE_INSTALL_MANDIR share/man)")
docdir=$(under "$(cached CMAKE_INSTALL_DOCDIR share/doc/wsnap)")
helperdir=$(under "$(cached WSNAP_MOUNT_HELPER_DIR sbin)")
compdir=$(under "$(cached WSNAP_BASH_COMPLETION_DIR \
	share/bash-completion/completions)")

dest=$work/dest
DESTDIR=$dest cmake --install "$WSNAP_BUILD_DIR" >"$work/log" 2>&1 ||
	fail "cmake --install: $(cat "$work/log")"
{
	echo "$bindir/wsnap"
	echo "$helperdir/mount.fuse.wsnap"
	echo "$mandir/man1/wsnap.1"
	echo "$mandir/man8/mount.fuse.wsnap.8"
	echo "$compdir/wsnap"
	echo "$docdir/README.md"
	echo "$docdir/LICENSE"
	for f in "$WSNAP_SOURCE_DIR"/doc/*.md; do echo "$docdir/${f##*/}"; done
} | sort >"$work/want"
(cd "$dest" && find . ! -type d | sed 's/^\.//' | sort) >"$work/got"
diff -u "$work/want" "$work/got" >"$work/diff" ||
	fail "installed files differ from the expected: $(cat "$work/diff")"
for f in "$bindir/wsnap" "$helperdir/mount.fuse.wsnap"; do
	[ -x "$dest$f" ] || fail "$f is not executable"
done
cmp -s "$WSNAP_BIN" "$dest$bindir/wsnap" || fail "installed wsnap differs"
cmp -s "$WSNAP_SOURCE_DIR/contrib/wsnap.bash" "$dest$compdir/wsnap" ||
	fail "installed completion differs"

helper=$dest$helperdir/mount.fuse.wsnap
sh -n "$helper" || fail "the helper is not valid sh"
grep -qxF "wsnap=$bindir/wsnap" "$helper" ||
	fail "the helper does not run $bindir/wsnap"

# fake OPTS: the command the helper would run for mount -o OPTS, without
# the program's path; its status in $rc
fake() {
	rc=0
	out=$("$helper" /srv/snap.tar /mnt/snap -f -v -o "$1" 2>"$work/err") ||
		rc=$?
	out=${out#* }
}
fake rw,nofail,_netdev,user,users,nouser,defaults,noauto,x-systemd.automount
[ "$rc" -eq 0 ] && [ "$out" = "mount -- /srv/snap.tar /mnt/snap" ] ||
	fail "mount(8)'s own options not dropped: $rc '$out' $(cat "$work/err")"
fake ro,skip=.git,allow_other,skip=node_modules,max_members=10,uid=5,noatime
[ "$rc" -eq 0 ] && [ "$out" = "mount --skip .git --skip node_modules \
--max-members 10 -o allow_other,uid=5,noatime -- /srv/snap.tar /mnt/snap" ] ||
	fail "options translated to '$out' ($rc)"
# a remote archive's options (cli.md "Remote snapshots") are wsnap mount's
fake cache_size=64M,timeout=5,cacert=/etc/ca.pem
[ "$rc" -eq 0 ] && [ "$out" = "mount -o cache_size=64M,timeout=5,cacert=/etc/ca.pem \
-- /srv/snap.tar /mnt/snap" ] || fail "remote options translated to '$out' ($rc)"
fake skip
[ "$rc" -eq 2 ] && grep -q "needs a value" "$work/err" ||
	fail "'-o skip' without a value: $rc '$out' $(cat "$work/err")"
out=$("$helper" /a.tar /mnt -f -o skip=x) && [ -z "$out" ] ||
	fail "-f without -v printed '$out'"

# every policy option of 'wsnap help mount' has its -o word
"$WSNAP_BIN" help mount | sed -n '/^policy options/,$p' |
	sed -nE 's/^  --([a-z-]+)( ([A-Z]+))?  .*/\1 \3/p' >"$work/policy"
[ "$(wc -l <"$work/policy")" -ge 10 ] || fail "policy options of mount help"
opts=
expect="mount"
while read -r name arg; do
	# mount's own -o words (above), passed to it as they are
	case $name in timeout | cacert | cache-size) continue ;; esac
	word=$(printf '%s' "$name" | tr - _)
	if [ -n "$arg" ]; then
		opts=$opts,$word=1
		expect="$expect --$name 1"
	else
		opts=$opts,$word
		expect="$expect --$name"
	fi
done <"$work/policy"
fake "${opts#,}"
[ "$rc" -eq 0 ] && [ "$out" = "$expect -- /srv/snap.tar /mnt/snap" ] ||
	fail "policy options as -o words: '$out', want '$expect ...'"

# a real mount through the helper, with the built wsnap (found on PATH when
# nothing is installed where the helper looks first)
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] && fail "no /dev/fuse or fusermount3"
	echo "e2e_install: no FUSE, the mount through the helper not run"
elif [ -e "$bindir/wsnap" ]; then
	echo "e2e_install: $bindir/wsnap exists, the mount through the helper" \
		"not run (it would run that one)"
else
	mkdir -p "$work/tree/src" "$work/tree/big" "$work/mnt"
	echo hello >"$work/tree/src/a.txt"
	echo big >"$work/tree/big/b"
	tar -C "$work/tree" -cf "$work/snap.tar" .
	PATH=$(dirname "$WSNAP_BIN"):$PATH "$helper" "$work/snap.tar" \
		"$work/mnt" -o rw,nofail,skip=big 2>"$work/err" ||
		fail "mount through the helper: $(cat "$work/err")"
	[ "$(cat "$work/mnt/src/a.txt")" = hello ] || fail "mounted content"
	[ ! -e "$work/mnt/big" ] || fail "skip=big not applied"
	grep -F " $work/mnt " /proc/self/mountinfo | grep -q ' fuse.wsnap ' ||
		fail "not a fuse.wsnap mount"
	# the source is the archive, the size its file bytes (6, one block)
	src=$(findmnt -n -o SOURCE --mountpoint "$work/mnt")
	[ "$src" = "$(realpath "$work/snap.tar")" ] || fail "findmnt SOURCE '$src'"
	[ "$(df -B1 --output=source,size "$work/mnt" | tail -1 | tr -s " ")" = \
		"$(realpath "$work/snap.tar") 4096" ] ||
		fail "df shows: $(df -B1 --output=source,size "$work/mnt")"
	fusermount3 -u "$work/mnt" || fail "fusermount3 -u"
fi
echo "e2e_install: ok"
