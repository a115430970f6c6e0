#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: xz and zstd read in place (cli.md "Compressed archives").
# A tree packed by `wsnap pack` as .tar.zst (frames of 4 MiB and the
# seekable format's seek table) and .tar.xz (blocks of 4 MiB) is read by
# zstd, xz, GNU tar and bsdtar, and mounts with nothing spilled: the
# daemon holds no file under $TMPDIR (not even an unlinked one, which `ls`
# would not show) and $TMPDIR stays empty, while every byte of the mount
# equals the tree's, also from many threads at random offsets, from a
# remount out of the index cache and through an --index sidecar
# (the .tar.zst's written by pack --index, the same file index -o writes). A
# single-frame zstd and a single-block xz stream
# keep the spill, and read right from it.
. "$(dirname "$0")/../lib/mount_lib.sh"

tree=$work/tree
mkdir -p "$tree/src/sub" "$tree/empty"
python3 - "$tree" <<'EOF'
import random, sys
t = sys.argv[1]
r = random.Random(7)
# 20 MiB that compress, and differ everywhere (a wrong offset shows)
big = b"".join(b"row %08d %d\n" % (i, r.randrange(1 << 30))
               for i in range(1200000))[: 20 << 20]
open(t + "/big.bin", "wb").write(big)
for i in range(200):
    open("%s/src/f%03d.txt" % (t, i), "wb").write(b"file %d\n" % i * (i + 1))
open(t + "/src/sub/noise", "wb").write(bytes(r.randrange(256)
                                             for _ in range(300000)))
EOF
ln -s ../big.bin "$tree/src/link"

private_tmpdir

# same_as_tree WHAT: the mount holds the tree, byte for byte
same_as_tree() {
	diff -r --no-dereference "$tree" "$mnt" >"$work/diff" 2>&1 ||
		fail "$1: the mount differs from the tree: $(head -5 "$work/diff")"
}

# random_reads WHAT: 8 threads, 200 reads each of up to 300 KiB of big.bin
random_reads() {
	python3 - "$tree/big.bin" "$mnt/big.bin" <<'EOF' || fail "$1: random reads"
import os, random, sys, threading
want = open(sys.argv[1], "rb").read()
bad = []
def run(seed):
    r = random.Random(seed)
    fd = os.open(sys.argv[2], os.O_RDONLY)
    for _ in range(200):
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

# 1. pack writes seekable streams that the usual tools read; pack --index
# writes the sidecar that index -o writes
expect_rc 0 "$WSNAP_BIN" pack --index "$tree" "$work/p.tar.zst"
expect_rc 0 "$WSNAP_BIN" pack "$tree" "$work/p.tar.xz"
[ ! -e "$work/p.tar.xz.wsnapidx" ] || fail "pack without --index wrote a sidecar"
expect_rc 0 "$WSNAP_BIN" index "$work/p.tar.zst" -o "$work/again.wsnapidx"
cmp -s "$work/p.tar.zst.wsnapidx" "$work/again.wsnapidx" ||
	fail "pack --index: the sidecar differs from index -o's"
expect_rc 0 "$WSNAP_BIN" index "$work/p.tar.xz" -o "$work/p.tar.xz.wsnapidx"
for c in zst xz; do
	expect_rc 0 "$WSNAP_BIN" check "$work/p.tar.$c"
done
# --index with OUT '-': a usage error, one line, nothing on stdout
expect_rc 2 "$WSNAP_BIN" pack --index --compress zstd "$tree" - \
	>"$work/dash.out"
[ "$(cat "$work/stderr")" = "wsnap: pack: --index needs an OUT other than '-' (the sidecar is OUT.wsnapidx) (see 'wsnap pack --help')" ] ||
	fail "pack --index -: stderr [$(cat "$work/stderr")]"
[ ! -s "$work/dash.out" ] || fail "pack --index -: wrote to stdout"
[ ! -e "./-.wsnapidx" ] || fail "pack --index -: wrote ./-.wsnapidx"
# a sidecar that cannot be written: exit 4, OUT kept
mkdir -p "$work/blocked.tar.wsnapidx/x"
expect_rc 4 "$WSNAP_BIN" pack --index "$tree" "$work/blocked.tar"
expect_rc 0 "$WSNAP_BIN" check "$work/blocked.tar"
[ -z "$(find "$work" -maxdepth 1 -name '.*wsnap*')" ] ||
	fail "pack --index left a temporary file: $(ls -a "$work")"
zstd -l "$work/p.tar.zst" | awk 'NR == 2 { exit !($1 > 5 && $2 == 1) }' ||
	fail "p.tar.zst: not several frames and one skippable (the seek table): $(zstd -l "$work/p.tar.zst")"
xz -l --robot "$work/p.tar.xz" | awk '$1 == "totals" { exit !($3 > 5) }' ||
	fail "p.tar.xz: not several blocks: $(xz -l "$work/p.tar.xz")"
mkdir "$work/gnu-zst" "$work/bsd-xz"
zstd -dc "$work/p.tar.zst" | tar -xf - -C "$work/gnu-zst" ||
	fail "zstd -dc | tar"
xz -dc "$work/p.tar.xz" | bsdtar -xf - -C "$work/bsd-xz" || fail "xz -dc | bsdtar"
tar -xf "$work/p.tar.xz" -C "$work/bsd-xz" || fail "tar -xf p.tar.xz"
bsdtar -xf "$work/p.tar.zst" -C "$work/gnu-zst" || fail "bsdtar -xf p.tar.zst"
diff -r --no-dereference "$tree" "$work/gnu-zst" || fail "extracted .tar.zst differs"
diff -r --no-dereference "$tree" "$work/bsd-xz" || fail "extracted .tar.xz differs"

# 2. mounts: first (validated), again (from the cache), with the sidecar
for c in zst xz; do
	for how in first cache sidecar; do
		newmnt "mnt-$c-$how"
		case $how in
		first) mount_fg "$work/p.tar.$c" --no-cache ;;
		cache)
			expect_rc 0 "$WSNAP_BIN" index "$work/p.tar.$c"
			mount_fg "$work/p.tar.$c"
			;;
		sidecar)
			mount_fg "$work/p.tar.$c" --no-cache \
				--index "$work/p.tar.$c.wsnapidx"
			;;
		esac
		no_spill "$fg" "$c $how mount"
		same_as_tree "$c $how mount"
		random_reads "$c $how mount"
		no_spill "$fg" "$c $how mount, after reading everything"
		umount_fg
	done
done

# 3. no restart points: one zstd frame, one xz block
tar -C "$tree" -cf "$work/plain.tar" .
zstd -q -c "$work/plain.tar" >"$work/one.tar.zst"
xz -1 -c "$work/plain.tar" >"$work/one.tar.xz"
xz -l --robot "$work/one.tar.xz" | awk '$1 == "totals" { exit !($3 == 1) }' ||
	fail "one.tar.xz is not a single block"
for c in zst xz; do
	newmnt "mnt-one-$c"
	mount_fg "$work/one.tar.$c" --no-cache
	spilled "$fg" "one.tar.$c"
	same_as_tree "one.tar.$c"
	random_reads "one.tar.$c"
	umount_fg
	tmpdir_empty "one.tar.$c: after the unmount"
done
echo "e2e_mount_xzzstd: $(stat -c %s "$work/p.tar.zst") bytes .tar.zst, $(stat -c %s "$work/p.tar.xz") bytes .tar.xz of $(stat -c %s "$work/plain.tar") bytes of tar"
echo "e2e_mount_xzzstd: ok"
