#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap diff -p' with the real tools. Two trees A
# and B differ in every way the issue lists (edits at the start, middle
# and end, trailing newlines, CRLF, empty files, added, deleted and renamed
# files and directories, mode changes, symlinks retargeted, file->symlink,
# symlink->directory and directory->file, binary files, names with
# spaces, quotes, tabs, newlines and invalid UTF-8). Packed with 'wsnap
# pack', their patch
#  - is byte for byte what git prints for the same change (git diff
#    --cached of a repository holding A, its index made from B), for -p,
#    -U 0, -U 10 and --stat; with --binary, the same but for the deflated
#    data of binary patches (libgit2's zlib output is not git's);
#  - applies with 'git apply' (outside any repository) onto an export of
#    A, after which 'wsnap diff' finds nothing between it and B: for the
#    text-only trees with -p, for all of them with --binary; and with
#    'patch -p1' for the text-only trees (but for the type changes of a
#    directory, which patch(1) cannot make);
#  - without --binary, and for a file over --max-diff-size, git apply
#    refuses the patch (never a partial result).
set -euo pipefail
: "${WSNAP_BIN:?}"
W=$WSNAP_BIN
name=e2e_diff_patch
fail() { echo "FAIL: $name: $*" >&2; exit 1; }
for tool in git patch; do
	command -v $tool >/dev/null ||
		fail "$tool missing (scripts/deps.sh installs it)"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-patch.XXXXXX")
trap 'rm -rf "$T"' EXIT
# git and wsnap see nothing of the user's: no config, no repository
# around the trees, no index cache
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_CEILING_DIRECTORIES=$T WSNAP_CACHE_DIR=$T/cache COLUMNS=80
mkdir -p "$HOME"
umask 022

# rc CMD...: runs CMD; its exit code in $RC, stdout in $T/out, stderr in
# $T/err.
rc() { RC=0; "$@" >"$T/out" 2>"$T/err" || RC=$?; }
expect_rc() { # want, what
	[ "$RC" -eq "$1" ] || { cat "$T/err" >&2; fail "$2: exit $RC, want $1"; }
}

lines() { seq -f "line %g" "$1"; }

# trees DIR_A DIR_B BINARY: A and B; BINARY=1 adds the binary files.
trees() {
	local a=$1 b=$2
	mkdir -p "$a" "$b"
	# edits at the start, in the middle, at the end
	lines 30 >"$a/edit.txt"
	lines 30 | sed -e 's/^line 1$/first/' -e 's/^line 15$/middle/' \
		-e 's/^line 30$/last/' >"$b/edit.txt"
	# trailing newlines: added, removed, and text after a missing one
	printf 'a\nb' >"$a/nonl-add"
	printf 'a\nb\n' >"$b/nonl-add"
	printf 'x\ny\n' >"$a/nonl-rm"
	printf 'x\ny' >"$b/nonl-rm"
	printf 'p\nq' >"$a/nonl-more"
	printf 'p\nq\nr' >"$b/nonl-more"
	printf 'one\r\ntwo\r\nthree\r\n' >"$a/crlf.txt"
	printf 'one\r\n2\r\nthree\r\n' >"$b/crlf.txt"
	# empty files: kept, filled, emptied, added, deleted
	: >"$a/empty-kept"
	: >"$b/empty-kept"
	: >"$a/empty-filled"
	printf 'now text\n' >"$b/empty-filled"
	printf 'text\n' >"$a/emptied"
	: >"$b/emptied"
	: >"$b/empty-new"
	: >"$a/empty-gone"
	# added, deleted, renamed files
	printf 'added\n' >"$b/added.txt"
	lines 5 >"$a/deleted.txt"
	lines 12 >"$a/old-name.txt"
	lines 12 >"$b/new-name.txt"
	# added, deleted, renamed directories
	mkdir -p "$b/newdir/sub" "$a/olddir/deep" "$a/mv-a/in" "$b/mv-b/in"
	printf 'new a\n' >"$b/newdir/sub/a.txt"
	printf 'new b\n' >"$b/newdir/b.txt"
	printf 'old x\n' >"$a/olddir/x"
	printf 'old y\n' >"$a/olddir/deep/y"
	for d in "$a/mv-a" "$b/mv-b"; do
		printf 'moved 1\n' >"$d/1"
		printf 'moved 2\n' >"$d/in/2"
	done
	# modes: only the owner's x bit is git's; with and without edits
	printf '#!/bin/sh\necho run\n' >"$a/run.sh"
	printf '#!/bin/sh\necho run\n' >"$b/run.sh"
	chmod 755 "$b/run.sh"
	printf 'tool v1\n' >"$a/tool"
	chmod 755 "$a/tool"
	printf 'tool v2\n' >"$b/tool"
	# symlinks: retargeted, file->symlink, symlink->directory,
	# directory->file, symlink->file
	ln -s edit.txt "$a/link"
	ln -s crlf.txt "$b/link"
	printf 'was a file\n' >"$a/f2l"
	ln -s edit.txt "$b/f2l"
	ln -s newdir "$a/l2d"
	mkdir "$b/l2d"
	printf 'inside\n' >"$b/l2d/inner.txt"
	mkdir "$a/d2f"
	printf 'in a dir\n' >"$a/d2f/f"
	printf 'now a file\n' >"$b/d2f"
	ln -s edit.txt "$a/l2f"
	printf 'was a link\n' >"$b/l2f"
	# names git quotes, and one it does not (a space)
	printf 'space 1\n' >"$a/with space.txt"
	printf 'space 2\n' >"$b/with space.txt"
	printf 'quoted\n' >"$b/quote\"d.txt"
	printf 'tab 1\n' >"$a/tab	here.txt"
	printf 'tab 2\n' >"$b/tab	here.txt"
	printf 'newline\n' >"$b/new"$'\n'"line.txt"
	printf 'bad 1\n' >"$a/bad"$'\xff\xfe'".txt"
	printf 'bad 2\n' >"$b/bad"$'\xff\xfe'".txt"
	printf 'utf-8\n' >"$b/caf"$'\xc3\xa9'".txt"
	[ "$3" = 1 ] || return 0
	# the same bytes every run: git's choice between a delta and a literal
	# binary patch depends on them
	python3 -c 'import random, sys
sys.stdout.buffer.write(random.Random(17).randbytes(3000))' >"$a/bin.dat"
	{ head -c 1000 "$a/bin.dat"; printf 'X\0Y'; tail -c +1004 "$a/bin.dat"; } \
		>"$b/bin.dat"
	printf 'new\0binary\n' >"$b/newbin"
	printf 'old\0binary\n' >"$a/delbin"
	printf 'text\n' >"$a/t2b"
	printf 'bin\0ary\n' >"$b/t2b"
}

