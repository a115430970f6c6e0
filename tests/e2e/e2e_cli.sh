#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the wsnap program's dispatch, usage and exit codes.
set -euo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0; "$WSNAP_BIN" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "bare wsnap exits $rc, want 2"
"$WSNAP_BIN" --help | grep '^usage: wsnap' >/dev/null || fail "--help prints usage"
"$WSNAP_BIN" --version | grep '^wsnap ' >/dev/null || fail "--version"
rc=0; "$WSNAP_BIN" no-such-command 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "unknown command exits $rc, want 2"

# Usage errors quote what was typed escaped like a name (policy.md section
# 2): no terminal sequence, right-to-left override or line separator
# reaches the terminal raw.
err=$("$WSNAP_BIN" $'x\e[2J\xe2\x80\xae\xe2\x80\xa8' 2>&1 >/dev/null) && fail "accepted"
[ "$err" = "wsnap: unknown command 'x\\x1b[2J\\u202e\\u2028' (see 'wsnap --help')" ] ||
	fail "unknown command message: $err"
err=$("$WSNAP_BIN" check --max-depth $'1\xe2\x80\x8b' x.tar 2>&1 >/dev/null) &&
	fail "accepted"
[ "$err" = "wsnap: check: invalid --max-depth '1\\u200b': want a whole number from 0 to 2097152 (see 'wsnap check --help')" ] ||
	fail "bad value message: $err"
err=$("$WSNAP_BIN" check $'--bad\xc2\xa0' x.tar 2>&1 >/dev/null) && fail "accepted"
[ "$err" = "wsnap: check: option '--bad\\xa0' is not known (see 'wsnap check --help')" ] ||
	fail "bad option message: $err"

# -V and --version: wsnap's version, then libarchive, libfuse and the
# compression libraries libarchive was built with, 'NAME VERSION' each
for opt in -V --version; do
	v=$("$WSNAP_BIN" "$opt") || fail "$opt exits $?"
	[ "$(printf '%s\n' "$v" | head -1)" = "wsnap $(sed -n \
		's/^project(wsnap VERSION \([0-9.]*\).*/\1/p' \
		"$WSNAP_SOURCE_DIR/CMakeLists.txt")" ] || fail "$opt first line: $v"
	printf '%s\n' "$v" | grep -qE '^libarchive [0-9]+\.[0-9]+' ||
		fail "$opt: no libarchive line: $v"
	printf '%s\n' "$v" | grep -qxF "libfuse $(pkg-config --modversion fuse3)" ||
		fail "$opt: no libfuse line: $v"
	printf '%s\n' "$v" | grep -qE '^(zlib|liblzma|bz2lib|libzstd|liblz4) ' ||
		fail "$opt: no compression library: $v"
	printf '%s\n' "$v" | grep -qvE '^[^ /]+ [^ /]+$' &&
		fail "$opt: a line is not 'NAME VERSION': $v"
done

# did you mean: the words of other tools and near misses, exit 2, the
# usage line first and then one hint line; nothing for a far miss
dym() {
	local err rc=0
	err=$("$WSNAP_BIN" "$1" 2>&1 >/dev/null) || rc=$?
	[ "$rc" -eq 2 ] || fail "'wsnap $1' exits $rc, want 2"
	[ "$err" = "wsnap: unknown command '$1' (see 'wsnap --help')
wsnap: hint: did you mean 'wsnap $2'?" ] || fail "'wsnap $1': $err"
}
dym umount unmount
dym list ls
dym extract export
dym chekc check
dym mout mount
dym hydrat hydrate
dym unmout unmount
err=$("$WSNAP_BIN" help umount 2>&1 >/dev/null) && fail "help umount accepted"
printf '%s\n' "$err" | grep -qxF "wsnap: hint: did you mean 'wsnap unmount'?" ||
	fail "help umount: $err"
err=$("$WSNAP_BIN" frobnicate 2>&1 >/dev/null) && fail "accepted"
[ "$err" = "wsnap: unknown command 'frobnicate' (see 'wsnap --help')" ] ||
	fail "a far miss suggests: $err"

# Diagnostics (cli.md): the rejection line byte for byte; -v adds one
# 'wsnap: detail:' line, --json a "detail" field; -q and no -v nothing more.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
line="wsnap: unsafe tar member '<tar>': invalid tar stream"
detail() { # FILE WANT-DETAIL
	local err out
	err=$("$WSNAP_BIN" check "$1" 2>&1 >/dev/null) && fail "$1 accepted"
	[ "$err" = "$line" ] || fail "$1 without -v: $err"
	err=$("$WSNAP_BIN" check -q -v "$1" 2>&1 >/dev/null) && fail "$1 accepted"
	[ "$err" = "$line" ] || fail "$1 with -q -v: $err"
	err=$("$WSNAP_BIN" check -v "$1" 2>&1 >/dev/null) && fail "$1 accepted"
	[ "$err" = "$line"$'\n'"wsnap: detail: $2" ] || fail "$1 with -v: $err"
	out=$("$WSNAP_BIN" check --json "$1" 2>/dev/null) && fail "$1 accepted"
	printf '%s\n' "$out" | grep -qF "\"reason\":\"invalid tar stream\",\"detail\":\"$2\"}" ||
		fail "$1 --json: $out"
}
: >"$tmp/empty.tar"
detail "$tmp/empty.tar" "not an archive: empty file"
printf 'PK\003\004\024\000\000\000' >"$tmp/a.zip"
detail "$tmp/a.zip" "not an archive: zip file"
printf 'hello\nworld\n' >"$tmp/text.tar"
detail "$tmp/text.tar" "not an archive: plain text"
printf '\037\235\220hello' >"$tmp/a.tar.Z"
detail "$tmp/a.tar.Z" "unsupported compression: compress (.Z)"
printf 'hello\n' | gzip -c >"$tmp/text.tar.gz"
detail "$tmp/text.tar.gz" \
	"gzip-compressed data that is not a tar archive (plain text)"
mkdir "$tmp/d"
printf 'data' >"$tmp/d/f"
tar -C "$tmp" --format=ustar -cf "$tmp/good.tar" d/f
head -c 700 "$tmp/good.tar" >"$tmp/cut.tar"
detail "$tmp/cut.tar" \
	"truncated tar stream at byte 700: the data of member 'd/f' ends at byte 1024"

# libcurl and libgit2 are loaded when first used (core/base/dynlib.h): a
# command on a local archive maps neither (with them, some forty libraries)
ldd "$WSNAP_BIN" | grep -E 'libcurl|libgit2' && fail "wsnap links libcurl or libgit2"
libs=$(LD_DEBUG=libs "$WSNAP_BIN" check "$tmp/good.tar" 2>&1 >/dev/null)
printf '%s\n' "$libs" | grep -qE 'calling init: .*libarchive' ||
	fail "LD_DEBUG=libs shows no library loading: $libs"
printf '%s\n' "$libs" | grep -E 'libcurl|libgit2' &&
	fail "check of a local archive loaded libcurl or libgit2"
echo "e2e_cli: ok"
