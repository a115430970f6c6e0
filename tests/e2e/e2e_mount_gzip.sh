#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: gzip archives are read in place from the seek points of the
# validation pass (cli.md "Compressed archives"). A mount of a .tar.gz
# (one member, and many members like bgzip or concatenated files) spills
# nothing: the daemon holds no file under $TMPDIR (not even an unlinked
# one) and $TMPDIR stays empty; every byte reads as in the plain archive, also from
# many threads at random offsets; a remount from the index cache decodes
# nothing up front (the daemon has read a small part of the archive when
# it is ready); standard input is still spilled. (An archive rewritten
# in place under a mount reads EIO: e2e_mount_faults.sh, 3b.)
. "$(dirname "$0")/../lib/mount_lib.sh"

python3 "$helper" make "$work"
# a member of several spans (12 MiB, four seek points), next to the rich
# snapshot's members
python3 - "$work" <<'EOF'
import random, sys, tarfile
w = sys.argv[1]
r = random.Random(13)
big = b"".join(b"line %d value %d\n" % (i, r.randrange(100000))
               for i in range(700000))[: 12 << 20]
with open(w + "/big.bin", "wb") as f:
    f.write(big)
with tarfile.open(w + "/snap.tar") as src, \
        tarfile.open(w + "/seek.tar", "w", format=tarfile.PAX_FORMAT) as out:
    for m in src.getmembers():
        out.addfile(m, src.extractfile(m) if m.isfile() else None)
    out.add(w + "/big.bin", "seek/big.bin")
EOF
gzip -6 -c "$work/seek.tar" >"$work/seek.tar.gz"
# many members: 1 MiB pieces compressed one by one
mkdir "$work/pieces"
split -b 1048576 "$work/seek.tar" "$work/pieces/p."
for p in "$work"/pieces/p.*; do gzip -c "$p"; done >"$work/multi.tar.gz"
cmp <(gzip -dc "$work/multi.tar.gz") "$work/seek.tar" || fail "multi.tar.gz"

private_tmpdir

# random reads: 8 threads, 300 reads each of up to 300 KiB of seek/big.bin
random_reads() {
	python3 - "$work/big.bin" "$1/seek/big.bin" <<'EOF'
import os, random, sys, threading
want = open(sys.argv[1], "rb").read()
bad = []
def run(seed):
    r = random.Random(seed)
    fd = os.open(sys.argv[2], os.O_RDONLY)
    for _ in range(300):
        off = r.randrange(len(want))
        n = r.randrange(1, 300 << 10)
        if os.pread(fd, n, off) != want[off:off + n]:
            bad.append((off, n))
    os.close(fd)
ts = [threading.Thread(target=run, args=(s,)) for s in range(8)]
for t in ts: t.start()
for t in ts: t.join()
if bad:
    sys.exit("random reads differ at %r" % bad[:3])
EOF
}

# bytes the process has read (read(2)/pread(2); the cache entry is mapped)
rchar() { awk '$1 == "rchar:" { print $2 }' "/proc/$1/io"; }

size=$(stat -c %s "$work/seek.tar.gz")

# 1. first mount: validated (the whole archive read once), no spill
newmnt mnt-first
mount_fg "$work/seek.tar.gz"
first=$(rchar "$fg")
[ "$first" -ge "$size" ] || fail "first mount read $first of $size bytes"
no_spill "$fg" "first mount"
python3 "$helper" read-all "$work/seek.tar" "$mnt" >/dev/null ||
	fail "first mount: bytes differ"
random_reads "$mnt" || fail "first mount: random reads"
no_spill "$fg" "first mount, after reading everything"
umount_fg

# 2. remount from the cache: nothing decoded up front
newmnt mnt-again
mount_fg "$work/seek.tar.gz"
again=$(rchar "$fg")
[ "$again" -lt $((size / 8)) ] ||
	fail "remount from the cache read $again of $size bytes before serving"
python3 "$helper" read-all "$work/seek.tar" "$mnt" >/dev/null ||
	fail "remount: bytes differ"
random_reads "$mnt" || fail "remount: random reads"
no_spill "$fg" "remount"
umount_fg

# 3. many members, with and without the cache; ls and export agree
for opt in --no-cache ""; do
	newmnt "mnt-multi$opt"
	# shellcheck disable=SC2086
	expect_rc 0 "$WSNAP_BIN" mount $opt "$work/multi.tar.gz" "$mnt"
	python3 "$helper" read-all "$work/seek.tar" "$mnt" >/dev/null ||
		fail "multi-member$opt: bytes differ"
	random_reads "$mnt" || fail "multi-member$opt: random reads"
	tmpdir_empty "multi-member$opt"
	expect_rc 0 "$WSNAP_BIN" unmount "$mnt"
done
mkdir "$work/out"
expect_rc 0 "$WSNAP_BIN" export "$work/multi.tar.gz" "$work/out" seek
cmp "$work/out/seek/big.bin" "$work/big.bin" || fail "export of multi.tar.gz"
tmpdir_empty "export"

# 4. standard input has no seek points: spilled, and still right
expect_rc 0 "$WSNAP_BIN" check - <"$work/multi.tar.gz"
"$WSNAP_BIN" diff - "$work/seek.tar" <"$work/seek.tar.gz" ||
	fail "diff from standard input"
tmpdir_empty "standard input (the spill file is unlinked)"
echo "e2e_mount_gzip: archive $size bytes; read before serving: $first (first mount), $again (remount from the cache)"
echo "e2e_mount_gzip: ok"