# gitdiff A B ARGS...: git's patch from tree A to tree B (a repository
# holding A, its index made afresh from B; no renames, as wsnap has none).
gitdiff() {
	local a=$1 b=$2 r=$T/repo
	shift 2
	rm -rf "$r"
	mkdir "$r"
	cp -a "$a/." "$r/"
	git -C "$r" init -q
	git -C "$r" add -A
	git -C "$r" -c user.name=t -c user.email=t@t commit -q --allow-empty -m A
	find "$r" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	cp -a "$b/." "$r/"
	rm -f "$r/.git/index"
	git -C "$r" add -A
	git -C "$r" diff --cached --no-renames "$@"
}

# export_of ARCHIVE DIR: a fresh export
export_of() {
	rm -rf "$2"
	"$W" export "$1" "$2" || fail "export $1"
}

# applies PATCH ARCHIVE_A ARCHIVE_B HOW...: HOW (git apply, patch -p1)
# applied to an export of A gives B, as wsnap diff sees it; git apply
# --check first says it would
applies() {
	local p=$1 a=$2 b=$3 x=$T/x
	shift 3
	export_of "$a" "$x"
	if [ "$1" = git ]; then
		(cd "$x" && "$@" --check <"$p") >"$T/apply.out" 2>&1 ||
			{ cat "$T/apply.out" >&2; fail "$* --check of $(basename "$p")"; }
	fi
	(cd "$x" && "$@" <"$p") >"$T/apply.out" 2>&1 ||
		{ cat "$T/apply.out" >&2; fail "$* of $(basename "$p")"; }
	rc "$W" diff "$x" "$b"
	[ "$RC" -eq 0 ] && [ ! -s "$T/out" ] ||
		{ cat "$T/out" "$T/err" >&2; fail "$* of $(basename "$p"): not B"; }
}

# same_as_git WSNAP_PATCH GIT_PATCH WHAT
same_as_git() {
	cmp -s "$1" "$2" || { diff -u "$2" "$1" | head -60 >&2; fail "$3"; }
}

# ---- the text-only trees ----
trees "$T/ta" "$T/tb" 0
"$W" pack "$T/ta" "$T/ta.tar" && "$W" pack "$T/tb" "$T/tb.tar" ||
	fail "pack"
export_of "$T/ta.tar" "$T/xa"
export_of "$T/tb.tar" "$T/xb"

rc "$W" diff -p "$T/ta.tar" "$T/tb.tar"
expect_rc 1 "diff -p"
cp "$T/out" "$T/t.patch"
gitdiff "$T/xa" "$T/xb" >"$T/t.git"
same_as_git "$T/t.patch" "$T/t.git" "-p is not git's patch"
for u in 0 10; do
	"$W" diff -U $u "$T/ta.tar" "$T/tb.tar" >"$T/u.patch" || true
	gitdiff "$T/xa" "$T/xb" -U$u >"$T/u.git"
	same_as_git "$T/u.patch" "$T/u.git" "-U $u is not git's"
