#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap check' and 'wsnap ls' against archives made by GNU tar
# and Python's tarfile: exit codes, exact error lines and hints, --json
# outputs, the ls listing against an independent Python oracle, escaping of
# hostile names, standard input, usage errors.
set -uo pipefail
: "${WSNAP_BIN:?}"
export TZ=UTC LC_ALL=C.UTF-8
W=$WSNAP_BIN
T=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-check-ls.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T"

fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
die() { echo "FAIL: $*" >&2; exit 1; }
# script NAME: stores a Python script (stdin) as NAME.py, to run on a file
script() { cat >"$T/$1.py"; }

# run EXPECTED_RC CMD...: runs CMD with stdout in $T/out, stderr in $T/err
run() {
	local want=$1 rc=0
	shift
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "'$*' exits $rc, want $want; stderr: $(head -c 500 "$T/err")"
		return 1
	fi
	return 0
}

# expect_err TEXT: stderr is exactly TEXT (lines)
expect_err() {
	if [ "$(cat "$T/err")" != "$1" ]; then
		fail "stderr is '$(cat "$T/err")', want '$1'"
	fi
}

expect_empty() {
	[ -s "$T/out" ] && fail "stdout not empty: $(head -c 300 "$T/out")"
	[ -s "$T/err" ] && fail "stderr not empty: $(head -c 300 "$T/err")"
	return 0
}

# ---------------------------------------------------------------- archives
mkdir -p ws/src/sub ws/empty
printf 'int main(void) { return 0; }\n' >ws/src/main.c
printf 'hello\n' >ws/README
printf '#!/bin/sh\n' >ws/src/run.sh
chmod 0755 ws/src/run.sh
chmod 0600 ws/README
ln -s ../README ws/src/readme-link
ln -s sub ws/src/sublink
touch -d '2026-11-29 10:00:00' ws/src/main.c ws/README ws/src/run.sh \
	ws/src ws/src/sub ws/empty ws
tar -C ws -cf gnu.tar --format=gnu . || die "GNU tar"
tar -C ws -czf gnu.tar.gz --format=pax . || die "GNU tar -z"

# Python-made archives: hostile names, exact pax mtimes, implicit
# directories; each written to the file named first.
python3 - <<'EOF'
import io, tarfile

def mk(path, members, fmt=tarfile.PAX_FORMAT):
    with tarfile.open(path, "w", format=fmt, encoding="utf-8",
                      errors="surrogateescape") as t:
        for m in members:
            name, kind = m[0], m[1]
            ti = tarfile.TarInfo(name)
            ti.mtime = 1795946400
            ti.mode = 0o644
            data = b""
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
            elif kind == "sym":
                ti.type = tarfile.SYMTYPE
                ti.linkname = m[2]
            elif kind == "hard":
                ti.type = tarfile.LNKTYPE
                ti.linkname = m[2]
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            else:
                data = m[2] if len(m) > 2 else b"x"
                if len(m) > 3:
                    ti.mode = m[3]
            if len(m) > 4:
                ti.pax_headers = {"mtime": m[4]}
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data else None)

def fs(b):  # bytes name -> str as tarfile wants it
    return b.decode("utf-8", "surrogateescape")

