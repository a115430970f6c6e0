#!/usr/bin/env python3
"""Big tar streams for the limit tests, generated on the fly.

    make_stream.py members COUNT        COUNT empty files f0000001... and
                                        the end marker, to stdout
    make_stream.py zeros-after-end GIB  a small valid archive, then GIB GiB
                                        of zeros, as one zstd frame of RLE
                                        blocks (~32 KiB per GiB), to stdout

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


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) == 3 and sys.argv[1] == "members":
        members(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "zeros-after-end":
        zeros_after_end(int(sys.argv[2]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
