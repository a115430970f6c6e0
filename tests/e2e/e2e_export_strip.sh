#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: 'wsnap strip-prefix' (policy.md section 8, cli.md): names,
# rejection outside the prefix, the long pax name, atomic OUT, OUT '-',
# standard and compressed input, re-validation with the policy.
set -euo pipefail
: "${WSNAP_BIN:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-e2e-strip-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

long=$(printf 'n%.0s' $(seq 124))
python3 - "$long" <<'EOF'
import io, sys, tarfile
long = sys.argv[1]
def add(t, name, kind="f", data=b"", target="", mode=0o644):
    i = tarfile.TarInfo(name)
    i.mtime = 1700000000
    i.uid, i.gid, i.uname, i.gname = 1000, 1000, "dev", "dev"
    if kind == "d":
        i.type = tarfile.DIRTYPE; i.mode = 0o755
    elif kind == "l":
        i.type = tarfile.SYMTYPE; i.linkname = target
    else:
        i.size = len(data); i.mode = mode
    t.addfile(i, io.BytesIO(data) if kind == "f" else None)
with tarfile.open("ws.tar", "w", format=tarfile.PAX_FORMAT) as t:
    add(t, "workspace", "d")
    add(t, "workspace/pkg", "d")
    add(t, "workspace/pkg/main.py", data=b"print()\n", mode=0o755)
    add(t, "workspace/" + long, data=b"long")
    add(t, "workspace/link", "l", target="pkg/main.py")
with tarfile.open("mixed.tar", "w") as t:
    add(t, "workspace/a", data=b"a")
    add(t, "elsewhere/b", data=b"b")