mk("names.tar", [
    ("./", "dir"),
    ("a b", "file", b"12345"),
    ("a-", "file"),
    ("a.b", "file"),
    ("a/b", "file", b"ab", 0o777),
    ("B", "file", b"", 0o444),
    ("caf\u00e9", "file", b"x", 0o655),
    ("it's", "file"),
    ("say \"hi\"", "file"),
    ("both ' and \"", "file"),
    ("new\nline", "file"),
    ("tab\tname", "file"),
    ("esc\x1b[31mred", "file"),
    (fs(b"bad\xff\xfeutf8"), "file"),
    (fs(b"c1\xc2\x85x"), "file"),
    # Names that print like others or reorder the line
    ("config", "file"),
    ("config\u200b", "file"),
    ("config\u00a0", "file"),
    ("rtl\u202etxt.exe", "file"),
    ("line\u2028sep", "file"),
    ("pua\ue000", "file"),
    ("deep/x/y/file", "file", b"0123456789", 0o4755),
    ("frac", "file", b"f", 0o600, "1700000000.123456789"),
    ("half", "file", b"h", 0o600, "1700000000.5"),
    ("links/to-file", "sym", "../a b"),
    ("links/weird", "sym", fs(b"x\ny\\z\xff")),
    ("links/up", "sym", "../deep/x"),
])
mk("abs.tar", [("ok", "file"), ("/etc/passwd", "file")])
mk("abs-nl.tar", [("/a\nb", "file")])
mk("backslash.tar", [("a\\b", "file")])
mk("dotdot.tar", [("a", "dir"), ("a/../b", "file")])
mk("escape.tar", [("d", "dir"), ("d/link", "sym", "../../etc")])
mk("venv.tar", [("venv/bin/python3", "sym", "/usr/bin/python3")])
mk("hard.tar", [("f", "file"), ("h", "hard", "f")])
mk("fifo.tar", [("p", "fifo")])
mk("badname.tar", [(fs(b"/bad\xff"), "file")])
mk("rtl.tar", [("/\u202eevil", "file")])
mk("zwsp.tar", [("l", "sym", "/\u200bx")])
mk("three.tar", [("a", "file"), ("b", "file"), ("c", "file")])
mk("big.tar", [("big", "file", b"y" * 3000)])
EOF
[ -s big.tar ] || die "making archives with tarfile"

# a truncated .tar.gz: the gzip stream ends in the middle
head -c $(($(stat -c %s gnu.tar.gz) / 2)) gnu.tar.gz >trunc.tar.gz

# --------------------------------------------------------------- check ok
for a in gnu.tar gnu.tar.gz names.tar; do
	run 0 "$W" check "$a" && expect_empty
done
run 0 "$W" check - <gnu.tar.gz && expect_empty
run 0 "$W" check --allow-external-symlinks venv.tar && expect_empty

run 0 "$W" check -v gnu.tar
# ws: ., src, src/sub, empty, README, src/main.c, src/run.sh, 2 symlinks;
# -v goes to stderr, one line, counts in the singular where they are 1
want_bytes=$(($(stat -c %s ws/src/main.c) + $(stat -c %s ws/README) + \
	$(stat -c %s ws/src/run.sh)))
expect_err "wsnap: check: 'gnu.tar': 8 members: 3 files ($want_bytes bytes), 3 directories, 2 symlinks; 0 implicit directories; none"
[ -s out ] && fail "check -v wrote to stdout"
tar -cf one.tar -C ws ./README ./src/readme-link
run 0 "$W" check -v one.tar &&
	expect_err "wsnap: check: 'one.tar': 2 members: 1 file (6 bytes), 0 directories, 1 symlink; 1 implicit directory; none"
# -q: nothing but errors, whatever -v and --progress say
run 0 "$W" check -q -v --progress gnu.tar.gz && expect_empty
run 0 "$W" check -v -q gnu.tar && expect_empty
run 3 "$W" check -q -v abs.tar &&
	expect_err "wsnap: unsafe tar member '/etc/passwd': absolute path"
# --progress forces the progress line off a terminal (one line per update,
# no terminal codes); --no-progress and -q keep it away. (--no-cache: the
# check above left an index cache entry, and a check through it reads
# nothing long.)
run 0 "$W" check --no-cache --progress gnu.tar.gz
grep -qx "wsnap: reading 'gnu.tar.gz': [0-9.]* MiB of [0-9.]* MiB (100%)" err ||
	fail "check --progress: $(cat err)"
grep -q $'\e\|\r' err && fail "terminal codes off a terminal: $(cat -A err)"
run 0 "$W" check --progress --no-progress gnu.tar.gz && expect_empty

run 0 "$W" check --json gnu.tar.gz
script summary <<'EOF'
import json, sys
lines = sys.stdin.read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["ok"] is True, o
assert (o["members"], o["directories"], o["files"], o["symlinks"]) == \
    (8, 3, 3, 2), o
