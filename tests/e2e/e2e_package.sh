#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package: 'dpkg-buildpackage -us -uc -b' in a copy of the source
# tree builds a .deb that passes lintian without errors and holds the
# program, the mount(8) helper, both man pages, the bash completion and the
# docs; unpacked into a scratch root (dpkg -x, nothing installed on this
# machine) its wsnap mounts a snapshot, and in a private mount namespace
# where the scratch root's /usr/bin and /usr/sbin are laid over the real
# ones, 'mount -t fuse.wsnap' and an fstab line ('mount -a -T FILE') mount
# through its /sbin/mount.fuse.wsnap, as findmnt shows.
# Needs dpkg-dev, debhelper and lintian: skipped without them, unless
# WSNAP_PACKAGE_TEST=1 (which also makes scripts/deps.sh install them).
set -euo pipefail
: "${WSNAP_SOURCE_DIR:?}"
fail() { echo "FAIL: e2e_package: $*" >&2; exit 1; }

for tool in dpkg-buildpackage dh lintian; do
	command -v "$tool" >/dev/null && continue
	[ "${WSNAP_PACKAGE_TEST:-0}" = 1 ] &&
		fail "$tool missing and WSNAP_PACKAGE_TEST=1"
	echo "SKIP: e2e_package: $tool missing (WSNAP_PACKAGE_TEST=1" \
		"scripts/deps.sh installs it)"
	exit 0
done

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-package.XXXXXX")
is_mounted() { awk -v p="$1" '$5 == p { f = 1 } END { exit !f }' \
	/proc/self/mountinfo; }
cleanup() {
	if is_mounted "$work/mnt"; then
		fusermount3 -uz "$work/mnt" 2>/dev/null || true
	fi
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# The source tree as a checkout holds it: git's files (tracked, and new
# ones not ignored) or, outside git, every file; never a build tree (a
# directory with a CMakeCache.txt).
src=$WSNAP_SOURCE_DIR
tree=$work/wsnap-src
mkdir "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard
else
	(cd "$src" && find . -path ./.git -prune -o ! -type d -print0 |
		sed -z 's|^\./||')
fi >"$work/files"
for cache in "$src"/*/CMakeCache.txt; do
	[ -e "$cache" ] || continue
	dir=${cache%/CMakeCache.txt}
	grep -zvF -- "${dir##*/}/" "$work/files" >"$work/files.new" || true
	mv "$work/files.new" "$work/files"
done
tar -C "$src" --null -T "$work/files" --ignore-failed-read -cf - \
	2>/dev/null | tar -C "$tree" -xf - || fail "copying the source tree"
[ -x "$tree/debian/rules" ] || fail "no debian/rules in the copied tree"

(cd "$tree" && DEB_BUILD_OPTIONS="parallel=2 nocheck" \
	dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
	fail "dpkg-buildpackage: $(tail -40 "$work/build.log")"
version=$(cd "$tree" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
deb=$work/wsnap_${version}_$arch.deb
changes=$work/wsnap_${version}_$arch.changes
[ -f "$deb" ] && [ -f "$changes" ] || fail "no $deb or $changes"

lintian --fail-on error "$changes" >"$work/lintian.log" 2>&1 ||
	fail "lintian: $(cat "$work/lintian.log")"
grep -E '^[EW]:' "$work/lintian.log" || true

dpkg-deb -f "$deb" Depends | grep -qw fuse3 || fail "does not depend on fuse3"
# linked: found by dpkg-shlibdeps
dpkg-deb -f "$deb" Depends | grep -qw libisal2 || fail "does not depend on libisal2"
# the libraries wsnap loads with dlopen (core/base/dynlib.h)
for dep in libcurl4 libgit2-1.5; do
	dpkg-deb -f "$deb" Depends | grep -qw -- "$dep" ||
		fail "does not depend on $dep (loaded with dlopen)"
done
root=$work/root
dpkg -x "$deb" "$root"
doc=usr/share/doc/wsnap
for f in usr/bin/wsnap usr/sbin/mount.fuse.wsnap \
	usr/share/man/man1/wsnap.1.gz usr/share/man/man8/mount.fuse.wsnap.8.gz \
	usr/share/bash-completion/completions/wsnap \
	usr/lib/python3/dist-packages/wsnap/__init__.py \
	usr/lib/python3/dist-packages/wsnap/py.typed \
	$doc/copyright $doc/changelog.Debian.gz; do
	[ -f "$root/$f" ] || fail "the package lacks /$f"
done
for f in "$src/README.md" "$src"/doc/*.md; do
	f=${f##*/}
	[ -f "$root/$doc/$f" ] || [ -f "$root/$doc/$f.gz" ] ||
		fail "the package lacks /$doc/$f"
done
"$root/usr/bin/wsnap" --version | grep -qF "wsnap ${version%-*}" ||
	fail "wsnap --version is not ${version%-*}: $("$root/usr/bin/wsnap" \
		--version)"
grep -qxF 'wsnap=/usr/bin/wsnap' "$root/usr/sbin/mount.fuse.wsnap" ||
	fail "the helper does not run /usr/bin/wsnap"
bash -c '. "$1" && complete -p wsnap' sh \
	"$root/usr/share/bash-completion/completions/wsnap" >/dev/null ||
	fail "the completion does not load"

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] && fail "no /dev/fuse or fusermount3"
	echo "e2e_package: ok (no FUSE: mounts not tried)"
	exit 0
