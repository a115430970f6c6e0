#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap pack' and 'wsnap diff' through the program, and the round
# trips pack -> check -> export -> diff, pack -> mount -> diff.
set -euo pipefail
: "${WSNAP_BIN:?}"
W=$WSNAP_BIN
fail() { echo "FAIL: $*" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-dp.XXXXXX")
MNT=
cleanup() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT" 2>/dev/null; then
		"$W" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -u "$MNT" ||
			umount -l "$MNT" || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# rc CMD...: runs CMD, stores its exit code in $RC, its stdout in $T/out and
# its stderr in $T/err, never failing the script by itself.
rc() { RC=0; "$@" >"$T/out" 2>"$T/err" || RC=$?; }
expect_rc() { # want, what
	[ "$RC" -eq "$1" ] || { cat "$T/err" >&2; fail "$2: exit $RC, want $1"; }
}

# ---- a workspace with one of everything pack stores ----
WS=$T/ws
mkdir -p "$WS/src/lib" "$WS/empty dir" "$WS/docs"
printf 'int main(void) { return 0; }\n' >"$WS/src/main.c"
printf 'int util;\n' >"$WS/src/lib/util.c"
printf '#!/bin/sh\necho hi\n' >"$WS/run.sh"
chmod 755 "$WS/run.sh"
printf 'read only\n' >"$WS/docs/ro.txt"
chmod 444 "$WS/docs/ro.txt"
: >"$WS/empty"
printf 'caf\xc3\xa9\n' >"$WS/docs/caf$(printf '\xc3\xa9').txt"
printf 'space\n' >"$WS/docs/with space.txt"
head -c 300000 /dev/urandom >"$WS/blob.bin"
ln -s src/main.c "$WS/link"
ln -s ../run.sh "$WS/docs/up"
ln "$WS/src/lib/util.c" "$WS/hard.c"
touch -d '2024-01-02 03:04:05.123456789' "$WS/src/main.c"
touch -h -d '2023-05-06 07:08:09.5' "$WS/link"

# ---- pack: each compression, deterministic, strict streams ----
for c in none gzip zstd xz bzip2 lz4; do
	"$W" pack --compress $c "$WS" "$T/a.$c" || fail "pack --compress $c"
	"$W" pack --compress $c "$WS" "$T/b.$c" || fail "pack again $c"
	cmp -s "$T/a.$c" "$T/b.$c" || fail "pack --compress $c not deterministic"
done
gzip -t "$T/a.gzip" || fail "gzip stream"
zstd -q -t "$T/a.zstd" || fail "zstd stream"
xz -t "$T/a.xz" || fail "xz stream"
bzip2 -t "$T/a.bzip2" || fail "bzip2 stream"
lz4 -q -t "$T/a.lz4" || fail "lz4 stream"
# the compressed streams hold the same tar (the plain one is padded to a
# 10240-byte record; a compressed one ends with the compressor)
for c in gzip zstd xz bzip2 lz4; do
	case $c in
	gzip) gzip -dc "$T/a.$c" >"$T/inner" ;;
	zstd) zstd -qdc "$T/a.$c" >"$T/inner" ;;
	xz) xz -dc "$T/a.$c" >"$T/inner" ;;
	bzip2) bzip2 -dc "$T/a.$c" >"$T/inner" ;;
	lz4) lz4 -qdc "$T/a.$c" >"$T/inner" ;;
	esac
	n=$(stat -c %s "$T/inner")
	cmp -s "$T/inner" <(head -c "$n" "$T/a.none") || fail "$c holds the tar"
done
# -v names OUT quoted and escaped like a member name
rc "$W" pack -v "$WS" "$T/v"$'\xe2\x80\xae'"rat.tar"
expect_rc 0 "pack -v"
grep -qF "wsnap: pack: '$T/v\u202erat.tar': 15 members: " "$T/err" ||
	fail "pack -v: $(cat "$T/err")"
# extensions choose the compression; '-' is plain unless asked
for e in tar.gz:gzip tgz:gzip tar.zst:zstd tzst:zstd tar.xz:xz txz:xz \
	tar.bz2:bzip2 tbz2:bzip2 tar.lz4:lz4 TAR.GZ:gzip Tar.Bz2:bzip2; do
	"$W" pack "$WS" "$T/ext.${e%%:*}" &&
		cmp -s "$T/ext.${e%%:*}" "$T/a.${e#*:}" || fail ".${e%%:*} is ${e#*:}"
done
"$W" pack "$WS" "$T/ws.tar" && cmp -s "$T/ws.tar" "$T/a.none" ||
	fail ".tar is plain"