assert o["bytes"] == int(sys.argv[1]), o
assert o["implicit_directories"] == 0, o
assert o["compression"] == "gzip", o
assert set(o) == {"ok", "members", "directories", "implicit_directories",
                  "files", "symlinks", "bytes", "compression"}, o
EOF
python3 summary.py "$want_bytes" <out || fail "check --json: $(cat out)"

# -------------------------------------------------------- check rejected
run 3 "$W" check abs.tar &&
	expect_err "wsnap: unsafe tar member '/etc/passwd': absolute path"
[ -s out ] && fail "rejection wrote to stdout"
run 3 "$W" check abs-nl.tar &&
	expect_err "wsnap: unsafe tar member '/a\\nb': absolute path"
run 3 "$W" check backslash.tar &&
	expect_err "wsnap: unsafe tar member 'a\\\\b': windows path separator"
run 3 "$W" check dotdot.tar &&
	expect_err "wsnap: unsafe tar member 'a/../b': parent traversal"
run 3 "$W" check escape.tar && expect_err \
"wsnap: unsafe tar member 'd/link': symlink target escapes archive root: ../../etc
wsnap: hint: --allow-external-symlinks accepts symlinks whose targets leave the snapshot"
run 3 "$W" check venv.tar && expect_err \
"wsnap: unsafe tar member 'venv/bin/python3': absolute symlink target not allowed: /usr/bin/python3
wsnap: hint: --allow-external-symlinks accepts symlinks whose targets leave the snapshot"
run 3 "$W" check hard.tar &&
	expect_err "wsnap: unsafe tar member 'h': hardlink member not allowed"
run 3 "$W" check fifo.tar &&
	expect_err "wsnap: unsafe tar member 'p': unsupported member type"
run 3 "$W" check trunc.tar.gz &&
	expect_err "wsnap: unsafe tar member '<tar>': invalid tar stream"
run 3 "$W" check - <trunc.tar.gz &&
	expect_err "wsnap: unsafe tar member '<tar>': invalid tar stream"
run 3 "$W" check - </dev/null &&
	expect_err "wsnap: unsafe tar member '<tar>': invalid tar stream"
run 3 "$W" check --no-symlinks gnu.tar
grep -q "': symlink member not allowed$" err || fail "--no-symlinks: $(cat err)"
run 3 "$W" check --max-members 2 three.tar && expect_err \
"wsnap: unsafe tar member 'c': archive member count exceeds limit
wsnap: hint: --max-members N raises the limit on the number of members (default 2000000)"
run 0 "$W" check --max-members 3 three.tar
run 3 "$W" check --max-file-size 2999 big.tar
head -1 err | grep -qx "wsnap: unsafe tar member 'big': file size exceeds limit" ||
	fail "max-file-size: $(cat err)"
sed -n 2p err | grep -q '^wsnap: hint: --max-file-size ' ||
	fail "max-file-size hint: $(cat err)"
run 0 "$W" check --max-file-size 3000 big.tar
run 3 "$W" check --max-total-size 2K big.tar
run 0 "$W" check --max-total-size 3K big.tar
run 3 "$W" check --max-path-length 3 names.tar
grep -q '^wsnap: hint: --max-path-length ' err || fail "path hint: $(cat err)"
run 3 "$W" check --max-depth 3 names.tar
grep -q '^wsnap: hint: --max-depth ' err || fail "depth hint: $(cat err)"
run 0 "$W" check --skip deep --max-depth 2 names.tar

# --json rejections: exact member bytes through os.fsencode
run 3 "$W" check --json badname.tar
script badname <<'EOF'
import json, os, sys
o = json.loads(sys.stdin.read())
assert o == {"ok": False, "error": "rejected",
             "member": os.fsdecode(b"/bad\xff"), "reason": "absolute path"}, o
