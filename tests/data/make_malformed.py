#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates tests/data/malformed/: hostile and broken archives, each with
the outcome policy.md and cli.md prescribe for 'wsnap check'.

    python3 tests/data/make_malformed.py [OUTDIR]

Writes every archive into OUTDIR (default: tests/data/malformed next to this
script) and the manifest OUTDIR/EXPECTED, one line per archive, tab
separated:

    FILE  EXIT  OPTIONS  MESSAGE

OPTIONS are extra arguments for 'wsnap check' ('-' for none, else separated
by spaces). MESSAGE is the exact first line wsnap prints on stderr ('-' when
it must print nothing); any further stderr line must be a 'wsnap: hint:'.
tests/e2e/e2e_corpus.sh runs every line, from the file and from a pipe.

The output is deterministic: running this again gives the same bytes (the
zstd, lz4 and xz files depend on the tool versions of Debian 12). Keep the
whole directory small: bombs are made of RLE blocks (zstd) or nested gzip.
"""

import io
import os
import struct
import sys
import zipfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tarcraft as t  # noqa: E402

GIB = 1 << 30
INVALID = "wsnap: unsafe tar member '<tar>': invalid tar stream"
DEFAULT_MAX_TOTAL = 64 * GIB


def gz_member(data, extra=None, name=None, comment=None, hcrc=False,
              bad_hcrc=False, flags=0):
    """One gzip member with the optional header fields of RFC 1952."""
    flg = flags
    flg |= 0x04 if extra is not None else 0
    flg |= 0x08 if name is not None else 0
    flg |= 0x10 if comment is not None else 0
    flg |= 0x02 if hcrc else 0
    h = bytes([0x1f, 0x8b, 8, flg]) + b"\0\0\0\0" + b"\0\3"
    if extra is not None:
        h += struct.pack("<H", len(extra)) + extra
    if name is not None:
        h += name + b"\0"
    if comment is not None:
        h += comment + b"\0"
    if hcrc:
        c = zlib.crc32(h) & 0xffff
        h += struct.pack("<H", c ^ 1 if bad_hcrc else c)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = co.compress(data) + co.flush()
    return h + body + struct.pack("<II", zlib.crc32(data), len(data))

def rej(member, reason):
    """the policy-format message for an ASCII member name (Python repr)"""
    return "wsnap: unsafe tar member %s: %s" % (repr(member), reason)


CASES = []


def case(name, data, rc, msg=None, opts=None, why=""):
    if rc == 0:
        assert msg is None
    CASES.append((name, bytes(data), rc, msg or "-", opts or "-", why))


# ------------------------------------------------------------ base archive
# One member of every kind the reader must assemble: ustar dir, pax long
# name, GNU long name and long link name, symlink, empty file, GNU sparse,
# pax 1.0 sparse. BOUNDS are the offsets where a member ends (a header
# boundary between two members: a normal end of input).

LONG_PAX = "d/" + "p" * 120
LONG_GNU = "d/" + "g" * 110


def base_members():
    ms = [
        t.dir("d/"),
        t.pax([("path", LONG_PAX), ("mtime", "1764410400.25")]) +
        t.file("d/pax-short", b"P" * 700),
        t.gnu_long(LONG_GNU) + t.file("d/gnu-short", b"G" * 10,
                                      magic=t.GNU_MAGIC),
        t.gnu_long("../" + "k" * 110, b"K") +
        t.symlink("d/link", "ignored", magic=t.GNU_MAGIC),
        t.symlink("d/rel", "pax-short"),
        t.file("d/empty"),
        t.gnu_sparse("d/sparse", [(0, 512), (10000, 3), (20000, 0)], 20000,
                     b"h" * 512 + b"abc"),
        t.pax_sparse_10("d/sparse10", [(0, 512), (8192, 4), (9000, 0)],
                        9000, b"a" * 512 + b"wxyz"),
    ]
    bounds, off = [], 0
    for m in ms:
        off += len(m)
        bounds.append(off)
    return b"".join(ms), bounds


def canonical_codes(lengths):
    """Deflate's canonical Huffman codes (RFC 1951 3.2.2): symbol ->
    (code, length) for every length but 0."""
    count = [0] * 16
    for n in lengths:
        count[n] += 1
    count[0] = 0
    code, nxt = 0, [0] * 16
    for bits in range(1, 16):
        code = (code + count[bits - 1]) << 1
        nxt[bits] = code
    codes = {}
    for sym, n in enumerate(lengths):
        if n:
            codes[sym] = (nxt[n], n)
            nxt[n] += 1
    return codes


def literal_block_gz(data, lit_extra, dist_lengths):
    """A gzip member of one dynamic deflate block holding data as
    literals: literals of 9 bits, end-of-block and the lengths lit_extra
    (for symbols 256, 257, ...), the distance code lengths dist_lengths
    (no distance is ever used, so a code set that is incomplete is never
    met while decoding, only when the header is read)."""
    lit = [9] * 256 + list(lit_extra)
    used = sorted(set(lit + list(dist_lengths)))
    # a complete code for the code lengths (2 to 4 of them)
    cl_len = dict(zip(used, {2: [1, 1], 3: [1, 2, 2],
                             4: [2, 2, 2, 2]}[len(used)]))
    order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1,
             15]
    cl = canonical_codes([cl_len.get(i, 0) for i in range(19)])
    lit_codes = canonical_codes(lit)
    bits = []

    def put(v, n):  # fields: least significant bit first
        bits.extend((v >> i) & 1 for i in range(n))

    def code(c):  # Huffman codes: most significant bit first
        bits.extend((c[0] >> i) & 1 for i in range(c[1] - 1, -1, -1))

    hclen = max(order.index(sym) for sym in used) + 1
    put(1, 1)  # BFINAL
    put(2, 2)  # dynamic Huffman codes
    put(len(lit) - 257, 5)
    put(len(dist_lengths) - 1, 5)
    put(max(hclen, 4) - 4, 4)
    for sym in order[:max(hclen, 4)]:
        put(cl_len.get(sym, 0), 3)
    for n in lit + list(dist_lengths):
        code(cl[n])
    for b in data:
        code(lit_codes[b])
    code(lit_codes[256])
    bits.extend([0] * (-len(bits) % 8))
    body = bytes(sum(bits[i + k] << k for k in range(8))
                 for i in range(0, len(bits), 8))
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + body +
            struct.pack("<II", zlib.crc32(data), len(data)))


BASE_BODY, BASE_BOUNDS = base_members()
BASE = BASE_BODY + t.end()


def gen_truncation():
    """the base archive cut at every block boundary and inside blocks"""
    body_len = len(BASE_BODY)
    case("base.tar", BASE, 0, why="positive control")
    offsets = set()
    for blk in range(0, len(BASE) // t.BLOCK + 1):
        for d in (0, 1, 100, 257, 511):
            off = blk * t.BLOCK + d
            if off < len(BASE):
                offsets.add(off)
    for off in sorted(offsets):
        cut = BASE[:off]
        if off in BASE_BOUNDS:
            # end of input at a header boundary between members
            rc, msg, why = 0, None, "cut at a member boundary"
        elif off >= body_len + t.BLOCK:
            # one whole zero block seen: the end marker; the rest ignored
            rc, msg, why = 0, None, "cut after a lone zero block"
        else:
            rc, msg = 3, INVALID
            why = ("cut inside the first end block" if off > body_len
                   else "cut inside a member")
        case("trunc-%05d.tar" % off, cut, rc, msg, why=why)


def flip(data, pos, mask=0x01):
    d = bytearray(data)
    d[pos] ^= mask
    return bytes(d)


def gen_compressed():
    for ext, comp in t.COMPRESSORS.items():
        z = comp(BASE)
        case("base.tar." + ext, z, 0, why="positive control")
        case("trunc-half.tar." + ext, z[:len(z) // 2], 3, INVALID,
             why="compressed stream cut in the middle")
        case("trunc-last.tar." + ext, z[:-1], 3, INVALID,
             why="compressed stream missing its last byte (trailer)")
        case("empty.tar." + ext, comp(b""), 3, INVALID,
             why="a compressed stream holding zero bytes of tar")
        case("zeros-only.tar." + ext, comp(t.end(20)), 0,
             why="only zero blocks: an empty archive")
    z = t.gz(BASE)
    bad = [("bad-crc.tar.gz", flip(z, len(z) - 8), "gzip trailer CRC32"),
           ("bad-isize.tar.gz", flip(z, len(z) - 4), "gzip trailer length"),
           ("trunc-trailer.tar.gz", z[:-8], "gzip without its trailer")]
    z = t.zst(BASE)
    bad.append(("bad-check.tar.zst", flip(z, len(z) - 1),
                "zstd content checksum"))
    z = t.xz(BASE)
    # stream footer: CRC32, backward size, flags, 'YZ'; the index before
    # it; the block's CRC64 check right before the index
    index_size = (int.from_bytes(z[-8:-4], "little") + 1) * 4
    bad.append(("bad-check.tar.xz", flip(z, len(z) - 12 - index_size - 1),
                "xz block check (CRC64)"))
    z = t.lz4(BASE)
    bad.append(("bad-check.tar.lz4", flip(z, len(z) - 1),
                "lz4 content checksum"))
    z = t.bz(BASE)
    bad.append(("bad-crc.tar.bz2", flip(z, len(z) // 2), "bzip2 data"))
    for name, data, what in bad:
        assert not t.decompresses(name, data), name
        case(name, data, 3, INVALID, why=what + " wrong")

    # Two gzip members back to back are one valid gzip stream (bgzip,
    # pigz -i, cat a.gz b.gz): accepted, and the reader checks the CRC and
    # length of every member against its own trailer (core/stream/gzip.c)
    half = len(BASE_BODY) // 2 // t.BLOCK * t.BLOCK
    g1, g2 = t.gz(BASE[:half]), t.gz(BASE[half:])
    case("multimember.tar.gz", g1 + g2, 0, None,
         why="multi-member gzip: every trailer checked")
    case("multimember-bad-crc1.tar.gz", flip(g1, len(g1) - 8) + g2, 3,
         INVALID, why="multi-member gzip: the first member's CRC wrong")
    case("multimember-bad-crc2.tar.gz", g1 + flip(g2, len(g2) - 8), 3,
         INVALID, why="multi-member gzip: the second member's CRC wrong")
    case("multimember-bad-isize2.tar.gz", g1 + flip(g2, len(g2) - 1), 3,
         INVALID, why="multi-member gzip: the second member's length wrong")
    case("multimember-trunc2.tar.gz", g1 + g2[:len(g2) // 2], 3, INVALID,
         why="multi-member gzip: the second member cut short")
    # every optional header field of RFC 1952, bounded and checked
    case("gzip-fields.tar.gz", gz_member(BASE, extra=b"ab" * 100,
                                         name=b"snap.tar", comment=b"c",
                                         hcrc=True), 0, None,
         why="gzip FEXTRA, FNAME, FCOMMENT and FHCRC")
    case("gzip-bad-hcrc.tar.gz", gz_member(BASE, name=b"snap.tar",
                                           hcrc=True, bad_hcrc=True), 3,
         INVALID, why="gzip FHCRC wrong")
    case("gzip-reserved-flag.tar.gz", gz_member(BASE, flags=0x20), 3,
         INVALID, why="gzip reserved header flag set")
    case("gzip-unterminated-name.tar.gz",
         gz_member(BASE, flags=0x08)[:10] + b"x" * 100, 3, INVALID,
         why="gzip FNAME never ends")
    # deflate code sets: zlib (so gzip, Python, GNU tar) refuses one that
    # is incomplete even where the data never meets its missing codes;
    # ISA-L 2.30 checks only for over-subscribed ones and decodes these
    # (why the validation pass stays zlib's, design.md)
    case("gzip-literal-block.tar.gz",
         literal_block_gz(BASE, [2, 2], [1, 1]), 0, None,
         why="one dynamic deflate block of literals: complete code sets")
    case("gzip-incomplete-dist-codes.tar.gz",
         literal_block_gz(BASE, [2, 2], [1, 2]), 3, INVALID,
         why="deflate distance code set incomplete (zlib: invalid "
             "distances set)")
    case("gzip-incomplete-lit-codes.tar.gz",
         literal_block_gz(BASE, [2, 3], [1, 1]), 3, INVALID,
         why="deflate literal/length code set incomplete (zlib: invalid "
             "literal/lengths set)")

    # nested compression: libarchive would unwrap filter after filter; the
    # policy names one compression of a tar stream, and a second layer only
    # multiplies a bomb's ratio (gzip in gzip: a million to one), so the
    # reader takes one layer and what is inside it must be tar
    case("nested.tar.xz.gz", t.gz(t.xz(BASE)), 3, INVALID,
         why="two layers of compression: the inner one is not tar")
    case("nested.tar.gz.zst", t.zst(t.gz(BASE)), 3, INVALID,
         why="two layers of compression: the inner one is not tar")
    case("nested-trunc.tar.xz.gz", t.gz(t.xz(BASE)[:-30]), 3, INVALID,
         why="inner stream truncated inside a valid outer one")



def gen_stream_ends():
    """Where one compressed stream meets the next, and what may follow the
    last: whatever Python's tarfile, GNU tar and bsdtar read differently
    is refused (doc/design.md, "Where a compressed stream ends"). The
    split is at a member boundary, so a reader that stops after the first
    stream sees fewer members, not a truncated one."""
    half = BASE_BOUNDS[len(BASE_BOUNDS) // 2]
    head, tail = BASE[:half], BASE[half:]
    zeros4, skip = b"\0" * 4, t.zstd_skippable(b"meta")
    for ext, comp in t.COMPRESSORS.items():
        a, b = comp(head), comp(tail)
        case("streams.tar." + ext, a + b, 0,
             why="two %s streams back to back: every reader reads both" %
             ext)
        case("streams-zeros-between.tar." + ext, a + zeros4 + b, 3,
             INVALID, why="zero bytes between two %s streams: readers "
             "disagree or stop there" % ext)
    # xz: stream padding is whole 4-byte words of zeros. The bug: wsnap
    # read both streams of a padded pair, Python's lzma only the first
    xz_a, xz_b = t.xz(head), t.xz(tail)
    case("xz-streams-padded.tar.xz", xz_a + b"\0" * 8 + xz_b, 3, INVALID,
         why="xz stream padding before another stream: tarfile sees the "
         "first stream's members only")
    case("xz-streams-padded-end.tar.xz", xz_a + xz_b + b"\0" * 8, 0,
         why="xz stream padding after the last stream: all readers agree")
    case("xz-padded-end.tar.xz", t.xz(BASE) + zeros4, 0,
         why="xz stream padding after the only stream")
    case("xz-padded-end-odd.tar.xz", t.xz(BASE) + b"\0" * 2, 3, INVALID,
         why="xz padding that is not a multiple of four bytes")
    case("xz-garbage-end.tar.xz", t.xz(BASE) + b"garbage!", 3, INVALID,
         why="bytes after the xz stream that are neither padding nor "
         "a stream")
    # gzip and bzip2: zero bytes after the last stream are read alike
    for ext, comp in (("gz", t.gz), ("bz2", t.bz)):
        case("zeros-end.tar." + ext, comp(BASE) + b"\0" * 1024, 0,
             why="zero bytes after the last %s stream: all readers agree"
             % ext)
        case("garbage-end.tar." + ext, comp(BASE) + b"garbage!", 3,
             INVALID, why="other bytes after the last %s stream" % ext)
    # zstd: nothing but frames; skippable frames anywhere (pzstd writes
    # one before every frame)
    case("zeros-end.tar.zst", t.zst(BASE) + zeros4, 3, INVALID,
         why="zero bytes after a zstd frame (zstd and GNU tar fail)")
    case("skippable-end.tar.zst", t.zst(BASE) + skip, 0,
         why="a skippable frame after the last frame")
    case("skippable-between.tar.zst", t.zst(head) + skip + t.zst(tail), 0,
         why="a skippable frame between frames")
    case("skippable-first.tar.zst", skip + t.zst(BASE), 0,
         why="a skippable frame before the first frame, as pzstd writes")
    case("skippable-end.tar.lz4", t.lz4(BASE) + skip, 0,
         why="an lz4 skippable frame after the last frame")

def gen_ends():
    one = t.file("a", b"x")
    case("empty.tar", b"", 3, INVALID, why="zero bytes of input")
    case("one-byte.tar", b"\0", 3, INVALID, why="partial block")
    case("zeros-1.tar", t.end(1), 0, why="a lone zero block")
    case("zeros-20.tar", t.end(20), 0, why="only zero blocks")
    case("no-end-marker.tar", one, 0, why="end of input at a boundary")
    case("lone-zero-block.tar", one + t.end(1), 0)
    case("after-end-garbage.tar", one + t.end() + b"garbage" * 200, 0,
         why="data after the end marker is ignored")
    case("after-lone-zero-garbage.tar",
         one + t.end(1) + t.header("../evil") + b"junk", 0,
         why="a lone zero block ends the archive; what follows is ignored")
    case("garbage-after-member.tar", one + b"G" * 512 + t.end(), 3,
         INVALID, why="garbage where a header should be")
    case("garbage-mid.tar", one + b"\x01" * 512 + one + t.end(), 3, INVALID)
    case("partial-garbage.tar", one + b"G" * 100, 3, INVALID,
         why="a partial block that is not zeros")
    case("text.tar", b"hello world\n" * 3, 3, INVALID, why="not a tar")
    nz = bytearray(t.BLOCK)
    nz[t.CHKSUM:t.CHKSUM + 8] = b"000401\0 "  # 0o400 would be right
    case("nonzero-empty-header.tar", one + bytes(nz) + one + t.end(), 3,
         INVALID, why="an empty header that is not all zeros")


def gen_checksums():
    ok = t.file("a", b"x")
    bad = t.file("b", b"y", chksum=1234)
    case("bad-chksum-first.tar", bad + ok + t.end(), 3, INVALID)
    case("bad-chksum-second.tar", ok + bad + ok + t.end(), 3, INVALID,
         why="libarchive would resync (ARCHIVE_RETRY) and drop it")
    case("bad-chksum-last.tar", ok + bad + t.end(), 3, INVALID)
    case("chksum-spaces.tar", t.file("a", b"x", chksum=b" " * 8) + t.end(),
         3, INVALID)
    case("chksum-nonoctal.tar",
         t.file("a", b"x", chksum=b"12x456\0 ") + t.end(), 3, INVALID)
    case("chksum-off-by-one.tar",
         t.file("a", b"x", chksum=t.checksum(
             bytearray(t.header("a", size=1))) + 1) + t.end(), 3, INVALID)
    long_bad = t.gnu_long("d/" + "q" * 120, chksum=99)
    case("bad-chksum-longlink.tar", long_bad + ok + t.end(), 3, INVALID,
         why="checksum wrong on an extended header")
    case("bad-chksum-pax.tar",
         t.pax([("path", "x")], chksum=77) + ok + t.end(), 3, INVALID)


def gen_sizes():
    def sized(name, size, data=b"", **kw):
        return t.header(name, size=size, **kw) + t.pad(data)

    case("size-negative-b256.tar",
         sized("neg", t.base256(-1, 12)) + t.end(), 3, INVALID)
    case("size-negative-big-b256.tar",
         sized("neg", t.base256(-(1 << 62), 12)) + t.end(), 3, INVALID)
    case("size-2p63-b256.tar",
         sized("big", t.base256(1 << 63, 12)) + t.end(), 3, INVALID,
         why="overflows int64")
    case("size-2p64-b256.tar",
         sized("big", t.base256((1 << 64) + 5, 12)) + t.end(), 3, INVALID,
         why="overflows int64")
    case("size-2p88-b256.tar",
         sized("big", t.base256((1 << 88) - 1, 12)) + t.end(), 3, INVALID,
         why="largest base-256 value of a size field")
    case("size-2p62-b256.tar",
         sized("huge", t.base256(1 << 62, 12)) + t.end(), 3,
         rej("huge", "archive extracted size exceeds limit"),
         why="fits, but over the 64 GiB default: limit checked at header")
    case("size-b256-small.tar",
         sized("five", t.base256(5, 12), b"hello") + t.end(), 0,
         why="base-256 is a valid size encoding")
    case("size-12-octal-digits.tar",
         sized("big", t.octal_full(0o777777777777, 12), b"x" * 512) +
         t.end(), 3, INVALID,
         why="64 GiB - 1 declared (allowed) but the data is missing")
    case("size-truncated-data-seekable.tar",
         sized("f", 100000, b"x" * 2048), 3, INVALID,
         why="a seek past the end of a file must not hide missing data")
    case("size-too-big-last.tar",
         t.file("a", b"x") + sized("f", 4096, b"y" * 512) + t.end(), 3,
         INVALID, why="declared data runs into the end marker and stops")
    case("mtime-negative-b256.tar",
         t.file("old", b"x", mtime=t.base256(-1000, 12)) + t.end(), 0,
         why="a negative mtime is a valid time")
    case("uid-b256.tar",
         t.file("u", b"x", uid=t.base256(1 << 40, 8)) + t.end(), 0)
    case("typeflag-unknown.tar", t.member("weird", b"abc", b"Z") + t.end(),
         3, rej("weird", "unsupported member type"),
         why="libarchive reports Z as a regular file; the raw flag says no")
    case("typeflag-fifo.tar", t.member("fifo", b"", b"6") + t.end(), 3,
         rej("fifo", "unsupported member type"))
    case("typeflag-chardev.tar", t.member("tty", b"", b"3") + t.end(), 3,
         rej("tty", "unsupported member type"))
    case("prefix-parent.tar",
         t.file("x", b"1", prefix="..") + t.end(), 3,
         rej("../x", "parent traversal"),
         why="the ustar prefix field is part of the name")
    case("prefix-absolute.tar",
         t.file("passwd", b"1", prefix="/etc") + t.end(), 3,
         rej("/etc/passwd", "absolute path"))
    # the prefix field belongs to ustar headers: libarchive and GNU tar
    # ignore it in a header without the ustar magic, Python's tarfile (the
    # reference's reader) prepends it anyway
    case("v7-prefix.tar",
         t.file("passwd", b"1", prefix="../../etc", magic=b"\0" * 8) +
         t.end(), 3, INVALID,
         why="no ustar magic but a prefix: tarfile reads "
         "'../../etc/passwd', libarchive 'passwd' (found by fuzz_index "
         "with fuzz/tarfile_diff.py)")
    case("v7-plain.tar", t.file("v7", b"1", magic=b"\0" * 8) + t.end(), 0,
         why="an old v7 header is fine")
    # found by fuzz_export: accepted, listed and mounted as 'l -> ', but
    # no filesystem holds an empty symlink, so export failed (exit 4); a
    # symlink header without a target is refused as unreadable
    case("symlink-empty-target.tar",
         t.symlink("l", "") + t.file("a", b"x") + t.end(), 3, INVALID,
         why="a symlink with an empty target (fuzz_export crash-e040e7ac)")
    case("name-100-no-nul.tar",
         t.file("n" * 100, b"1") + t.end(), 0,
         why="a name filling its field has no terminator")


def gen_nonfile_sizes():
    """a size field on a member that stores no data (policy.md section 5):
    accepted where no reader skips data after it (each reads the next
    block as a header), refused where one of them would"""
    evil = t.header("evil")  # a header where data would be
    after = t.file("after", b"x")
    case("dir-size-no-data.tar",
         t.header("d/", b"5", size=255) + after + t.end(), 0,
         why="a directory's size field and no data (CPython's testtar.tar "
         "'ustar/dirtype-with-size'): tarfile, GNU tar and libarchive "
         "read on at the next block")
    case("dir-size-header-after.tar",
         t.header("d/", b"5", size=5) + evil + after + t.end(), 0,
         why="and the block after it is a member to every reader")
    case("dir-pax-size.tar",
         t.pax([("size", "5")]) + t.header("d/", b"5") + evil + after +
         t.end(), 3, INVALID,
         why="a pax size on a directory: libarchive and GNU tar's listing "
         "skip 'evil', tarfile and GNU tar's extraction read it")
    case("hardlink-size-no-data.tar",
         after + t.header("h", b"1", size=5, linkname="after") + evil +
         t.end(), 3, rej("h", "hardlink member not allowed"),
         why="a hardlink's size field outside pax archives: read alike, "
         "so the policy decides")
    case("hardlink-size-pax-archive.tar",
         t.pax([("mtime", "1")]) + after +
         t.header("h", b"1", size=5, linkname="after") + evil + t.end(), 3,
         INVALID, why="in a pax archive libarchive skips a hardlink's "
         "size, tarfile and GNU tar do not")
    case("symlink-size.tar",
         t.header("l", b"2", size=5, linkname="after") + evil + after +
         t.end(), 3, INVALID,
         why="a symlink's size: GNU tar's listing skips it, tarfile, GNU "
         "tar's extraction and libarchive do not")
    case("fifo-size.tar",
         t.header("p", b"6", size=5) + evil + after + t.end(), 3, INVALID,
         why="the same for a FIFO (and devices)")
    case("v7-dir-size.tar",
         t.header("d/", b"\0", size=5) + evil + after + t.end(), 3,
         INVALID, why="the same for a typeflag NUL directory")


def gen_pax():
    ok = t.file("a", b"x")
    body5 = t.header("five", size=0) + t.pad(b"hello")
    case("pax-size-override.tar",
         t.pax([("size", "5")]) + body5 + t.end(), 0,
         why="pax size replaces the header size")
    case("pax-size-negative.tar",
         t.pax([("size", "-1")]) + body5 + t.end(), 3, INVALID)
    case("pax-size-2p63.tar",
         t.pax([("size", str(1 << 63))]) + body5 + t.end(), 3, INVALID)
    case("pax-size-2p64.tar",
         t.pax([("size", str((1 << 64) + 5))]) + body5 + t.end(), 3,
         INVALID)
    case("pax-size-huge-digits.tar",
         t.pax([("size", "9" * 60)]) + body5 + t.end(), 3, INVALID)
    case("pax-size-garbage.tar",
         t.pax([("size", "5x")]) + body5 + t.end(), 3, INVALID,
         why="a pax number that does not parse")
    case("pax-size-huge.tar",
         t.pax([("size", str(10 ** 15))]) + body5 + t.end(), 3,
         rej("five", "archive extracted size exceeds limit"),
         why="declared 1 PB: the limit fires at the header, data unread")
    case("pax-mtime-overflow.tar",
         t.pax([("mtime", "9" * 40 + ".5")]) + ok + t.end(), 3, INVALID,
         why="a pax number that overflows")
    case("pax-len-nonnumeric.tar",
         t.pax(b"xx path=abc\n") + ok + t.end(), 3, INVALID)
    case("pax-len-zero.tar",
         t.pax(b"0 path=abc\n") + ok + t.end(), 3, INVALID)
    case("pax-len-past-record.tar",
         t.pax(b"99 path=abc\n") + ok + t.end(), 3, INVALID,
         why="record length beyond the extended header's data")
    case("pax-len-short.tar",
         t.pax(b"5 path=abc\n") + ok + t.end(), 3, INVALID,
         why="record length shorter than the record")
    case("pax-len-overflow.tar",
         t.pax(b"99999999999999999999999 path=abc\n") + ok + t.end(), 3,
         INVALID)
    case("pax-no-equals.tar",
         t.pax(b"11 pathabc\n") + ok + t.end(), 3, INVALID)
    case("pax-no-newline.tar",
         t.pax(b"12 path=abcd") + ok + t.end(), 3, INVALID)
    case("pax-no-space.tar",
         t.pax(b"11path=abcd\n") + ok + t.end(), 3, INVALID)
    case("pax-empty-key.tar",
         t.pax(b"10 =value\n") + ok + t.end(), 3, INVALID)
    case("pax-at-eof.tar", ok + t.pax([("path", "b")]), 3, INVALID,
         why="an extended header with no member after it")
    case("pax-before-end.tar", ok + t.pax([("path", "b")]) + t.end(), 3,
         INVALID, why="an extended header followed by the end marker")
    case("pax-truncated-data.tar",
         ok + t.pax([("path", "b" * 300)])[:t.BLOCK + 100], 3, INVALID)
    # 8 MiB of extended header: past WSNAP_READER_MAX_HEADER_BYTES (4 MiB)
    big = t.pax_record("comment", "c" * (8 << 20))
    case("pax-overlong.tar.gz", t.gz(t.pax(big) + ok + t.end()), 3,
         INVALID, why="extended headers are bounded (4 MiB)")
    case("pax-path-parent.tar",
         t.pax([("path", "../evil")]) + ok + t.end(), 3,
         rej("../evil", "parent traversal"),
         why="the pax path is the member name")
    # policy.md section 1 names the global path as part of the member
    # name, but readers disagree (tarfile renames every later member,
    # libarchive ignores global headers): the reader refuses a global name
    # as ambiguous, which is stricter than either reading
    case("pax-global-path.tar",
         t.pax([("path", "../evil")], typeflag=b"g") + ok + t.end(), 3,
         INVALID, why="a global path: tarfile renames, libarchive ignores")
    case("pax-global-dup.tar",
         t.pax([("path", "same")], typeflag=b"g") + ok +
         t.file("b", b"y") + t.end(), 3, INVALID,
         why="a global path would give two members the same name")
    case("pax-global-linkpath.tar",
         t.pax([("linkpath", "/etc/passwd")], typeflag=b"g") +
         t.symlink("l", "ok") + t.end(), 3, INVALID)
    case("pax-global-comment.tar",
         t.pax([("comment", "0123abcd"), ("mtime", "1")], typeflag=b"g") +
         ok + t.file("b", b"y") + t.end(), 0,
         why="a global header without names (git archive writes one)")
    case("pax-linkpath-abs.tar",
         t.pax([("linkpath", "/etc/passwd")]) + t.symlink("l", "ok") +
         t.end(), 3, rej("l", "absolute symlink target not allowed: "
                         "/etc/passwd"))


def ext_with_padding(typeflag, body, padding):
    """an extension header whose body is followed by padding (the rest of
    its last block filled with zeros)"""
    body = t.b(body)
    rest = -len(body) % t.BLOCK
    assert len(padding) <= rest
    name = b"././@LongLink" if typeflag in b"LK" else b"./PaxHeaders/x"
    magic = t.GNU_MAGIC if typeflag in b"LK" else t.USTAR_MAGIC
    return (t.header(name, typeflag, size=len(body), magic=magic) + body +
            padding + b"\0" * (rest - len(padding)))


def gen_extension_bytes():
    """every byte of an extension header's blocks is read alike by
    libarchive (size bytes of a body), tarfile (the whole padded blocks)
    and GNU tar (a long name up to its first NUL): policy.md section 5"""
    ok = t.file("a", b"x")
    # tarfile reads a second record in the padding: the member has size 0
    # and its data is a symlink to / and a file written through it
    hidden = t.symlink("l", "/") + t.file("l/tmp/owned", b"owned\n")
    case("pax-padding-hidden-members.tar",
         ext_with_padding(b"x", t.pax_record("path", "safe"),
                          t.pax_record("size", "0")) +
         t.file("carrier", hidden) + t.end(), 3, INVALID,
         why="a size=0 record in the padding: tarfile sees 'safe' empty, "
         "then a symlink to / and a file through it; libarchive one file")
    case("pax-padding-path.tar",
         ext_with_padding(b"x", t.pax_record("mtime", "1"),
                          t.pax_record("path", "../evil")) + ok + t.end(),
         3, INVALID, why="a path record in the padding: tarfile alone "
         "reads '../evil'")
    case("pax-global-padding.tar",
         ext_with_padding(b"g", t.pax_record("comment", "c"),
                          t.pax_record("mtime", "1")) + ok + t.end(), 3,
         INVALID, why="a global header's padding is read by tarfile too")
    case("pax-full-block.tar",
         t.pax(t.pax_record("comment", "c" * 486) +
               t.pax_record("path", "full")) + ok + t.end(), 0,
         why="a pax body that fills its block: no padding to read")
    case("pax-key-blank.tar",
         t.pax(b"13  path=abc\n") + ok + t.end(), 3, INVALID,
         why="blanks before a key: GNU tar skips them and renames 'a' to "
         "'abc', tarfile and libarchive keep the key ' path'")
    case("pax-dup-key.tar",
         t.pax([("path", "one"), ("path", "two")]) + ok + t.end(), 0,
         why="a key given twice: every reader keeps the last ('two')")
    case("longname-no-nul.tar",
         ext_with_padding(b"L", b"safe", b"") + ok + t.end(), 3, INVALID,
         why="a long name without its NUL within the size")
    case("longname-padding-name.tar",
         ext_with_padding(b"L", b"safe", b"/../evil") + ok + t.end(), 3,
         INVALID, why="a long name without its NUL: tarfile and GNU tar "
         "read 'safe/../evil' from the padding, libarchive 'safe'")
    case("longname-full-block.tar",
         ext_with_padding(b"L", b"n" * t.BLOCK, b"") + ok + t.end(), 3,
         INVALID, why="no NUL within the size, no padding either")
    case("longname-after-nul.tar",
         ext_with_padding(b"L", b"safe\0../evil\0", b"") + ok + t.end(), 3,
         INVALID, why="bytes after a long name's NUL")
    case("longname-nuls.tar",
         ext_with_padding(b"L", b"name\0\0\0", b"") + ok + t.end(), 0,
         why="only NULs after a long name's NUL")
    case("size-leading-nul.tar",
         t.header("f", size=b"\x0000000001000") + t.header("evil") + ok +
         t.end(), 3, INVALID, why="a number field with a leading NUL: GNU "
         "tar skips the NUL and reads 512, the others read 0")
    case("prefix-magic-ustarX.tar",
         t.file("x", b"1", prefix="pre", magic=b"ustarX00") + t.end(), 3,
         INVALID, why="libarchive and tarfile join the prefix of a "
         "'ustarX' header, GNU tar does not")
    case("file-trailing-slash.tar",
         t.file("d/") + t.file("d/x", b"1") + t.end(), 3, INVALID,
         why="a '0' member named 'd/': a directory to libarchive and GNU "
         "tar, a file to tarfile")
    case("after-lone-zero-member.tar",
         ok + t.end(1) + t.file("hidden", b"h") + t.end(), 0,
         why="a member after a lone zero block: every reader ends before it")


def gen_gnu_long():
    ok = t.file("a", b"x")
    case("longname-at-eof.tar", ok + t.gnu_long("d/" + "n" * 120), 3,
         INVALID, why="a long-name record with no header after it")
    case("longname-before-end.tar",
         ok + t.gnu_long("d/" + "n" * 120) + t.end(), 3, INVALID)
    case("longlink-at-eof.tar", ok + t.gnu_long("t" * 120, b"K"), 3,
         INVALID)
    # GNU tar and libarchive take the last of two long names, Python's
    # tarfile (the reference's reader) the first: a checker on one side and
    # an extractor on the other would see different names, so the archive
    # is ambiguous and refused
    case("longname-chained.tar",
         t.gnu_long("../evil-" + "n" * 100) + t.gnu_long("safe-" + "m" * 100)
         + ok + t.end(), 3, INVALID,
         why="two long names for one member: tarfile reads '../evil-...', "
         "libarchive and GNU tar 'safe-...'")
    case("longlink-chained.tar",
         t.gnu_long("/etc/" + "b" * 100, b"K") + t.gnu_long("a" * 101, b"K")
         + t.symlink("l", "x") + t.end(), 3, INVALID,
         why="two long link names: tarfile reads '/etc/...', libarchive "
         "and GNU tar 'aaa...'")
    case("longname-and-pax-path.tar",
         t.gnu_long("safe") + t.pax([("path", "../evil")]) + ok + t.end(), 3,
         INVALID, why="two name sources: tarfile and libarchive read "
         "'safe', GNU tar '../evil' (the other order, a pax path before "
         "the long name, reads alike everywhere)")
    case("longname-huge-size.tar",
         t.header("././@LongLink", b"L", size=1 << 30, magic=t.GNU_MAGIC)
         + b"n" * 1024, 3, INVALID,
         why="a 1 GiB long name: bounded, rejected, not allocated")
    case("longname-truncated.tar",
         ok + t.gnu_long("d/" + "n" * 1000)[:t.BLOCK + 200], 3, INVALID)
    case("longname-parent.tar", t.gnu_long("../evil") + ok + t.end(), 3,
         rej("../evil", "parent traversal"),
         why="the long name is the member name")
    case("longlink-absolute.tar",
         t.gnu_long("/etc/passwd", b"K") + t.symlink("l", "x") + t.end(), 3,
         rej("l", "absolute symlink target not allowed: /etc/passwd"))


def gen_sparse():
    def gnu(runs, realsize, data, **kw):
        return t.gnu_sparse("sp", runs, realsize, data, **kw) + t.end()

    # every run with data but the last fills whole blocks, and a file that
    # ends in a hole says so by a run of length 0: as GNU tar writes them
    h512 = b"h" * 512
    case("sparse-gnu.tar",
         gnu([(0, 512), (10000, 3), (20000, 0)], 20000, h512 + b"abc"), 0,
         why="valid old GNU sparse file")
    case("sparse-gnu-trailing-hole.tar",
         gnu([(0, 5), (20000, 0)], 20000, b"hello"), 0,
         why="GNU tar ends a file with a hole by a zero-length run at the "
         "file's end")
    runs = [(i * 1000, 512) for i in range(30)] + [(40000, 0)]
    case("sparse-gnu-extended.tar", gnu(runs, 40000, b"z" * 512 * 30), 0,
         why="sparse map continued in extension blocks")
    case("sparse-gnu-unordered.tar",
         gnu([(10000, 512), (0, 5)], 20000, h512 + b"hello"), 3, INVALID)
    case("sparse-gnu-overlap.tar",
         gnu([(0, 512), (50, 10)], 20000, h512 + b"o" * 10), 3, INVALID)
    case("sparse-gnu-duplicate.tar",
         gnu([(100, 512), (100, 512)], 20000, h512 * 2), 3, INVALID)
    case("sparse-gnu-beyond-size.tar",
         gnu([(0, 512), (30000, 3)], 20000, h512 + b"abc"), 3, INVALID,
         why="a run past the file's real size")
    case("sparse-gnu-data-short.tar",
         gnu([(0, 5), (20000, 0)], 20000, b"hell", size=4), 3, INVALID,
         why="runs need 5 bytes, the member stores 4")
    case("sparse-gnu-run-overflow.tar",
         gnu([(0, 512), (t.base256((1 << 63) - 2, 12), 3)],
             t.base256((1 << 63) - 1, 12), h512 + b"abc"), 3, INVALID,
         why="offset + length overflows int64")
    case("sparse-gnu-realsize-huge.tar",
         gnu([(0, 5), (t.base256(100 * GIB, 12), 0)],
             t.base256(100 * GIB, 12), b"hello"), 3,
         rej("sp", "archive extracted size exceeds limit"),
         why="a sparse file counts its full size")
    case("sparse-gnu-realsize-negative.tar",
         gnu([(0, 5)], t.base256(-5, 12), b"hello"), 3, INVALID)
    case("sparse-gnu-realsize-2p63.tar",
         gnu([(0, 5)], t.base256(1 << 63, 12), b"hello"), 3, INVALID)
    case("sparse-gnu-ext-at-eof.tar",
         t.gnu_sparse("sp", runs, 40000, b"z" * 300)[:t.BLOCK], 3, INVALID,
         why="extension blocks announced, input ends")

    def p10(runs, realsize, data, map_text=None):
        return t.pax_sparse_10("sp", runs, realsize, data,
                               map_text) + t.end()

    case("sparse-pax10.tar",
         p10([(0, 512), (8192, 4), (9000, 0)], 9000, h512 + b"wxyz"), 0)
    case("sparse-pax10-trailing-hole.tar",
         p10([(0, 4), (9000, 0)], 9000, b"abcd"), 0)
    case("sparse-pax10-unordered.tar",
         p10([(8192, 512), (0, 4)], 9000, h512 + b"abcd"), 3, INVALID)
    case("sparse-pax10-overlap.tar",
         p10([(0, 512), (99, 4)], 9000, h512 + b"o" * 4), 3, INVALID)
    case("sparse-pax10-beyond-size.tar",
         p10([(0, 512), (9998, 4)], 9000, h512 + b"wxyz"), 3, INVALID)
    case("sparse-pax10-map-garbage.tar",
         p10([], 9000, b"abcd", b"2\nx\n4\n"), 3, INVALID)
    case("sparse-pax10-map-count-huge.tar",
         p10([], 9000, b"abcd", b"99999999999\n0\n4\n"), 3, INVALID)
    case("sparse-pax10-map-short.tar",
         p10([], 9000, b"abcd", b"3\n0\n4\n"), 3, INVALID,
         why="map announces 3 runs, gives 1")
    case("sparse-pax10-map-negative.tar",
         p10([], 9000, b"abcd", b"1\n-4\n4\n"), 3, INVALID)
    case("sparse-pax10-realsize-overflow.tar",
         t.pax_sparse_10("sp", [(0, 4)], 1 << 64, b"abcd") + t.end(), 3,
         INVALID)

    def p01(runs, realsize, data, map_value=None):
        return t.pax_sparse_01("sp", runs, realsize, data,
                               map_value) + t.end()

    case("sparse-pax01.tar",
         p01([(0, 512), (8192, 4), (9000, 0)], 9000, h512 + b"wxyz"), 0)
    case("sparse-pax01-unordered.tar",
         p01([(8192, 512), (0, 4)], 9000, h512 + b"abcd"), 3, INVALID)
    case("sparse-pax01-odd.tar",
         p01([(0, 4)], 9000, b"abcd", "0,4,8192"), 3, INVALID,
         why="a map with an odd number of values")
    case("sparse-pax01-negative.tar",
         p01([(0, 4)], 9000, b"abcd", "-8,4"), 3, INVALID)

    # where GNU tar extracts a sparse file otherwise than libarchive and
    # tarfile read it (policy.md section 5)
    case("sparse-gnu-unaligned-run.tar",
         gnu([(0, 5), (1000, 512), (1512, 0)], 1512, b"hello" + h512), 3,
         INVALID, why="a run that ends inside a block, then another: GNU "
         "tar reads the second from the next block, the others right after "
         "the first")
    case("sparse-gnu-no-hole-run.tar", gnu([(0, 5)], 1000, b"hello"), 3,
         INVALID, why="a map that ends before the real size: GNU tar "
         "extracts 5 bytes, the others 1000")
    case("sparse-pax01-no-hole-run.tar",
         p01([(0, 512), (8192, 4)], 9000, h512 + b"wxyz"), 3, INVALID,
         why="the same in pax 0.1")
    case("sparse-gnu-empty-map.tar", gnu([], 5, b"hello"), 3, INVALID,
         why="an 'S' map without runs: tarfile reads 5 zeros, libarchive "
         "'hello', GNU tar extracts an empty file")
    case("sparse-gnu-ext-after-short-block.tar",
         gnu([(0, 512), (1000, 512), (2000, 0)], 2000, h512 * 2,
             extended=[[(3000, 0)]]), 3, INVALID,
         why="extension blocks after a header with free entries: GNU tar "
         "reads no extension block, libarchive and tarfile do")
    case("sparse-pax01-no-numblocks.tar",
         t.pax([("GNU.sparse.size", "4"), ("GNU.sparse.map", "0,4")]) +
         t.file("sp", b"abcd") + t.end(), 3, INVALID,
         why="a 0.1 map without GNU.sparse.numblocks before it: GNU tar "
         "refuses it")
    case("sparse-pax01-whole-file.tar",
         t.pax([("GNU.sparse.size", "4"), ("GNU.sparse.numblocks", "1"),
                ("GNU.sparse.map", "0,4")]) + t.file("sp", b"abcd") +
         t.end(), 0, why="one run over the whole file: a plain file to all")
    case("sparse-pax10-comment.tar",
         p10([], 9000, b"abcd", b"# map\n2\n0\n4\n9000\n0\n"), 3, INVALID,
         why="a '#' line in a 1.0 map: libarchive skips it, tarfile and "
         "GNU tar fail")


def gen_not_tar():
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        zi = zipfile.ZipInfo("../evil", date_time=(2025, 11, 29, 10, 0, 0))
        z.writestr(zi, b"owned\n")
    case("zip.tar", zbuf.getvalue(), 3, INVALID,
         why="only tar is read: a zip must not be parsed")

    def newc(name, data, mode=0o100644):
        name = name.encode() + b"\0"
        fields = [1, mode, 0, 0, 1, t.MTIME, len(data), 0, 0, 0, 0,
                  len(name), 0]
        h = b"070701" + b"".join(b"%08X" % f for f in fields) + name
        h += b"\0" * (-len(h) % 4)
        return h + data + b"\0" * (-len(data) % 4)

    cpio = newc("../evil", b"owned\n") + newc("TRAILER!!!", b"", 0)
    case("cpio.tar", cpio, 3, INVALID, why="a cpio archive is not a tar")
    case("mtree.tar",
         b"#mtree\n./passwd type=file contents=/etc/passwd\n", 3, INVALID,
         why="libarchive's mtree reader would open files named inside")


def zstd_zeros_after(tar, zeros):
    return t.zstd_frame([("raw", tar), ("rle", 0, zeros)])


def gz_stream(parts):
    """gzip of a sequence of (bytes, repeat) without holding it in memory"""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = []
    for data, repeat in parts:
        for _ in range(repeat):
            out.append(c.compress(data))
    out.append(c.flush())
    return b"".join(out)


def gen_bombs():
    chunk = b"\0" * (1 << 24)
    small = t.file("a", b"x") + t.end()
    # declared 100 GiB (base-256), 40 GiB of real zeros behind it
    case("bomb-declared-100g.tar.zst",
         zstd_zeros_after(t.header("bomb", size=t.base256(100 * GIB, 12)),
                          40 * GIB), 3,
         rej("bomb", "archive extracted size exceeds limit"),
         why="40 GiB of zeros in 1.3 MB: the size limit fires at the "
         "header, nothing is decompressed or spilled")
    case("bomb-declared-100g-pax.tar.gz",
         gz_stream([(t.pax([("size", str(100 * GIB))]) +
                     t.header("bomb", size=0), 1), (chunk, 16)]), 3,
         rej("bomb", "archive extracted size exceeds limit"),
         why="pax size 100 GiB before 256 MiB of zeros in gzip")
    case("bomb-after-end.tar.zst", zstd_zeros_after(small, 16 * GIB), 3,
         INVALID, why="16 GiB of zeros after the end marker: decoding "
         "stops 4 MiB past it, so the trailer cannot be reached")
    # at most 4 MiB (WSNAP_READER_MAX_TRAILING_BYTES) may follow the end
    # marker; GNU tar and tarfile pad to 10 KiB records
    for n, rc in ((4 << 20, 0), ((4 << 20) + 1, 3)):
        tag = "4m" if rc == 0 else "4m1"
        case("after-end-%s.tar.zst" % tag, zstd_zeros_after(small, n), rc,
             INVALID if rc else None,
             why="%d bytes of zeros after the end marker" % n)
        case("after-end-%s.tar.bz2" % tag, t.bz(small + b"\0" * n), rc,
             INVALID if rc else None)
    inner = gz_stream([(small, 1), (chunk, 256)])
    case("bomb-after-end.tar.gz.gz", t.gz(inner), 3, INVALID,
         why="nested gzip, 4 GiB of zeros in a few KiB: refused as nested "
         "compression, without inflating the inner layer")
    # five 1 GiB members, a 3 GiB total limit: the fourth is named
    members = []
    for i in range(1, 6):
        members += [("raw", t.header("f%d" % i, size=GIB)), ("rle", 0, GIB)]
    members.append(("raw", t.end()))
    case("bomb-total.tar.zst", t.zstd_frame(members), 3,
         rej("f4", "archive extracted size exceeds limit"),
         opts="--max-total-size 3221225472",
         why="the member that crosses the total is named")
    case("bomb-file.tar.zst",
         t.zstd_frame([("raw", t.header("big", size=GIB)), ("rle", 0, GIB),
                       ("raw", t.end())]), 3,
         rej("big", "file size exceeds limit"),
         opts="--max-file-size 1000000")


def gen_decoders():
    """decompressor memory limits (policy.md section 5)"""
    z = t.xz(BASE)
    case("xz-dict-128m.tar.xz", t.xz_set_dict(z, 30), 0,
         why="an LZMA2 dictionary of 128 MiB: within the xz memory limit")
    case("xz-dict-192m.tar.xz", t.xz_set_dict(z, 31), 3, INVALID,
         why="the next dictionary size, 192 MiB: beyond it")
    case("xz-dict-4g.tar.xz", t.xz_set_dict(z, 40), 3, INVALID,
         why="a 4 GiB dictionary (libarchive sets liblzma no limit)")
    case("zstd-window-128m.tar.zst",
         t.zstd_frame([("raw", BASE)], window=(17, 0)), 0,
         why="a zstd window of 128 MiB: libzstd's default limit")
    case("zstd-window-144m.tar.zst",
         t.zstd_frame([("raw", BASE)], window=(17, 1)), 3, INVALID,
         why="the next window size, 144 MiB: beyond it")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here,
                                                              "malformed")
    for gen in (gen_truncation, gen_compressed, gen_stream_ends, gen_ends,
                gen_checksums, gen_sizes, gen_nonfile_sizes, gen_pax,
                gen_extension_bytes, gen_gnu_long, gen_sparse, gen_not_tar,
                gen_bombs, gen_decoders):
        gen()
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    names = set()
    lines = ["# Generated by tests/data/make_malformed.py: do not edit.",
             "# FILE\tEXIT\tOPTIONS\tMESSAGE (first stderr line; - none)"]
    for name, data, rc, msg, opts, why in CASES:
        assert name not in names, name
        assert "\t" not in msg and "\n" not in msg
        names.add(name)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        if why:
            lines.append("# " + why)
        lines.append("%s\t%d\t%s\t%s" % (name, rc, opts, msg))
    with open(os.path.join(out, "EXPECTED"), "w") as f:
        f.write("\n".join(lines) + "\n")
    total = sum(len(c[1]) for c in CASES)
    print("%d archives, %d bytes" % (len(CASES), total))


if __name__ == "__main__":
    main()
