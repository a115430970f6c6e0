#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the index cache and sidecars (cli.md "Snapshot indexes").
# A cached index answers exactly as a fresh validation; an archive
# rewritten in place with its size and mtime put back is not served from
# the stale entry; a renamed or copied archive keeps working; damaged
# entries are rebuilt, never used; a cache directory with the wrong owner
# or modes is not used; concurrent first uses are safe; standard input and
# --no-cache leave the cache alone; sidecars that lie are refused or read
# as EIO.
. "$(dirname "$0")/../lib/mount_lib.sh"

W=$WSNAP_BIN
export WSNAP_CACHE_DIR=$work/cache
entries() { { find "$WSNAP_CACHE_DIR" -maxdepth 1 -name '*.idx' 2>/dev/null ||
	true; } | wc -l; }
tmpfiles() { find "$WSNAP_CACHE_DIR" -maxdepth 1 -name '.tmp-*' | wc -l; }
# wait_exit PID...: each process gone (a daemon exits once unmounted, after
# it wrote the cache entry of a first mount); bounded, then a failure
wait_exit() {
	local p i
	for p; do
		for i in $(seq 600); do
			kill -0 "$p" 2>/dev/null || continue 2
			sleep 0.1
		done
		fail "process $p still running 60 s after its unmount"
	done
}

python3 - "$work" <<'PY'
import io, os, sys, tarfile
w = sys.argv[1]
def make(path, files, links=(), mode="w"):
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tf:
        d = tarfile.TarInfo("dir"); d.type = tarfile.DIRTYPE
        d.mode = 0o755; d.mtime = 1700000000; tf.addfile(d)
        for name, data in files:
            ti = tarfile.TarInfo(name); ti.size = len(data)
            ti.mtime = 1700000000; ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
        for name, target in links:
            ti = tarfile.TarInfo(name); ti.type = tarfile.SYMTYPE
            ti.linkname = target; ti.mtime = 1700000000; tf.addfile(ti)