assert os.fsencode(o["member"]) == b"/bad\xff"
EOF
python3 badname.py <out || fail "rejection --json: $(cat out)"
grep -qx "wsnap: unsafe tar member '/bad\\\\xff': absolute path" err ||
	fail "badname stderr: $(cat err)"
run 3 "$W" check rtl.tar &&
	expect_err "wsnap: unsafe tar member '/\\u202eevil': absolute path"
run 3 "$W" check zwsp.tar && expect_err \
"wsnap: unsafe tar member 'l': absolute symlink target not allowed: /\\u200bx
wsnap: hint: --allow-external-symlinks accepts symlinks whose targets leave the snapshot"
run 3 "$W" check --json rtl.tar
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["member"] == "/\u202eevil", o' <out ||
	fail "rtl --json keeps the name exact: $(cat out)"
run 3 "$W" check --json escape.tar
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["reason"] == "symlink target escapes archive root: ../../etc", o' <out ||
	fail "escape --json: $(cat out)"

# ------------------------------------------------------------- I/O errors
run 4 "$W" check nope.tar &&
	expect_err "wsnap: cannot open 'nope.tar': No such file or directory"
run 4 "$W" check --json nope.tar
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o == {"ok": False, "error": "io", "message": "cannot open '"'"'nope.tar'"'"': No such file or directory", "file": "nope.tar", "errno": "ENOENT"}, o' <out ||
	fail "io --json: $(cat out)"
run 4 "$W" ls ws
grep -q "^wsnap: .*'ws': Is a directory$" err || fail "directory: $(cat err)"

if [ -w /dev/full ]; then
	rc=0
	"$W" ls names.tar >/dev/full 2>err || rc=$?
	[ "$rc" -eq 4 ] || fail "ls >/dev/full exits $rc, want 4"
	grep -qx "wsnap: cannot write 'standard output': No space left on device" err ||
		fail "ls >/dev/full: $(cat err)"
fi

# ----------------------------------------------------------------- usage
run 2 "$W" && grep -q '^usage: wsnap' err || fail "bare wsnap usage"
run 2 "$W" check
grep -q "^wsnap: check: missing ARCHIVE" err || fail "missing: $(cat err)"
[ "$(wc -l <err)" -eq 1 ] || fail "usage error is not one line: $(cat err)"
run 2 "$W" check a b
run 2 "$W" check --bogus gnu.tar &&
	expect_err "wsnap: check: option '--bogus' is not known (see 'wsnap check --help')"
run 2 "$W" ls -x gnu.tar &&
	expect_err "wsnap: ls: option '-x' is not known (see 'wsnap ls --help')"
run 2 "$W" check gnu.tar --skip &&
	expect_err "wsnap: check: option '--skip' needs an argument (see 'wsnap check --help')"
run 2 "$W" ls --json=1 gnu.tar
run 2 "$W" check --bogus gnu.tar --json
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o == {"ok": False, "error": "usage", "message": "option '"'"'--bogus'"'"' is not known"}, o' <out ||
	fail "usage --json: $(cat out)"
for bad in abc -1 +1 ' 1' 1x 0x10 '' 18446744073709551616 4294967295 1K; do
	run 2 "$W" check --max-members "$bad" gnu.tar ||
		fail "--max-members '$bad' accepted"
	grep -q "^wsnap: check: invalid --max-members" err ||
		fail "--max-members '$bad': $(cat err)"
done
for bad in 1Q 16E 17179869184G -5 1.5G; do
	run 2 "$W" check --max-total-size "$bad" gnu.tar ||
		fail "--max-total-size '$bad' accepted"
done
run 0 "$W" check --max-members 4294967294 --max-total-size 64GiB \
	--max-file-size unlimited --max-path-length 4096 --max-depth 0777 gnu.tar
run 2 "$W" check --root-name a/b gnu.tar
run 0 "$W" check --help
grep -q '^usage: wsnap check' out || fail "check --help"
grep -q -- '--allow-external-symlinks' out || fail "check --help: policy"
grep -q '^exit status' out || fail "check --help: exit status"
[ "$(wc -l <out)" -le 40 ] || fail "check --help is longer than a screen"
run 0 "$W" help ls
grep -q '^usage: wsnap ls' out || fail "help ls"
grep -qi 'local time' out || fail "ls --help names the time zone"
[ "$(wc -l <out)" -le 40 ] || fail "ls --help is longer than a screen"