# any other name needs --compress (p.zip was a plain tar)
for n in p.zip p p.tar.gz.part p.tar.Z; do
	rc "$W" pack "$WS" "$T/$n"
	expect_rc 2 "pack into $n"
	grep -qF "cannot tell the compression from '$T/$n'" "$T/err" ||
		fail "pack into $n: $(cat "$T/err")"
	[ ! -e "$T/$n" ] || fail "pack into $n wrote it"
done
"$W" pack --compress bzip2 "$WS" "$T/p.zip" && cmp -s "$T/p.zip" "$T/a.bzip2" ||
	fail "--compress bzip2 into p.zip"
"$W" pack "$WS" - >"$T/stdout.tar" && cmp -s "$T/stdout.tar" "$T/a.none" ||
	fail "'-' is the same plain tar"
"$W" pack --compress zstd "$WS" - >"$T/stdout.zst" &&
	cmp -s "$T/stdout.zst" "$T/a.zstd" || fail "'-' with --compress"
ls -a "$T" | grep '^\.ws\.tar\.' >/dev/null && fail "temporary file left beside OUT"

# members: sorted, '.' first, ownership zeroed, hardlink as a file
tar -tvf "$T/ws.tar" >"$T/list"
head -1 "$T/list" | grep ' 0/0 .* \./$' >/dev/null || fail "root entry first, 0/0"
grep -v ' 0/0 ' "$T/list" && fail "ownership not zeroed"
grep -q '^-.* \./hard\.c$' "$T/list" || fail "hardlink stored as a file"
grep -q '^l.* \./link -> src/main\.c$' "$T/list" || fail "symlink stored"
tar -tf "$T/ws.tar" >"$T/names"
LC_ALL=C sort -c "$T/names" || fail "members not sorted by name"

# ---- round trip 1: pack -> check -> export -> diff DIR EXPORTED ----
for c in none gzip zstd xz bzip2 lz4; do
	rc "$W" check "$T/a.$c"
	expect_rc 0 "check of a packed workspace ($c)"
done
for c in none gzip zstd xz bzip2 lz4; do
	rc "$W" diff "$WS" "$T/a.$c"
	expect_rc 0 "diff DIR ARCHIVE ($c)"
	[ ! -s "$T/out" ] || fail "diff DIR ARCHIVE ($c) printed $(cat "$T/out")"
done
EXP=$T/exported
rc "$W" export "$T/ws.tar" "$EXP"
expect_rc 0 "export of a packed workspace"
rc "$W" diff "$WS" "$EXP"
expect_rc 0 "diff DIR EXPORTED"
[ ! -s "$T/out" ] || fail "diff DIR EXPORTED printed $(cat "$T/out")"
rc "$W" diff "$T/ws.tar" "$EXP"
expect_rc 0 "diff ARCHIVE EXPORTED"
rc "$W" export "$T/a.zstd" "$T/exported-zstd"
expect_rc 0 "export of a packed workspace (zstd)"
rc "$W" diff --mtime "$WS" "$T/exported-zstd"
expect_rc 0 "diff --mtime DIR EXPORTED (mtimes kept to the nanosecond)"

# ---- round trip 2: pack -> mount -> diff DIR MNT ----
mount_ok=1
if [ ! -e /dev/fuse ]; then
	[ "${WSNAP_REQUIRE_FUSE:-0}" = 1 ] && fail "/dev/fuse missing"
	mount_ok=0
	echo "SKIP: mount round trip: /dev/fuse missing"
fi
if [ $mount_ok = 1 ]; then
	MNT=$T/mnt
	mkdir -p "$MNT"
	"$W" mount "$T/a.zstd" "$MNT" || fail "mount"
	rc "$W" diff "$WS" "$MNT"
	expect_rc 0 "diff DIR MNT"
	[ ! -s "$T/out" ] || fail "diff DIR MNT printed $(cat "$T/out")"
	rc "$W" diff "$MNT" "$T/ws.tar"
	expect_rc 0 "diff MNT ARCHIVE"
	rc "$W" diff --mtime "$WS" "$MNT"
	expect_rc 0 "diff --mtime DIR MNT"
	"$W" unmount "$MNT" || fusermount3 -u "$MNT"
	MNT=
fi

