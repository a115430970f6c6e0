#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap export' (policy.md section 7, cli.md export): inputs
# (file, stdin, compressed), output (--json, -v), PATH operands, exit
# codes, destination state rejections, modes under umasks, a full disk
# (tmpfs), --strip-prefix, and a concurrent attacker process swapping a
# directory for a symlink.
set -euo pipefail
: "${WSNAP_BIN:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-export-XXXXXX")
mnt="$work/mnt"
attacker=
cleanup() {
	[ -n "$attacker" ] && kill "$attacker" 2>/dev/null && wait "$attacker" 2>/dev/null
	mountpoint -q "$mnt" 2>/dev/null && umount -l "$mnt"
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# mk_tar OUT SPEC...: SPEC is f:NAME:MODE:CONTENT, d:NAME:MODE, l:NAME:TARGET
mk_tar() {
	python3 - "$@" <<'EOF'
import io, sys, tarfile
out = sys.argv[1]
mode = "w:gz" if out.endswith(".gz") else "w"
with tarfile.open(out, mode, format=tarfile.PAX_FORMAT) as t:
    for spec in sys.argv[2:]:
        kind, rest = spec.split(":", 1)
        if kind == "f":
            name, m, content = rest.split(":", 2)
            data = content.encode()
            i = tarfile.TarInfo(name); i.size = len(data); i.mode = int(m, 8)
            i.mtime = 1700000000
            t.addfile(i, io.BytesIO(data))
        elif kind == "d":
            name, m = rest.split(":", 1)
            i = tarfile.TarInfo(name); i.type = tarfile.DIRTYPE; i.mode = int(m, 8)
            i.mtime = 1600000000
            t.addfile(i)
        elif kind == "l":
            name, target = rest.split(":", 1)
            i = tarfile.TarInfo(name); i.type = tarfile.SYMTYPE; i.linkname = target
            t.addfile(i)
EOF
}
mode_of() { stat -c %a "$1"; }
mkdir outside && echo victim >outside/victim
outside_untouched() {
	[ "$(ls -A outside)" = victim ] || fail "$1: something was created outside: $(ls -A outside)"
	[ "$(cat outside/victim)" = victim ] || fail "$1: outside/victim changed"
}

# --- a plain export, from a file ---
mk_tar snap.tar d:src:0700 f:src/main.c:0644:code f:bin/start:0755:run \
	f:README.md:0644:readme l:latest:src/main.c
"$WSNAP_BIN" export snap.tar out1
[ "$(cat out1/src/main.c)" = code ] || fail "content"
[ "$(mode_of out1/bin/start)" = 755 ] || fail "bin/start mode $(mode_of out1/bin/start)"
[ "$(mode_of out1/README.md)" = 644 ] || fail "README.md mode"
[ "$(mode_of out1/src)" = 755 ] || fail "directory mode"
[ "$(readlink out1/latest)" = src/main.c ] || fail "symlink target"
[ "$(stat -c %Y out1/src/main.c)" = 1700000000 ] || fail "file mtime"
[ "$(stat -c %Y out1/src)" = 1600000000 ] || fail "directory mtime"
[ -z "$(ls -A . | grep wsnap)" ] || fail "temporary left: $(ls -A)"

# --- -v and --json ---
"$WSNAP_BIN" export -v snap.tar out2 >v.out 2>v.err
grep -q "^wsnap: export: 5 members to 'out2' (new): 3 files (13 bytes), " v.err ||
	fail "-v: $(cat v.err)"
[ -s v.out ] && fail "-v wrote to stdout: $(cat v.out)"
"$WSNAP_BIN" export --json snap.tar out2 >j.out
python3 - j.out <<'EOF' || fail "--json: $(cat j.out)"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ok"] is True and j["created"] is False, j
assert j["members"] == 5 and j["files"] == 3 and j["symlinks"] == 1, j
assert j["bytes"] == len("code") + len("run") + len("readme"), j
assert j["replaced"] == 4 and j["directories_kept"] == 1, j
assert j["directories"] == 0 and j["compression"] == "none", j
EOF

# --- PATH operands: only those paths and what is below them ---
mk_tar part.tar d:src:0700 f:src/main.c:0644:code f:src/lib/util.c:0644:util \
	f:src-old/x:0644:old f:bin/start:0755:run l:latest:src
tree() { (cd "$1" && find . -mindepth 1 | sort | tr '\n' ' '); }
"$WSNAP_BIN" export part.tar p1 src/lib/util.c
[ "$(tree p1)" = "./src ./src/lib ./src/lib/util.c " ] || fail "PATH a file: $(tree p1)"
[ "$(cat p1/src/lib/util.c)" = util ] || fail "PATH a file: content"
# its parents are made like implicit directories: 0755, the default mtime
[ "$(stat -c '%a %Y' p1/src p1/src/lib)" = "755 0
755 0" ] || fail "PATH parents: $(stat -c '%n %a %Y' p1/src p1/src/lib)"
"$WSNAP_BIN" export part.tar p2 ./src/ bin/start src/main.c
[ "$(tree p2)" = "./bin ./bin/start ./src ./src/lib ./src/lib/util.c ./src/main.c " ] ||
	fail "PATH a directory: $(tree p2)"
[ "$(stat -c %Y p2/src)" = 1600000000 ] || fail "a selected directory keeps its mtime"
# a symlink PATH is the symlink itself, never its target; a PATH through
# a symlink names nothing (exit 2, like tar's 'Not found in archive')
"$WSNAP_BIN" export part.tar p3 latest
[ "$(tree p3)" = "./latest " ] && [ "$(readlink p3/latest)" = src ] ||
	fail "PATH a symlink: $(tree p3)"
for path in latest/main.c nope src/main.c/x src-; do
	rc=0; "$WSNAP_BIN" export part.tar p4 src "$path" 2>err || rc=$?
	[ $rc -eq 2 ] || fail "PATH '$path': exit $rc, want 2"
	[ "$(cat err)" = "wsnap: no such path in the archive: '$path'" ] ||
		fail "PATH '$path': $(cat err)"
	[ ! -e p4 ] || fail "PATH '$path': DEST made"
done
rc=0; "$WSNAP_BIN" export --json part.tar p4 $'n\xffpe' >j.out 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "--json missing PATH: exit $rc"
python3 - j.out <<'EOF' || fail "--json missing PATH: $(cat j.out)"
import json, os, sys
o = json.load(open(sys.argv[1]))
assert o["ok"] is False and o["error"] == "usage", o
assert os.fsencode(o["member"]) == b"n\xffpe", o
assert o["message"] == "no such path in the archive: 'n\udcffpe'", o
EOF
# '..' is a usage error before anything is read
for path in .. ../x src/../bin; do
	rc=0; "$WSNAP_BIN" export part.tar p5 "$path" 2>err || rc=$?
	[ $rc -eq 2 ] && grep -qxF "wsnap: export: PATH '$path' has a '..' component (see 'wsnap export --help')" err ||
		fail "PATH '$path': exit $rc: $(cat err)"
done
# the whole archive is validated, whatever the PATHs
mk_tar part-evil.tar f:ok:0644:x f:../escape:0644:x
rc=0; "$WSNAP_BIN" export part-evil.tar p6 ok 2>err || rc=$?
[ $rc -eq 3 ] && [ ! -e p6 ] || fail "PATH of a rejected archive: exit $rc"
# standard input, compressed; --json counts what was written
gzip -c part.tar >part.tar.gz
"$WSNAP_BIN" export --json - p7 /src/lib <part.tar.gz >j.out
[ "$(tree p7)" = "./src ./src/lib ./src/lib/util.c " ] || fail "PATH from stdin: $(tree p7)"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert (o["members"], o["files"], o["directories"], o["compression"]) == (1, 1, 2, "gzip"), o' \
	j.out || fail "--json with PATHs: $(cat j.out)"

# --- standard input, compressed, compressed standard input ---
"$WSNAP_BIN" export - out3 <snap.tar
[ "$(cat out3/bin/start)" = run ] || fail "stdin export"
gzip -c snap.tar >snap.tar.gz
"$WSNAP_BIN" export snap.tar.gz out4
[ "$(cat out4/README.md)" = readme ] || fail "gzip export"
zstd -q -c snap.tar | "$WSNAP_BIN" export - out5
[ "$(cat out5/README.md)" = readme ] || fail "zstd stdin export"

# --- a compressed file is read twice, never copied; a pipe is spilled ---
TMPDIR=/nonexistent-wsnap-tmp "$WSNAP_BIN" export snap.tar.gz out4b ||
	fail "exporting a compressed file needed a temporary file"
[ "$(cat out4b/README.md)" = readme ] || fail "gzip file export (no spill)"
rc=0; gzip -c snap.tar | TMPDIR=/nonexistent-wsnap-tmp "$WSNAP_BIN" export - out4c 2>/dev/null || rc=$?
[ $rc -eq 4 ] && [ ! -e out4c ] || fail "a pipe was exported without its spill file ($rc)"

# --- a rejected archive: exit 3, nothing created ---
python3 - <<'EOF'
import io, tarfile
with tarfile.open("evil.tar", "w") as t:
    for name in ("ok", "../escape"):
        i = tarfile.TarInfo(name); i.size = 1
        t.addfile(i, io.BytesIO(b"x"))
EOF
rc=0; "$WSNAP_BIN" export evil.tar out6 2>err || rc=$?
[ $rc -eq 3 ] || fail "rejected archive exit $rc"
grep -q "^wsnap: unsafe tar member '../escape': parent traversal$" err || fail "message: $(cat err)"
[ ! -e out6 ] || fail "rejected archive created the destination"
rc=0; "$WSNAP_BIN" export --json evil.tar out6 >j.out 2>/dev/null || rc=$?
[ $rc -eq 3 ] && grep -q '"error":"rejected"' j.out || fail "--json rejection: $(cat j.out)"

# --- destination state: symlink among the parents, outside and inside ---
mk_tar link.tar f:link/hello.txt:0644:hello
mkdir dest7 && ln -s "$work/outside" dest7/link
rc=0; "$WSNAP_BIN" export link.tar dest7 2>err || rc=$?
[ $rc -eq 3 ] || fail "parent symlink exit $rc"
grep -q "^wsnap: unsafe tar member 'link/hello.txt': symlink in parent path$" err || fail "message: $(cat err)"
outside_untouched "parent symlink outside"
mkdir dest8 dest8/real && ln -s real dest8/link
rc=0; "$WSNAP_BIN" export link.tar dest8 2>err || rc=$?
[ $rc -eq 3 ] && [ ! -e dest8/real/hello.txt ] || fail "parent symlink inside: $rc"
# ...and a directory member replaces the planted symlink first
mk_tar linkdir.tar d:link:0755 f:link/hello.txt:0644:hello
"$WSNAP_BIN" export linkdir.tar dest7
[ -d dest7/link ] && [ ! -L dest7/link ] && [ "$(cat dest7/link/hello.txt)" = hello ] || fail "dir replaces symlink"
outside_untouched "dir member replacing a symlink"

# --- destination state: a directory where a file is wanted ---
mk_tar file.tar f:x:0644:x
mkdir -p dest9/x
rc=0; "$WSNAP_BIN" export file.tar dest9 2>err || rc=$?
[ $rc -eq 3 ] || fail "dir exists exit $rc"
grep -q "^wsnap: unsafe tar member 'x': destination directory already exists: x$" err || fail "message: $(cat err)"

# --- modes under umasks ---
specs=()
for m in 0755 0644 0600 0700 0444 0000 0777 0655 4755 2755 1755; do specs+=("f:m$m:$m:data"); done
mk_tar modes.tar "${specs[@]}" f:bin/start:0755:run f:README.md:0644:readme
for mask in 022 077 000; do
	rm -rf outm
	(umask $mask && "$WSNAP_BIN" export modes.tar outm)
	for pair in 0755:755 0644:644 0600:600 0700:700 0444:644 0000:600 0777:755 0655:644 4755:755 2755:755 1755:755; do
		m=${pair%%:*} want=${pair#*:}
		[ "$(mode_of outm/m$m)" = "$want" ] || fail "umask $mask: mode $m gave $(mode_of outm/m$m), want $want"
	done
	[ -x outm/bin/start ] || fail "umask $mask: bin/start not executable"
	[ "$(mode_of outm/README.md)" = 644 ] || fail "umask $mask: README.md mode"
	[ "$(mode_of outm/bin)" = 755 ] && [ "$(mode_of outm)" = 755 ] || fail "umask $mask: directory modes"
done

# --- a full disk: exit 4, path and errno text; fresh DEST not left ---
if [ "$(id -u)" -eq 0 ]; then
	mkdir "$mnt"
	mount -t tmpfs -o size=512k wsnap-e2e "$mnt" || fail "cannot mount a tmpfs as root"
	head -c 2000000 /dev/zero | tr '\0' x >big
	python3 - <<'EOF'
import io, tarfile
with tarfile.open("big.tar", "w") as t:
    i = tarfile.TarInfo("small"); i.size = 5
    t.addfile(i, io.BytesIO(b"small"))
    i = tarfile.TarInfo("bin/big"); i.size = 2000000; i.mode = 0o755
    t.addfile(i, open("big", "rb"))
EOF
	rc=0; "$WSNAP_BIN" export big.tar "$mnt/fresh" 2>err || rc=$?
	[ $rc -eq 4 ] || fail "full disk exit $rc"
	grep -q "^wsnap: cannot write '$mnt/fresh/bin/big': No space left on device$" err || fail "message: $(cat err)"
	[ -z "$(ls -A "$mnt")" ] || fail "fresh destination left behind: $(ls -A "$mnt")"
	mkdir "$mnt/merge"
	rc=0; "$WSNAP_BIN" export big.tar "$mnt/merge" 2>/dev/null || rc=$?
	[ $rc -eq 4 ] || fail "full disk (merge) exit $rc"
	[ "$(mode_of "$mnt/merge/bin/big")" = 600 ] || fail "partial file mode $(mode_of "$mnt/merge/bin/big")"
	[ ! -x "$mnt/merge/bin/big" ] || fail "partial file executable"
	umount "$mnt"
else
	echo "e2e_export: not root, full-disk case skipped"
fi

# --- --strip-prefix ---
mk_tar ws.tar d:workspace:0755 d:workspace/pkg:0755 f:workspace/pkg/main.py:0644:main
"$WSNAP_BIN" export --strip-prefix workspace ws.tar out10
[ "$(cat out10/pkg/main.py)" = main ] || fail "--strip-prefix"
[ ! -e out10/workspace ] || fail "--strip-prefix kept the prefix"
mk_tar ws2.tar f:workspace/a:0644:a f:other/b:0644:b
rc=0; "$WSNAP_BIN" export --strip-prefix workspace ws2.tar out11 2>err || rc=$?
[ $rc -eq 3 ] && [ ! -e out11 ] || fail "--strip-prefix outside: $rc"
grep -q "member does not start with prefix: workspace" err || fail "message: $(cat err)"

# --- usage ---
rc=0; "$WSNAP_BIN" export snap.tar 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "missing DEST exit $rc"
rc=0; "$WSNAP_BIN" export --strip-prefix ./ snap.tar out12 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "empty prefix exit $rc"
rc=0; "$WSNAP_BIN" export no-such.tar out12 2>/dev/null || rc=$?
[ $rc -eq 4 ] || fail "missing archive exit $rc"
"$WSNAP_BIN" export --help | grep '^usage: wsnap export' >/dev/null || fail "--help"

# --- a concurrent attacker process (RACE_SECONDS, default 3 s) ---
python3 - <<'EOF'
import io, tarfile
with tarfile.open("many.tar", "w") as t:
    for d in range(6):
        i = tarfile.TarInfo(f"sub/d{d}"); i.type = tarfile.DIRTYPE; i.mode = 0o755
        t.addfile(i)
        for f in range(400):
            i = tarfile.TarInfo(f"sub/d{d}/f{f}"); i.size = 3
            t.addfile(i, io.BytesIO(b"abc"))
EOF
mkdir race
"$WSNAP_BIN" export many.tar race
(
	set +e
	cd race
	n=0 i=0
	while :; do
		for t in sub sub/d2 sub/d4; do
			# a fresh name each time: a directory the exporter is
			# still writing into cannot be removed, and a leftover
			# '.away' would block every later swap (CI failure of
			# 2026-11-30 once export wrote on two threads)
			i=$((i + 1))
			mv -T "$t" ".away.$i" 2>/dev/null || continue
			ln -s "$work/outside" "$t" 2>/dev/null && n=$((n + 1))
			[ -L "$t" ] && rm -f "$t"
			mv -T ".away.$i" "$t" 2>/dev/null ||
				rm -rf ".away.$i" 2>/dev/null
			# renamed into place: a reader never sees it empty
			echo $n >"$work/swaps.new" &&
				mv -f "$work/swaps.new" "$work/swaps"
		done
	done
) &
attacker=$!
swaps_now() { # the attacker's count so far (0 before its first swap)
	local s
	s=$(cat "$work/swaps" 2>/dev/null)
	echo "${s:-0}"
}
# Race for RACE_SECONDS, and longer (up to 60 s) until the attacker has
# swapped at least 20 times: on a loaded machine it may barely be scheduled
# at first, and a race with no swaps proves nothing (the CI flake of
# 2026-11-29: "no symlink swap happened").
end=$((SECONDS + ${RACE_SECONDS:-3}))
limit=$((SECONDS + 60))
runs=0 ok=0
while [ $SECONDS -lt $end ] ||
	{ [ "$(swaps_now)" -lt 20 ] &&
		[ $SECONDS -lt $limit ]; }; do
	rc=0; "$WSNAP_BIN" export many.tar race 2>/dev/null || rc=$?
	runs=$((runs + 1)); [ $rc -eq 0 ] && ok=$((ok + 1))
	[ $rc -eq 0 ] || [ $rc -eq 3 ] || [ $rc -eq 4 ] || fail "race: exit $rc"
done
kill "$attacker" 2>/dev/null || fail "race: the attacker died early"
wait "$attacker" 2>/dev/null || true
attacker=
outside_untouched "concurrent attacker"
swaps=$(swaps_now)
[ "$swaps" -gt 0 ] || fail "race: no symlink swap happened"
echo "e2e_export: race: $runs exports ($ok ok), >= $swaps symlink swaps in ${RACE_SECONDS:-3} s"
echo "e2e_export: ok"