# -------------------------------------------------------------------- ls
# An independent oracle: the listing of a tarfile-read archive, built from
# policy.md (rel paths, implicit directories, sanitized modes, escaping).
cat >oracle.py <<'EOF'
import json, os, sys, tarfile, time

def rel(name):
    return "/".join(c for c in name.split("/") if c not in ("", "."))

def bare(s):
    # Python's repr of each character, without the quotes (a character
    # alone is never quote-escaped); an invalid byte as \xHH
    out = []
    for c in s:
        o = ord(c)
        if 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)

def filemode(m):
    m &= 0o755
    if not m & 0o100:
        m &= ~0o111
    return m | 0o600

def modestr(kind, m):
    s = "".join(ch if m & (0o400 >> i) else "-"
                for i, ch in enumerate("rwxrwxrwx"))
    return {"dir": "d", "file": "-", "symlink": "l"}[kind] + s

nodes = {}
with tarfile.open(sys.argv[1], encoding="utf-8",
                  errors="surrogateescape") as t:
    for ti in t:
        p = rel(ti.name)
        if not p:
            continue
        mt = ti.pax_headers.get("mtime")
        if ti.isdir():
            nodes[p] = ("dir", 0o755, 4096, ti.mtime, mt, None)
        elif ti.issym():
            nodes[p] = ("symlink", 0o777, len(os.fsencode(ti.linkname)),
                        ti.mtime, mt, ti.linkname)
        else:
            nodes[p] = ("file", filemode(ti.mode), ti.size, ti.mtime, mt,
                        None)
for p in list(nodes):
    parts = p.split("/")
    for i in range(1, len(parts)):
        nodes.setdefault("/".join(parts[:i]),
                         ("dir", 0o755, 4096, 0, None, None))
order = sorted(nodes, key=os.fsencode)
if sys.argv[2] == "text":
    width = max(len(str(n[2])) for n in nodes.values())
    for p in order:
        kind, mode, size, mtime, _, target = nodes[p]
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(int(mtime)))
        line = "%s %*d %s %s" % (modestr(kind, mode), width, size, when,
                                 bare(p))
        if target is not None:
            line += " -> " + bare(target)
        print(line)
else:
    for p in order:
        kind, mode, size, mtime, mt, target = nodes[p]
        o = {"path": p, "type": kind, "mode": "%04o" % mode, "size": size,
             "mtime": mt if mt and "." in mt else str(int(mtime))}
        if target is not None:
            o["target"] = target
        print(json.dumps(o, sort_keys=True))
EOF

for a in gnu.tar gnu.tar.gz names.tar; do
	run 0 "$W" ls "$a" || continue
	[ -s err ] && fail "ls $a wrote to stderr: $(cat err)"
	python3 oracle.py "$a" text >want.txt
	cmp -s out want.txt ||
		fail "ls $a differs from the oracle: $(diff out want.txt | head -20)"
done
run 0 "$W" ls - <names.tar && python3 oracle.py names.tar text >want.txt &&
	{ cmp -s out want.txt || fail "ls - differs"; }
run 0 "$W" ls - <gnu.tar.gz && python3 oracle.py gnu.tar.gz text >want.txt &&
	{ cmp -s out want.txt || fail "ls - of a .tar.gz differs"; }