EOF
[ ${#long} -eq 124 ] || fail "setup"

# --- names: workspace/... becomes ., pkg, pkg/main.py ---
"$WSNAP_BIN" strip-prefix --prefix workspace ws.tar out.tar
tar -tf out.tar >names
printf './\npkg/\npkg/main.py\n%s\nlink\n' "$long" | diff - names || fail "names"
tar -tvf out.tar | grep '^-rwxr-xr-x dev/dev .* pkg/main.py$' >/dev/null || fail "attributes: $(tar -tvf out.tar)"
[ "$(tar -xOf out.tar pkg/main.py)" = "print()" ] || fail "data"
# the 134-character pax path was rewritten, the old name is gone
python3 - out.tar "$long" <<'EOF' || fail "pax path"
import sys
data = open(sys.argv[1], "rb").read()
assert b"workspace" not in data, "stale name in output"
assert (b" path=" + sys.argv[2].encode() + b"\n") in data, "no new pax path"
EOF
"$WSNAP_BIN" check out.tar || fail "output does not pass check"
# an ordinary new file's mode (0666 less the umask), not mkstemp's 0600
[ "$(stat -c %a out.tar)" = "$(printf '%o' $((0666 & ~$(umask))))" ] || fail "OUT mode $(stat -c %a out.tar)"

# --- outside the prefix: exit 3, OUT untouched, no temporary left ---
echo previous >keep.tar
rc=0; "$WSNAP_BIN" strip-prefix --prefix workspace mixed.tar keep.tar 2>err || rc=$?
[ $rc -eq 3 ] || fail "outside prefix exit $rc"
grep -q "^wsnap: unsafe tar member 'elsewhere/b': member does not start with prefix: workspace$" err || fail "message: $(cat err)"
[ "$(cat keep.tar)" = previous ] || fail "OUT replaced on failure"
[ -z "$(ls -A | grep wsnap)" ] || fail "temporary left: $(ls -A)"

# --- OUT '-', standard input, compressed standard input ---
"$WSNAP_BIN" strip-prefix --prefix workspace - - <ws.tar >stdout.tar
cmp -s out.tar stdout.tar || fail "'-' output differs from a named OUT"
gzip -c ws.tar | "$WSNAP_BIN" strip-prefix --prefix workspace - gz.tar
cmp -s out.tar gz.tar || fail "gzip input output differs"
# a compressed file is read again, not copied to a temporary file
gzip -c ws.tar >ws.tar.gz
TMPDIR=/nonexistent-wsnap-tmp "$WSNAP_BIN" strip-prefix --prefix workspace ws.tar.gz gzf.tar
cmp -s out.tar gzf.tar || fail "gzip file output differs"
rc=0; "$WSNAP_BIN" strip-prefix --prefix workspace mixed.tar - >bad.out 2>/dev/null || rc=$?
[ $rc -eq 3 ] && [ ! -s bad.out ] || fail "'-' wrote a rejected archive ($rc)"

# --- the result is validated with the policy ---
rc=0; "$WSNAP_BIN" strip-prefix --no-symlinks --prefix workspace ws.tar nosym.tar 2>err || rc=$?
[ $rc -eq 3 ] && [ ! -e nosym.tar ] || fail "--no-symlinks on the result: $rc"
grep -q "^wsnap: unsafe tar member 'link': symlink member not allowed$" err || fail "message: $(cat err)"

# --- non-ASCII pax names (a Python workspace snapshot): strip-prefix
# failed with 'invalid tar stream' on every one of them ---
python3 - <<'EOF'
import io, tarfile
names = ["café.txt", "日本語/ファイル.txt", "жж/αβγ", "عربي עברית", "हिंदी",
         "emoji😀", "bad\udcff\udcfe.txt", "é" * 120 + "/" + "é" * 120]
with tarfile.open("intl.tar", "w", format=tarfile.PAX_FORMAT,
                  encoding="utf-8", errors="surrogateescape") as t:
    for n in names:
        i = tarfile.TarInfo("workspace/" + n)
        data = n.encode("utf-8", "surrogateescape")
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
with open("intl.want", "w", encoding="utf-8", errors="surrogateescape") as f:
    for n in sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape")):
        f.write(n + "\n")
EOF
gzip -k intl.tar
for in in intl.tar intl.tar.gz; do
	"$WSNAP_BIN" strip-prefix --prefix workspace "$in" intl.out ||
		fail "strip-prefix of non-ASCII pax names from $in"
	python3 - intl.out intl.want <<'EOF' || fail "names from $in"
import sys, tarfile
with tarfile.open(sys.argv[1], encoding="utf-8", errors="surrogateescape") as t:
    got = sorted((m.name for m in t if m.isfile()),
                 key=lambda n: n.encode("utf-8", "surrogateescape"))
with open(sys.argv[2], encoding="utf-8", errors="surrogateescape") as f:
    want = f.read().splitlines()
assert got == want, (got, want)
EOF
	"$WSNAP_BIN" check intl.out || fail "check of the result from $in"
done
"$WSNAP_BIN" strip-prefix --prefix workspace - - <intl.tar.gz >intl.pipe ||
	fail "strip-prefix of non-ASCII pax names from a pipe"
cmp -s intl.pipe intl.out || fail "pipe and file results differ"

# --- usage ---
rc=0; "$WSNAP_BIN" strip-prefix ws.tar x.tar 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "missing --prefix exit $rc"
rc=0; "$WSNAP_BIN" strip-prefix --prefix / ws.tar x.tar 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "empty prefix exit $rc"
rc=0; "$WSNAP_BIN" strip-prefix --prefix workspace ws.tar 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "missing OUT exit $rc"
"$WSNAP_BIN" strip-prefix --help | grep '^usage: wsnap strip-prefix' >/dev/null || fail "--help"

# --- --json (doc/json.md): the outcome record, errors; not with OUT '-' ---
"$WSNAP_BIN" strip-prefix --json --prefix workspace ws.tar j.tar >j.out
python3 - j.out <<'EOF' || fail "--json: $(cat j.out)"
import json, os, sys
o = json.load(open(sys.argv[1]))
assert o == {"ok": True, "output": "j.tar", "members": 5,
             "compression": "none",
             "archive_bytes": os.path.getsize("j.tar")}, o
EOF
rc=0; "$WSNAP_BIN" strip-prefix --json --prefix workspace mixed.tar j2.tar >j.out 2>/dev/null || rc=$?
[ $rc -eq 3 ] || fail "--json rejection exit $rc"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "rejected" and o["member"] == "elsewhere/b", o' \
	j.out || fail "--json rejection: $(cat j.out)"
rc=0; "$WSNAP_BIN" strip-prefix --json --prefix workspace ws.tar - >j.out 2>/dev/null || rc=$?
[ $rc -eq 2 ] && python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["error"] == "usage", o' j.out ||
	fail "--json with OUT '-': $rc $(cat j.out)"
echo "e2e_export_strip: ok"