# ---- every kind of change, archive-vs-archive and archive-vs-directory ----
NEW=$T/new
cp -a "$WS" "$NEW"
printf 'int main(void) { return 1; }\n' >"$NEW/src/main.c"  # content
chmod 755 "$NEW/docs/with space.txt"                          # mode
ln -sfn run.sh "$NEW/link"                                    # target
rm "$NEW/empty" && mkdir "$NEW/empty" && : >"$NEW/empty/f"    # type
printf 'new\n' >"$NEW/added.txt"                              # added
rm "$NEW/src/lib/util.c"                                      # removed
rm -r "$NEW/empty dir"                                        # removed dir
touch -d '2001-01-01' "$NEW/run.sh"                           # mtime only
# sorted bytewise: 'empty dir' (space, 0x20) before 'empty/f' ('/', 0x2f)
cat >"$T/want" <<'EOF'
A	added.txt
M	docs/with space.txt
T	empty
D	empty dir
A	empty/f
M	link
D	src/lib/util.c
M	src/main.c
EOF
"$W" pack "$NEW" "$T/new.tar.gz" || fail "pack new"
for pair in "$T/ws.tar $T/new.tar.gz" "$T/ws.tar $NEW" "$WS $NEW" \
	"$WS $T/new.tar.gz"; do
	# shellcheck disable=SC2086
	rc "$W" diff $pair
	expect_rc 1 "diff $pair"
	diff -u "$T/want" "$T/out" >&2 || fail "diff $pair output"
done
# B to A inverts A and D
rc "$W" diff "$T/new.tar.gz" "$T/ws.tar"
expect_rc 1 "diff new old"
sed -e 's/^A/X/' -e 's/^D/A/' -e 's/^X/D/' "$T/want" | diff -u - "$T/out" >&2 ||
	fail "reverse diff"
# standard input as one side
rc "$W" diff - "$NEW" <"$T/ws.tar"
expect_rc 1 "diff - DIR"
diff -u "$T/want" "$T/out" >&2 || fail "diff - DIR output"
# --mtime makes the touched file (and changed directories) differ
rc "$W" diff --mtime "$T/ws.tar" "$NEW"
expect_rc 1 "diff --mtime"
grep -qx 'M	run.sh' "$T/out" || fail "--mtime shows run.sh"
# --stat: the summary line
rc "$W" diff --stat "$T/ws.tar" "$NEW"
tail -1 "$T/out" | grep -x '8 changes: 2 added, 2 removed, 3 modified, 1 type changed' >/dev/null ||
	fail "--stat line: $(tail -1 "$T/out")"
# --json: one object per change, old and new attributes
rc "$W" diff --json --stat "$T/ws.tar" "$NEW"
expect_rc 1 "diff --json"
python3 - "$T/out" <<'EOF' || fail "diff --json output"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
end = lines.pop()
assert end == {"ok": True, "records": 8, "added": 2, "removed": 2,
               "modified": 3, "type_changed": 1}, end
assert all("ok" not in l for l in lines), lines
by = {l["path"]: l for l in lines}
assert [l["path"] for l in lines] == sorted(by, key=lambda p: p.encode())
assert by["added.txt"]["change"] == "A" and by["added.txt"]["old"] is None
assert by["added.txt"]["new"] == {"type": "file", "mode": "0644", "size": 4}
assert by["src/lib/util.c"]["new"] is None
assert by["empty"]["change"] == "T"
assert by["empty"]["old"]["type"] == "file"
assert by["empty"]["new"]["type"] == "dir"
assert by["docs/with space.txt"]["old"]["mode"] == "0644"
assert by["docs/with space.txt"]["new"]["mode"] == "0755"
assert by["link"]["old"]["target"] == "src/main.c"
assert by["link"]["new"] == {"type": "symlink", "mode": "0777", "size": 6,
                             "target": "run.sh"}
EOF

# ---- --skip: never in the archive, never in a diff ----
mkdir -p "$NEW/node_modules/pkg"
printf 'x' >"$NEW/node_modules/pkg/index.js"
"$W" pack --skip node_modules --skip /src/main.c "$NEW" "$T/skip.tar" ||
	fail "pack --skip"
tar -tf "$T/skip.tar" | grep -E 'node_modules|main\.c' && fail "skipped path packed"
rc "$W" diff --skip node_modules --skip src/main.c "$T/ws.tar" "$NEW"
grep -E 'node_modules|main\.c' "$T/out" && fail "skipped path in diff"
expect_rc 1 "diff --skip"

# ---- refusals: named, exit 3, nothing written ----
BAD=$T/bad
mkdir -p "$BAD/sub"
printf 'ok\n' >"$BAD/ok"
mkfifo "$BAD/fifo"
rc "$W" pack "$BAD" "$T/bad.tar"
expect_rc 3 "pack with a FIFO"
grep -qx "wsnap: unsafe tar member './fifo': unsupported member type" "$T/err" ||
	fail "FIFO message: $(cat "$T/err")"