big = bytes((i * 7 + i // 4096) % 256 for i in range(3 << 20))
make(w + "/snap.tar", [("dir/a.txt", b"version-1\n"), ("dir/big", big)],
     [("link", "dir/a.txt")])
make(w + "/snap.tar.gz", [("dir/a.txt", b"version-1\n"), ("dir/big", big)],
     [("link", "dir/a.txt")], "w:gz")
make(w + "/other.tar", [("dir/a.txt", b"version-2\n"), ("dir/big", big)],
     [("link", "dir/a.txt")])
make(w + "/ext.tar", [("dir/a.txt", b"version-1\n"), ("dir/big", big)],
     [("link", "/etc/passwd")])
make(w + "/bad.tar", [("../evil", b"x")])
PY

# ---- a cached index answers exactly as a fresh validation ----
for ar in snap.tar snap.tar.gz; do
	n=$(entries)
	expect_rc 0 "$W" check --no-cache -v --json "$work/$ar" >"$work/fresh"
	cp "$work/stderr" "$work/fresh.err" # -v: the summary
	[ "$(entries)" -eq "$n" ] || fail "--no-cache wrote an entry"
	expect_rc 0 "$W" check -v --json "$work/$ar" >"$work/first"
	expect_rc 0 "$W" check -v --json "$work/$ar" >"$work/cached"
	# nothing but the summary: no line of the cache, which worked
	cmp -s "$work/stderr" "$work/fresh.err" ||
		fail "$ar: cached check wrote: $(cat "$work/stderr")"
	cmp -s "$work/fresh" "$work/cached" || fail "$ar: cached check differs"
	cmp -s "$work/fresh" "$work/first" || fail "$ar: first check differs"
	expect_rc 0 "$W" ls --no-cache "$work/$ar" >"$work/ls.fresh"
	expect_rc 0 "$W" ls "$work/$ar" >"$work/ls.cached"
	cmp -s "$work/ls.fresh" "$work/ls.cached" || fail "$ar: cached ls differs"
done
[ "$(entries)" -eq 2 ] || fail "want 2 entries, have $(entries)"
st=$(stat -c %a "$WSNAP_CACHE_DIR")
[ "$st" = 700 ] || fail "cache directory mode $st, want 700"
# a rejected archive: the same answer, nothing cached
expect_rc 3 "$W" check "$work/bad.tar"
cp "$work/stderr" "$work/bad.1"
expect_rc 3 "$W" check "$work/bad.tar"
cmp -s "$work/stderr" "$work/bad.1" || fail "second rejection differs"
[ "$(entries)" -eq 2 ] || fail "a rejected archive was cached"
# standard input is never cached
expect_rc 0 "$W" check - <"$work/other.tar"
[ "$(entries)" -eq 2 ] || fail "standard input was cached"
# the policy is part of the key
expect_rc 0 "$W" ls --skip dir/big "$work/snap.tar" >"$work/ls.skip"
grep -q 'dir/big' "$work/ls.skip" && fail "--skip served from the other entry"
[ "$(entries)" -eq 3 ] || fail "want 3 entries, have $(entries)"

# strip-prefix's validation of its input goes through the cache too
mkdir -p "$work/sp/top/x"
echo hi >"$work/sp/top/x/f"
tar -cf "$work/sp.tar" -C "$work/sp" top
n=$(entries)
expect_rc 0 "$W" strip-prefix --prefix top "$work/sp.tar" "$work/strip1.tar"
[ "$(entries)" -eq $((n + 1)) ] || fail "strip-prefix: no entry"
expect_rc 0 "$W" strip-prefix --prefix top "$work/sp.tar" "$work/strip2.tar"
expect_rc 0 "$W" strip-prefix --no-cache --prefix top "$work/sp.tar" \
	"$work/strip3.tar"
cmp -s "$work/strip1.tar" "$work/strip2.tar" &&
	cmp -s "$work/strip1.tar" "$work/strip3.tar" ||
	fail "strip-prefix from the cache differs"

# ---- mount and export from the cache ----
newmnt m1
expect_rc 0 "$W" mount "$work/snap.tar" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-1 ] || fail "mount from cache: a.txt"
cmp -s "$mnt/dir/big" <(python3 -c 'import sys
sys.stdout.buffer.write(bytes((i * 7 + i // 4096) % 256 for i in range(3 << 20)))') ||
	fail "mount from cache: big differs"
expect_rc 0 "$W" unmount "$mnt"
newmnt m1gz
expect_rc 0 "$W" mount "$work/snap.tar.gz" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-1 ] || fail "gzip mount from cache"
expect_rc 0 "$W" unmount "$mnt"
expect_rc 0 "$W" export "$work/snap.tar.gz" "$work/out-gz"
[ "$(cat "$work/out-gz/dir/a.txt")" = version-1 ] || fail "export from cache"

# ---- a first mount's entry: written by the daemon once the mount answers
# (with -v before the command returns, so that -v can say what happened);
# whole, and the same index as a fresh validation ----
cp "$work/snap.tar" "$work/first.tar"
n=$(entries)
newmnt mf
expect_rc 0 "$W" mount "$work/first.tar" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-1 ] || fail "first mount: a.txt"
d1=$(python3 "$helper" pid "$work/first.tar" "$mnt")
expect_rc 0 "$W" unmount "$mnt"
wait_exit "$d1"
[ "$(entries)" -eq $((n + 1)) ] || fail "first mount: no cache entry"
[ "$(tmpfiles)" -eq 0 ] || fail "first mount: temporary file left"
expect_rc 0 "$W" check --no-cache -v --json "$work/first.tar" >"$work/fresh"
cp "$work/stderr" "$work/fresh.err"
expect_rc 0 "$W" check -v --json "$work/first.tar" >"$work/cached"
cmp -s "$work/stderr" "$work/fresh.err" ||
	fail "the daemon's entry was not used: $(cat "$work/stderr")"
cmp -s "$work/fresh" "$work/cached" || fail "the daemon's entry differs"
cp "$work/snap.tar" "$work/first-v.tar"
n=$(entries)
newmnt mfv
expect_rc 0 "$W" mount -v "$work/first-v.tar" "$mnt"
[ "$(entries)" -eq $((n + 1)) ] ||
	fail "mount -v: no entry when it returned ($(entries), was $n): $(cat "$work/stderr")"
expect_rc 0 "$W" unmount "$mnt"
# a compressed archive's entry (its seek points) is written before too
cp "$work/snap.tar.gz" "$work/first-gz.tar.gz"
n=$(entries)
newmnt mfgz
expect_rc 0 "$W" mount "$work/first-gz.tar.gz" "$mnt"
[ "$(entries)" -eq $((n + 1)) ] || fail "gzip mount: no entry when it returned"
expect_rc 0 "$W" unmount "$mnt"
# --no-cache: no entry, also not later
cp "$work/snap.tar" "$work/first-n.tar"
n=$(entries)
newmnt mfn
expect_rc 0 "$W" mount --no-cache "$work/first-n.tar" "$mnt"
d1=$(python3 "$helper" pid "$work/first-n.tar" "$mnt")
expect_rc 0 "$W" unmount "$mnt"
wait_exit "$d1"
[ "$(entries)" -eq "$n" ] || fail "mount --no-cache wrote an entry"

# ---- rewritten in place, size and mtime put back: not the stale entry ----
python3 - "$work/snap.tar" <<'PY'
import os, sys
p = sys.argv[1]
st = os.stat(p)
with open(p, "r+b") as f:
    data = f.read()
    i = data.index(b"version-1")
    f.seek(i); f.write(b"version-9")
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
newmnt m2
expect_rc 0 "$W" mount "$work/snap.tar" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-9 ] ||
	fail "remount after a rewrite in place: $(cat "$mnt/dir/a.txt")"
expect_rc 0 "$W" unmount "$mnt"
# a renamed archive (same inode, new ctime) and a copy keep working
mv "$work/snap.tar" "$work/renamed.tar"
expect_rc 0 "$W" ls "$work/renamed.tar" >"$work/ls.renamed"
cmp -s "$work/ls.fresh" "$work/ls.renamed" || fail "renamed archive lists differently"
n=$(entries)
cp "$work/renamed.tar" "$work/copy.tar"
expect_rc 0 "$W" check "$work/copy.tar"
[ "$(entries)" -eq $((n + 1)) ] || fail "a copy did not get its own entry"
expect_rc 0 "$W" check "$work/copy.tar"
[ "$(entries)" -eq $((n + 1)) ] || fail "a copy's entry was not reused"

# ---- damaged entries are rebuilt, never used ----
# the entry of copy.tar is the newest one
entry=$(ls -t "$WSNAP_CACHE_DIR"/*.idx | head -1)
size=$(stat -c %s "$entry")
cp "$entry" "$work/good.idx"
expect_rc 0 "$W" check --no-cache -v --json "$work/copy.tar" >"$work/chk.fresh"
damage() { # damage KIND AT
	cp "$work/good.idx" "$entry"
	python3 - "$entry" "$1" "$2" <<'PY'
import sys
p, kind, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(p, "rb").read())
if kind == "cut":
    data = data[:at]
else:
    data[at] ^= 0x10
open(p, "wb").write(bytes(data))
PY
}
for at in 0 8 40 63 64 100 200 $((size / 3)) $((size / 2)) $((size - 9)) \
	$((size - 1)); do
	for kind in cut flip; do
		damage $kind $at
		expect_rc 0 "$W" check -v --json "$work/copy.tar" >"$work/chk"
		cmp -s "$work/chk.fresh" "$work/chk" ||
			fail "$kind at $at: damaged entry was served"
		grep -q 'not used' "$work/stderr" ||
			fail "$kind at $at: no -v line: $(cat "$work/stderr")"
		expect_rc 0 "$W" ls "$work/copy.tar" >"$work/ls.damaged"
		cmp -s "$work/ls.fresh" "$work/ls.damaged" ||
			fail "$kind at $at: rebuilt entry lists differently"
		expect_rc 0 "$W" check -v "$work/copy.tar" >/dev/null
		grep -q 'index cache' "$work/stderr" &&
			fail "$kind at $at: entry not rebuilt: $(cat "$work/stderr")"
	done
done

# ---- a cache directory that is not the user's alone is not used ----
n=$(entries)
for mode in 777 770 702; do
	chmod "$mode" "$WSNAP_CACHE_DIR"
	expect_rc 0 "$W" check -v "$work/other.tar" >/dev/null
	grep -q 'writable by group or others' "$work/stderr" ||
		fail "mode $mode: no -v line: $(cat "$work/stderr")"
	[ "$(entries)" -eq "$n" ] || fail "mode $mode: the cache was written"
	expect_rc 4 "$W" index "$work/other.tar"
done
chmod 750 "$WSNAP_CACHE_DIR" # readable by the group is fine
expect_rc 0 "$W" index "$work/other.tar"
[ "$(entries)" -eq $((n + 1)) ] || fail "mode 750: not used"
chmod 700 "$WSNAP_CACHE_DIR"
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$WSNAP_CACHE_DIR"
	expect_rc 0 "$W" check -v "$work/ext.tar" --allow-external-symlinks \
		>/dev/null
	grep -q 'owned by uid 65534' "$work/stderr" ||
		fail "owned by nobody: no -v line: $(cat "$work/stderr")"
	chown 0:0 "$WSNAP_CACHE_DIR"
fi
ln -s "$WSNAP_CACHE_DIR" "$work/cache-link"
WSNAP_CACHE_DIR=$work/cache-link expect_rc 0 "$W" check -v "$work/other.tar" \
	>/dev/null
grep -q 'not used' "$work/stderr" || fail "a symlinked cache was used"

# ---- two first uses at once ----
python3 - "$work" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1] + "/conc.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    for i in range(3000):
        ti = tarfile.TarInfo("d%d/f%d" % (i % 50, i)); data = b"%d\n" % i
        ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
PY
n=$(entries)
newmnt c1
m1=$mnt
newmnt c2
m2=$mnt
pids=()
"$W" mount "$work/conc.tar" "$m1" 2>"$work/c1.err" & pids+=($!)
"$W" mount "$work/conc.tar" "$m2" 2>"$work/c2.err" & pids+=($!)
for i in 1 2 3 4; do
	"$W" ls "$work/conc.tar" >"$work/conc.$i" 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent first use failed"; done
for i in 2 3 4; do
	cmp -s "$work/conc.1" "$work/conc.$i" || fail "concurrent ls differ"
done
[ "$(cat "$m1/d7/f2057")" = 2057 ] || fail "concurrent mount 1"
[ "$(cat "$m2/d7/f2057")" = 2057 ] || fail "concurrent mount 2"
d1=$(python3 "$helper" pid "$work/conc.tar" "$m1")
d2=$(python3 "$helper" pid "$work/conc.tar" "$m2")
expect_rc 0 "$W" unmount "$m1"
expect_rc 0 "$W" unmount "$m2"
wait_exit "$d1" "$d2"
[ "$(entries)" -eq $((n + 1)) ] || fail "concurrent uses made $(entries) entries"
[ "$(tmpfiles)" -eq 0 ] || fail "temporary files left in the cache"
expect_rc 0 "$W" check -v "$work/conc.tar" >/dev/null
grep -q 'index cache' "$work/stderr" && fail "entry after concurrent writes: $(cat "$work/stderr")"

# ---- the bound: least recently used go first ----
WSNAP_CACHE_MAX=1 expect_rc 0 "$W" index "$work/conc.tar" --skip d1
[ "$(entries)" -eq 1 ] || fail "WSNAP_CACHE_MAX=1 kept $(entries) entries"

# ---- sidecars ----
cp "$work/renamed.tar" "$work/s.tar"
expect_rc 0 "$W" index "$work/s.tar" -o "$work/s.wsnapidx"
n=$(entries)
expect_rc 0 "$W" ls --index "$work/s.wsnapidx" "$work/s.tar" >"$work/ls.side"
[ "$(entries)" -eq "$n" ] || fail "a sidecar's index went into the cache"
expect_rc 0 "$W" ls --no-cache "$work/s.tar" >"$work/ls.plain"
cmp -s "$work/ls.plain" "$work/ls.side" || fail "sidecar lists differently"
newmnt s1
expect_rc 0 "$W" mount --index "$work/s.wsnapidx" "$work/s.tar" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-9 ] || fail "sidecar mount: a.txt"
cmp -s "$mnt/dir/big" "$work/out-gz/dir/big" || fail "sidecar mount: big"
expect_rc 0 "$W" unmount "$mnt"
expect_rc 0 "$W" export --index "$work/s.wsnapidx" "$work/s.tar" "$work/out-s"
cmp -s "$work/out-s/dir/big" "$work/out-gz/dir/big" || fail "sidecar export"

# a compressed archive's sidecar: offsets in its decompressed stream
expect_rc 0 "$W" index "$work/snap.tar.gz" -o "$work/gz.wsnapidx"
newmnt sgz
expect_rc 0 "$W" mount --index "$work/gz.wsnapidx" "$work/snap.tar.gz" "$mnt"
[ "$(cat "$mnt/dir/a.txt")" = version-1 ] || fail "gzip sidecar mount: a.txt"
cmp -s "$mnt/dir/big" "$work/out-gz/dir/big" || fail "gzip sidecar mount: big"
expect_rc 0 "$W" unmount "$mnt"

# a sidecar of another archive of the same size: wrong digests, EIO on read
expect_rc 0 "$W" index "$work/other.tar" -o "$work/other.wsnapidx"
newmnt s2
expect_rc 0 "$W" mount --index "$work/other.wsnapidx" "$work/s.tar" "$mnt"
cat "$mnt/dir/a.txt" >/dev/null 2>&1 && fail "wrong digests: a.txt was served"
cmp -s "$mnt/dir/big" "$work/out-gz/dir/big" ||
	fail "wrong digests: an intact member did not read"
expect_rc 0 "$W" unmount "$mnt"
expect_rc 4 "$W" export --index "$work/other.wsnapidx" "$work/s.tar" "$work/out-x"
grep -q 'does not match its index file' "$work/stderr" ||
	fail "export with wrong digests: $(cat "$work/stderr")"
# a sidecar written under a laxer policy: judged by the caller's
expect_rc 0 "$W" index --allow-external-symlinks "$work/ext.tar" \
	-o "$work/ext.wsnapidx"
newmnt s3
expect_rc 3 "$W" mount --index "$work/ext.wsnapidx" "$work/ext.tar" "$mnt"
grep -q "unsafe tar member 'link'" "$work/stderr" ||
	fail "lax sidecar: $(cat "$work/stderr")"
is_mounted "$mnt" && fail "lax sidecar was mounted"
# a sidecar of an archive of another size, a damaged one, not a sidecar
expect_rc 4 "$W" check --index "$work/s.wsnapidx" "$work/snap.tar.gz"
grep -q 'another archive' "$work/stderr" || fail "size: $(cat "$work/stderr")"
head -c 500 "$work/s.wsnapidx" >"$work/cut.wsnapidx"
expect_rc 4 "$W" check --index "$work/cut.wsnapidx" "$work/s.tar"
grep -q 'invalid index file' "$work/stderr" || fail "cut: $(cat "$work/stderr")"
expect_rc 4 "$W" check --index "$work/s.tar" "$work/s.tar"
expect_rc 2 "$W" check --index "$work/s.wsnapidx" - <"$work/s.tar"
expect_rc 2 "$W" index - <"$work/s.tar"
expect_rc 2 "$W" index -o "$work/x.wsnapidx" - <"$work/s.tar"

# --json: the outcome record (doc/json.md), and -q keeps stderr empty
expect_rc 0 "$W" index --json -q "$work/s.tar" >"$work/j.out"
[ -s "$work/stderr" ] && fail "index -q wrote: $(cat "$work/stderr")"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o == {"ok": True, "archive": sys.argv[2], "stored": "cache"}, o' \
	"$work/j.out" "$work/s.tar" || fail "index --json: $(cat "$work/j.out")"
expect_rc 0 "$W" index --json "$work/s.tar" -o "$work/j.wsnapidx" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o == {"ok": True, "archive": sys.argv[2], "stored": "sidecar", "output": sys.argv[3]}, o' \
	"$work/j.out" "$work/s.tar" "$work/j.wsnapidx" || fail "index -o --json: $(cat "$work/j.out")"
expect_rc 3 "$W" index --json "$work/bad.tar" >"$work/j.out"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["ok"] is False and o["error"] == "rejected", o' \
	"$work/j.out" || fail "index --json rejection: $(cat "$work/j.out")"

echo "e2e_index: ok"