# spot checks that do not depend on the oracle
run 0 "$W" ls names.tar
grep -qF -- ' new\nline' out || fail "newline not escaped: $(cat out)"
grep -qF -- ' bad\xff\xfeutf8' out || fail "invalid UTF-8 not escaped"
grep -qF -- ' esc\x1b[31mred' out || fail "ESC not escaped"
grep -qF -- ' c1\x85x' out || fail "C1 not escaped"
grep -qF -- " both ' and \"" out || fail "quotes altered in ls"
grep -qF -- ' tab\tname' out || fail "tab not escaped"
grep -qx -- '.* config' out || fail "config: $(grep config out)"
for n in 'config\u200b' 'config\xa0' 'rtl\u202etxt.exe' 'line\u2028sep' \
	'pua\ue000'; do
	grep -qF -- " $n" out ||
		fail "not escaped as $n: $(grep -F "${n%%\\*}" out)"
done
grep -qF -- 'links/weird -> x\ny\\z\xff' out ||
	fail "target not escaped: $(grep weird out)"
grep -Eq '^drwxr-xr-x +4096 1970-01-01 00:00 deep/x$' out ||
	fail "implicit directory: $(grep deep out)"
grep -Eq '^-rwxr-xr-x +10 2026-11-29 10:00 deep/x/y/file$' out ||
	fail "setuid file mode not sanitized: $(grep file out)"
grep -q '^-rw-r--r-- .* B$' out || fail "0444 not presented as 0644"
grep -Eq '^lrwxrwxrwx +6 2026-11-29 10:00 links/to-file -> \.\./a b$' out ||
	fail "symlink line: $(grep to-file out)"
if tr -d '\n' <out | LC_ALL=C grep -q $'[\x01-\x1f\x7f]'; then
	fail "ls output has raw control bytes"
fi
[ "$(wc -l <out)" -eq 31 ] || fail "ls names.tar: $(wc -l <out) lines, want 31"
# (escaping changes the order of escaped names, 'config\u200b' before
# 'config\xa0': their order is the oracle's to check)
script sorted <<'EOF'
import sys
paths = [l.split(None, 4)[4].split(" -> ")[0].encode()
         for l in sys.stdin.read().split("\n") if l and "\\" not in l]
assert paths == sorted(paths), paths
EOF
python3 sorted.py <out || fail "ls not sorted bytewise"

# ls --json against the oracle, exact names and exact mtimes
script cmpjson <<'EOF'
import decimal, json, sys
got = [json.loads(l, parse_float=decimal.Decimal)
       for l in open(sys.argv[1], encoding="utf-8", errors="surrogatepass")]
# the listing ends in its outcome record, which counts the records
end = got.pop()
assert end["ok"] is True and end["records"] == len(got), end
want = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8",
                                     errors="surrogateescape")]
assert len(got) == len(want), (len(got), len(want))
for g, w in zip(got, want):
    w["mtime"] = decimal.Decimal(w["mtime"])
    assert set(g) == set(w), (g, w)
    for k in w:
        assert g[k] == w[k], (k, g, w)
    if w["type"] != "symlink":
        assert "target" not in g
EOF
for a in gnu.tar names.tar; do
	run 0 "$W" ls --json "$a" || continue
	python3 oracle.py "$a" json >want.json
	python3 cmpjson.py out want.json || fail "ls --json $a differs"
done
run 0 "$W" ls --json names.tar
grep -qF '"path":"frac","type":"file","mode":"0600","size":1,"mtime":1700000000.123456789}' out ||
	fail "exact nanoseconds: $(grep frac out)"
grep -qF '"path":"half","type":"file","mode":"0600","size":1,"mtime":1700000000.5}' out ||
	fail "half second: $(grep half out)"
grep -qF '"path":"a b","type":"file","mode":"0644","size":5,"mtime":1795946400}' out ||
	fail "whole seconds: $(grep '"a b"' out)"
script jsonnames <<'EOF'
import json, os, sys
# split on newlines only: JSON keeps U+2028 raw, splitlines() breaks on it
objs = [json.loads(l) for l in sys.stdin.read().split("\n") if l]
assert objs.pop()["ok"] is True
names = {os.fsencode(o["path"]) for o in objs}
for n in (b"bad\xff\xfeutf8", b"new\nline", b"c1\xc2\x85x",
          "caf\u00e9".encode(), b"esc\x1b[31mred", b"tab\tname",
          "config\u200b".encode(), "config\u00a0".encode(),
          "rtl\u202etxt.exe".encode(), "line\u2028sep".encode()):
    assert n in names, n
