#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Big tar streams for the limit tests, generated on the fly.

    make_stream.py members COUNT        COUNT empty files f0000001... and
                                        the end marker, to stdout
    make_stream.py zeros-after-end GIB  a small valid archive, then GIB GiB
                                        of zeros, as one zstd frame of RLE
                                        blocks (~32 KiB per GiB), to stdout
    make_stream.py pax-comments COUNT KIB
                                        COUNT empty files c0000001... each
                                        after a pax header holding a
                                        'comment' of KIB KiB (plain tar)
    make_stream.py symlinks COUNT       COUNT symlinks in one directory of
                                        16 components of 240 bytes, each
                                        with a 4,000-byte target (plain)
    make_stream.py bzip2-declared COUNT a member 'bomb' declaring 100 GiB
                                        in bzip2, then COUNT bzip2 streams
                                        of 40 MiB of zeros (its data)
    make_stream.py bzip2-after-end COUNT
                                        a small valid archive in bzip2,
                                        then COUNT bzip2 streams of 40 MiB
                                        of zeros each (49 bytes apiece)
    make_stream.py xz-zeros PROPS MIB   one file of about MIB MiB of zeros
                                        in an xz block whose header
                                        declares LZMA2 dictionary byte
                                        PROPS (30: 128 MiB, 40: 4 GiB),
                                        ~180 bytes per MiB
    make_stream.py zstd-zeros EXP MANT MIB
                                        one file of MIB MiB of zeros in   
                                        a zstd frame whose window is
                                        (8 + MANT) << (EXP + 7) bytes
                                        (17 0: 128 MiB), RLE blocks

'members' writes 512 bytes per member (1.5 GB for 3,000,000) without
holding them: a header template whose checksum is adjusted per name. A
reader that stops early (closes the pipe) ends it quietly.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tarcraft as t  # noqa: E402


def members(count):
    tmpl = bytearray(t.header(b"f0000000", size=0))
    base = t.checksum(tmpl) - sum(b"f0000000")
    out = sys.stdout.buffer
    batch = []
    for i in range(1, count + 1):
        name = b"f%07d" % i
        h = tmpl[:]
        h[0:len(name)] = name
        h[t.CHKSUM:t.CHKSUM + 8] = b"%06o\0 " % (base + sum(name))
        batch.append(bytes(h))
        if len(batch) == 2048:
            out.write(b"".join(batch))
            batch = []
    out.write(b"".join(batch) + t.end())
    out.flush()


def zeros_after_end(gib):
    small = t.dir("d/") + t.file("d/a", b"hello\n") + t.end()
    sys.stdout.buffer.write(
        t.zstd_frame([("raw", small), ("rle", 0, gib << 30)]))


def pax_comments(count, kib):
    comment = "c" * (kib << 10)
    out = sys.stdout.buffer
    for i in range(1, count + 1):
        out.write(t.pax([("comment", comment)]) + t.file("c%07d" % i))
    out.write(t.end())
    out.flush()


def symlinks(count):
    parent = "/".join(["x" * 240] * 16)
    target = "/".join(["y" * 199] * 20)
    out = sys.stdout.buffer
    for i in range(1, count + 1):
        path = "%s/l%07d" % (parent, i)
        out.write(t.pax([("path", path), ("linkpath", target)]) +
                  t.symlink("l", "t"))
    out.write(t.end())
    out.flush()


def bzip2_declared(count):
    head = t.header("bomb", size=t.base256(100 << 30, 12))
    sys.stdout.buffer.write(t.bz(head) + t.bz(b"\0" * (40 << 20)) * count)


def bzip2_after_end(count):
    small = t.dir("d/") + t.file("d/a", b"hello\n") + t.end()
    zeros = t.bz(b"\0" * (40 << 20))
    sys.stdout.buffer.write(t.bz(small) + zeros * count)


def xz_zeros(props, mib):
    chunks = max(1, (mib << 20) // ((2 << 20) - 256))
    # the file's size is known once the stream is: build it twice
    _, total = t.xz_zeros_bomb(t.header("big"), chunks, props)
    size = (total - 512 - 2 * 512) // 512 * 512
    data, _ = t.xz_zeros_bomb(t.header("big", size=size), chunks, props)
    sys.stdout.buffer.write(data)


def zstd_zeros(exp, mant, mib):
    size = mib << 20
    sys.stdout.buffer.write(t.zstd_frame(
        [("raw", t.header("big", size=size)), ("rle", 0, size),
         ("raw", t.end())], window=(exp, mant)))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) == 3 and sys.argv[1] == "members":
        members(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "zeros-after-end":
        zeros_after_end(int(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "pax-comments":
        pax_comments(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "symlinks":
        symlinks(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "bzip2-declared":
        bzip2_declared(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "bzip2-after-end":
        bzip2_after_end(int(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "xz-zeros":
        xz_zeros(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "zstd-zeros":
        zstd_zeros(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