[ ! -e "$T/bad.tar" ] || fail "a refused pack wrote OUT"
ls -a "$T" | grep '^\.bad\.tar\.' >/dev/null && fail "a refused pack left a temp file"
# what pack refuses, check refuses in the same words
tar -cf "$T/fifo.tar" -C "$BAD" .
rc "$W" check "$T/fifo.tar"
expect_rc 3 "check of a tar holding a FIFO"
grep -qx "wsnap: unsafe tar member './fifo': unsupported member type" "$T/err" ||
	fail "check's FIFO message: $(cat "$T/err")"
rm "$BAD/fifo"
ln -s ../../etc "$BAD/sub/out"
rc "$W" pack "$BAD" "$T/bad.tar"
expect_rc 3 "pack with an outside symlink"
grep -q "unsafe tar member './sub/out': symlink target escapes archive root: ../../etc" \
	"$T/err" || fail "outside symlink message: $(cat "$T/err")"
[ ! -e "$T/bad.tar" ] || fail "a refused pack wrote OUT"
"$W" pack --allow-external-symlinks "$BAD" "$T/bad.tar" ||
	fail "--allow-external-symlinks"
# the same refusal for a directory side of diff, and for the archive side
rc "$W" diff "$T/bad.tar" "$BAD"
expect_rc 3 "diff with a rejected side"
grep -q "symlink target escapes archive root" "$T/err" || fail "diff message"
rc "$W" diff --json "$T/bad.tar" "$BAD"
expect_rc 3 "diff --json with a rejected side"
python3 - "$T/out" <<'EOF' || fail "diff --json rejection object: $(cat "$T/out")"
import json, sys
o = json.loads(open(sys.argv[1]).read())
assert o["ok"] is False and o["error"] == "rejected", o
assert o["member"] == "./sub/out", o
assert o["reason"] == "symlink target escapes archive root: ../../etc", o
EOF
rc "$W" diff --allow-external-symlinks "$T/bad.tar" "$BAD"
expect_rc 0 "diff --allow-external-symlinks"
if [ "$(id -u)" = 0 ]; then
	mknod "$BAD/null" c 1 3
	rc "$W" pack --allow-external-symlinks "$BAD" "$T/dev.tar"
	expect_rc 3 "pack with a device"
	grep -q "'./null': unsupported member type" "$T/err" || fail "device message"
	rm "$BAD/null"
fi

# ---- I/O errors and usage ----
rc "$W" diff "$T/no-such.tar" "$WS"
expect_rc 4 "diff of a missing archive"
rc "$W" pack "$T/no-such-dir" "$T/x.tar"
expect_rc 4 "pack of a missing directory"
rc "$W" pack "$WS" "$T/no-such-dir/x.tar"
expect_rc 4 "pack into a missing directory"
rc "$W" diff "$WS"
expect_rc 2 "diff with one side"
rc "$W" pack --compress lzop "$WS" "$T/x.tar"
expect_rc 2 "pack --compress lzop"

# ---- --json, -q, --progress of pack (doc/json.md) ----
rc "$W" pack --json --progress "$WS" "$T/j.tar.gz"
expect_rc 0 "pack --json"
python3 - "$T/out" "$T/j.tar.gz" <<'EOF' || fail "pack --json: $(cat "$T/out")"
import json, os, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o == {"ok": True, "output": sys.argv[2], "members": 15,
             "directories": 4, "files": 9, "symlinks": 2,
             "bytes": o["bytes"], "compression": "gzip",
             "archive_bytes": os.path.getsize(sys.argv[2])}, o
EOF
# the forced progress line off a terminal: plain lines, the last one final
tail -1 "$T/err" | grep -qx 'wsnap: pack: 15/15 members, 0/0 MiB' ||
	fail "pack --progress: $(cat "$T/err")"
rc "$W" pack -q -v --progress "$WS" "$T/q.tar"
expect_rc 0 "pack -q"
[ -s "$T/err" ] && fail "pack -q wrote to stderr: $(cat "$T/err")"
rc "$W" pack --json "$WS" -
expect_rc 2 "pack --json to standard output"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "usage", o' \
	"$T/out" || fail "pack --json OUT '-': $(cat "$T/out")"
mkfifo "$WS/fifo"
rc "$W" pack --json "$WS" "$T/fifo.tar"
expect_rc 3 "pack --json of a FIFO"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o == {"ok": False, "error": "rejected", "member": "./fifo", "reason": "unsupported member type"}, o' \
	"$T/out" || fail "pack --json rejection: $(cat "$T/out")"
rm "$WS/fifo"
rc "$W" pack --json "$T/no-such-dir" "$T/x.tar"
expect_rc 4 "pack --json of a missing directory"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "io" and o["errno"] == "ENOENT", o' \
	"$T/out" || fail "pack --json I/O error: $(cat "$T/out")"

echo "e2e_diff_pack: ok"