done
"$W" diff -p --stat "$T/ta.tar" "$T/tb.tar" >"$T/s.patch" || true
gitdiff "$T/xa" "$T/xb" --stat -p >"$T/s.git"
same_as_git "$T/s.patch" "$T/s.git" "--stat -p is not git's"
# a directory side and an archive side give the same patch
"$W" diff -p "$T/ta" "$T/tb.tar" >"$T/d.patch" || true
cmp -s "$T/d.patch" "$T/t.patch" || fail "a directory side changes the patch"

applies "$T/t.patch" "$T/ta.tar" "$T/tb.tar" git apply
applies "$T/u.patch" "$T/ta.tar" "$T/tb.tar" git apply
applies "$T/s.patch" "$T/ta.tar" "$T/tb.tar" git apply
# patch(1) removes files only once it is done, so it cannot turn a
# directory into a file or a symlink into a directory in one run: without
# those two parts, it makes B but for them
awk '/^diff --git / { skip = $3 ~ /^a\/(d2f|l2d)(\/|$)/ } !skip' \
	"$T/t.patch" >"$T/p1.patch"
export_of "$T/ta.tar" "$T/x"
(cd "$T/x" && patch -p1 -s <"$T/p1.patch") >"$T/apply.out" 2>&1 ||
	{ cat "$T/apply.out" >&2; fail "patch -p1"; }
rc "$W" diff "$T/x" "$T/tb.tar"
printf 'T\td2f\nD\td2f/f\nT\tl2d\nA\tl2d/inner.txt\n' >"$T/want"
cmp -s "$T/out" "$T/want" || { cat "$T/out" >&2; fail "patch -p1: not B"; }

# ---- with binary files ----
trees "$T/a" "$T/b" 1
"$W" pack "$T/a" "$T/a.tar" && "$W" pack "$T/b" "$T/b.tar" || fail "pack"
export_of "$T/a.tar" "$T/xa"
export_of "$T/b.tar" "$T/xb"
rc "$W" diff -p "$T/a.tar" "$T/b.tar"
expect_rc 1 "diff -p with binaries"
cp "$T/out" "$T/b.patch"
gitdiff "$T/xa" "$T/xb" >"$T/b.git"
same_as_git "$T/b.patch" "$T/b.git" "-p with binaries is not git's"
grep -qxF 'Binary files a/bin.dat and b/bin.dat differ' "$T/b.patch" ||
	fail "no 'Binary files' line"
rc bash -c 'cd "$1" && git apply --check <"$2"' bash "$T/xa" "$T/b.patch"
[ "$RC" -ne 0 ] && grep -q "without full index line" "$T/err" ||
	fail "git apply took binary changes without their data: $(cat "$T/err")"

rc "$W" diff --binary "$T/a.tar" "$T/b.tar"
expect_rc 1 "diff --binary"
cp "$T/out" "$T/bin.patch"
gitdiff "$T/xa" "$T/xb" --binary >"$T/bin.git"
# all but the base85 lines of the deflated data are git's
strip85() { grep -v '^[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]*$' "$1"; }
strip85 "$T/bin.patch" >"$T/bin.patch.s"
strip85 "$T/bin.git" >"$T/bin.git.s"
same_as_git "$T/bin.patch.s" "$T/bin.git.s" "--binary is not git's"
grep -q '^GIT binary patch$' "$T/bin.patch" || fail "no binary patch"
applies "$T/bin.patch" "$T/a.tar" "$T/b.tar" git apply
"$W" diff --binary --stat "$T/a.tar" "$T/b.tar" >"$T/bs.patch" || true
gitdiff "$T/xa" "$T/xb" --binary --stat >"$T/bs.git"
strip85 "$T/bs.patch" >"$T/bs.patch.s"
strip85 "$T/bs.git" >"$T/bs.git.s"
same_as_git "$T/bs.patch.s" "$T/bs.git.s" "--binary --stat is not git's"

# ---- over --max-diff-size: not read, and git apply refuses it ----
rc "$W" diff --binary --max-diff-size 20 -v "$T/a.tar" "$T/b.tar"
expect_rc 1 "--max-diff-size"
grep -qxF 'Binary files a/edit.txt and b/edit.txt differ' "$T/out" ||
	fail "a file over --max-diff-size is not shown as binary"
grep -q "over --max-diff-size (not read)" "$T/err" || fail "-v: $(cat "$T/err")"
cp "$T/out" "$T/big.patch"
rc bash -c 'cd "$1" && git apply --check <"$2"' bash "$T/xa" "$T/big.patch"
[ "$RC" -ne 0 ] || fail "git apply took a file that was not read"

# ---- the command line ----
rc "$W" diff -p --json "$T/a.tar" "$T/b.tar"
expect_rc 2 "-p --json"
rc "$W" diff -p "$T/a.tar" "$T/a.tar"
expect_rc 0 "-p of the same snapshot"
[ ! -s "$T/out" ] || fail "-p of the same snapshot printed something"
rc "$W" diff --stat "$T/a.tar" "$T/b.tar"
grep -q '^[0-9]* changes: ' "$T/out" || fail "--stat without -p changed"
echo "PASS: $name"