fi

mkdir -p "$work/snap/src" "$work/snap/big" "$work/mnt"
echo hello >"$work/snap/src/a.txt"
echo big >"$work/snap/big/b"
tar -C "$work/snap" -cf "$work/sample.tar" .
"$root/usr/bin/wsnap" mount "$work/sample.tar" "$work/mnt" 2>"$work/err" ||
	fail "wsnap mount: $(cat "$work/err")"
[ "$(ls "$work/mnt")" = "$(printf 'big\nsrc')" ] &&
	[ "$(cat "$work/mnt/src/a.txt")" = hello ] ||
	fail "the mount shows: $(ls -R "$work/mnt")"
fusermount3 -u "$work/mnt" || fail "fusermount3 -u"

# mount(8) searches /sbin only: in a private mount (and PID) namespace the
# scratch root's /usr/sbin and /usr/bin are laid over the real ones. When
# the namespace's first process leaves, every process in it is killed and
# its mounts go with it.
cat >"$work/ns.sh" <<'EOF'
set -euo pipefail
fail() { echo "FAIL: e2e_package (namespace): $*" >&2; exit 1; }
for d in bin sbin; do
	mount -t overlay wsnap-package -o "lowerdir=$root/usr/$d:/usr/$d" \
		"/usr/$d" || fail "cannot lay $root/usr/$d over /usr/$d"
done
[ -x /sbin/mount.fuse.wsnap ] || fail "no /sbin/mount.fuse.wsnap"
# check MOUNTPOINT HOW: big/ skipped, src/a.txt served, type fuse.wsnap,
# the archive's path as the source in findmnt and df, df's size the file
# bytes (6: one block)
check() {
	local src
	[ ! -e "$1/big" ] && [ "$(cat "$1/src/a.txt")" = hello ] ||
		fail "$2: the mount shows: $(ls -R "$1")"
	type=$(findmnt -n -o FSTYPE --mountpoint "$1") ||
		fail "$2: findmnt does not know $1"
	[ "$type" = fuse.wsnap ] || fail "$2: findmnt says type '$type'"
	src=$(findmnt -n -o SOURCE --mountpoint "$1")
	[ "$src" = "$(realpath "$work/sample.tar")" ] ||
		fail "$2: findmnt says source '$src'"
	[ "$(df -B1 --output=source,size "$1" | tail -1 | tr -s " ")" = \
		"$src 4096" ] ||
		fail "$2: df shows: $(df -B1 --output=source,size "$1")"
	findmnt -n -o SOURCE,TARGET,FSTYPE --mountpoint "$1"
	umount "$1" || fail "$2: umount"
}
mkdir -p "$work/mnt-t" "$work/mnt-fstab"
mount -t fuse.wsnap "$work/sample.tar" "$work/mnt-t" -o ro,skip=big ||
	fail "mount -t fuse.wsnap"
check "$work/mnt-t" "mount -t fuse.wsnap"
esc() { printf '%s' "$1" | sed 's/\\/\\134/g; s/ /\\040/g; s/\t/\\011/g'; }
printf '%s %s fuse.wsnap ro,allow_other,nofail,skip=big 0 0\n' \
	"$(esc "$work/sample.tar")" "$(esc "$work/mnt-fstab")" >"$work/fstab"
mount -a -T "$work/fstab" || fail "mount -a -T fstab: $(cat "$work/fstab")"
check "$work/mnt-fstab" "fstab"
EOF
root=$root work=$work unshare --mount --propagation private --pid --fork \
	--mount-proc bash "$work/ns.sh" || fail "the mounts through the helper"
echo "e2e_package: ok"