weird = [o for o in objs if o["path"] == "links/weird"][0]
assert os.fsencode(weird["target"]) == b"x\ny\\z\xff", weird
EOF
python3 jsonnames.py <out || fail "ls --json names: $(head -c 600 out)"

# PATHs: those paths and what is below them, in the listing's order; the
# whole archive validated; a PATH that names nothing (also one through a
# symlink, never resolved) is exit 2; '..' is a usage error
run 0 "$W" ls gnu.tar README ./src/sub/ src/sublink
[ "$(awk '{ print $5 }' out | tr '\n' ' ')" = "README src/sub src/sublink " ] ||
	fail "ls PATHs: $(cat out)"
run 0 "$W" ls gnu.tar src
[ "$(awk '{ print $5 }' out | tr '\n' ' ')" = "src src/main.c src/readme-link src/run.sh src/sub src/sublink " ] ||
	fail "ls PATH a directory: $(cat out)"
run 0 "$W" ls --json gnu.tar /src/sub src/main.c
script lspaths <<'EOF'
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines()]
end = lines.pop()
assert [o["path"] for o in lines] == ["src/main.c", "src/sub"], lines
assert end["ok"] is True and end["records"] == 2 and end["members"] == 8, end
EOF
python3 lspaths.py <out || fail "ls --json PATHs: $(cat out)"
for path in nope src/sublink/x src/main.c/x sr; do
	run 2 "$W" ls gnu.tar "$path" &&
		expect_err "wsnap: no such path in the archive: '$path'"
	[ -s out ] && fail "ls of a missing PATH listed: $(cat out)"
done
run 2 "$W" ls --json gnu.tar $'bad\x1b'
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o == {"ok": False, "error": "usage", "message": "no such path in the archive: '"'"'bad\x1b'"'"'", "member": "bad\x1b"}, o' <out ||
	fail "ls --json missing PATH: $(cat out)"
run 2 "$W" ls gnu.tar src/../README &&
	expect_err "wsnap: ls: PATH 'src/../README' has a '..' component (see 'wsnap ls --help')"
run 3 "$W" ls abs.tar etc/passwd
run 0 "$W" ls - src/sub <gnu.tar.gz
[ "$(awk '{ print $5 }' out)" = src/sub ] || fail "ls - PATH: $(cat out)"

# an archive of only the root (and only zero blocks) lists nothing
tar -cf root.tar -C ws/empty . && run 0 "$W" ls root.tar && expect_empty
head -c 10240 /dev/zero >zeros.tar && run 0 "$W" ls zeros.tar && expect_empty

# a rejected archive lists nothing
run 3 "$W" ls escape.tar
[ -s out ] && fail "ls of a rejected archive printed: $(cat out)"
run 3 "$W" ls --json abs.tar
python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["error"]=="rejected"' <out ||
	fail "ls --json rejection: $(cat out)"

# ------------------------------------------------ ls of 100,000 members
python3 - <<'EOF' || die "making many.tar"
import tarfile, io
with tarfile.open("many.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(100000):
        ti = tarfile.TarInfo("d%02d/f%06d" % (i % 50, (i * 7919) % 100000))
        ti.mtime = 1795946400 + i
        t.addfile(ti)
EOF
start=$(date +%s%N)
run 0 "$W" ls many.tar
ms=$((($(date +%s%N) - start) / 1000000))
[ "$(wc -l <out)" -eq 100050 ] || fail "ls many.tar: $(wc -l <out) lines"
awk '{print $5}' out | LC_ALL=C sort -c || fail "ls many.tar not sorted"
echo "ls of 100,000 members: ${ms} ms"
[ "$ms" -lt 20000 ] || fail "ls of 100,000 members took ${ms} ms"

if [ "$fails" -ne 0 ]; then
	echo "e2e_check_ls: $fails failure(s)" >&2
	exit 1
fi
echo "e2e_check_ls: ok"
