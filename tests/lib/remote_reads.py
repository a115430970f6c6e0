#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads through a mount of a remote snapshot (tests/e2e/e2e_remote.sh).

  remote_reads.py make DIR
      DIR/faults.tar: 34 members f01..f34 of 1.2 MiB (+ a little) of
      distinct bytes (a test reads every third, so that no read-ahead of
      one holds the next), and DIR/faults-v2.tar laid out alike (the same
      names, sizes and offsets) with other bytes: the object a server
      swaps in;
      DIR/many.tar: 400 small files in 8 directories; DIR/other.tar: the
      snapshot DIR/snap.tar with the bytes of every file changed (sizes
      kept)
  remote_reads.py check MODE ARCHIVE MNT PATH...
      reads each PATH of the mount whole and compares it with ARCHIVE's
      member (tarfile). MODE ok: every byte must come, and be right.
      MODE eio: each read must fail with EIO, after right bytes only.
      MODE either: each is one or the other; prints how many failed.
      Never a wrong byte, never another error.
  remote_reads.py together ARCHIVE MNT PATH THREADS STEP
      THREADS threads, released at once, each read 4 KiB of PATH at
      offset i * STEP (i = 0..THREADS-1), every byte checked: reads of
      one chunk that arrive together.

Exit status 0 when all is well; a message and 1 otherwise.
"""
import errno
import io
import os
import random
import sys
import tarfile


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def add(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o644
    tf.addfile(ti, io.BytesIO(data))


def make(d):
    for name, seed in (("faults.tar", 1), ("faults-v2.tar", 2)):
        r = random.Random(seed)
        with tarfile.open(os.path.join(d, name), "w",
                          format=tarfile.PAX_FORMAT) as tf:
            for i in range(1, 35):
                add(tf, "f%02d" % i, r.randbytes((1 << 20) + (200 << 10) +
                                                 1000 * i))
    r = random.Random(3)
    with tarfile.open(os.path.join(d, "many.tar"), "w",
                      format=tarfile.PAX_FORMAT) as tf:
        for i in range(400):
            add(tf, "d%d/f%03d.txt" % (i % 8, i),
                r.randbytes(200 + r.randrange(6000)))
    with tarfile.open(os.path.join(d, "snap.tar")) as src, \
            tarfile.open(os.path.join(d, "other.tar"), "w",
                         format=tarfile.PAX_FORMAT) as dst:
        for m in src.getmembers():
            if m.isfile():
                data = src.extractfile(m).read()
                dst.addfile(m, io.BytesIO(bytes(b ^ 0x5A for b in data)))
            else:
                dst.addfile(m)


def members(archive):
    out = {}
    with tarfile.open(archive) as tf:
        for m in tf.getmembers():
            if m.isfile():
                out[m.name.lstrip("./")] = tf.extractfile(m).read()
    return out


def check(mode, archive, mnt, paths):
    want = members(archive)
    failed = 0
    for p in paths:
        if p not in want:
            fail("%s is not a file of %s" % (p, archive))
        got = bytearray()
        err = None
        try:
            with open(os.path.join(mnt, p), "rb", buffering=0) as f:
                while True:
                    b = f.read(65536)
                    if not b:
                        break
                    got += b
        except OSError as e:
            err = e
        if bytes(got) != want[p][:len(got)]:
            fail("%s: wrong bytes at %d of %d" % (
                p, next(i for i in range(len(got)) if got[i] != want[p][i]),
                len(want[p])))
        if err is not None and err.errno != errno.EIO:
            fail("%s: %s (want EIO or the bytes)" % (p, err))
        if err is None and len(got) != len(want[p]):
            fail("%s: %d bytes, want %d" % (p, len(got), len(want[p])))
        if err is None and mode == "eio":
            fail("%s: read whole, want EIO" % p)
        if err is not None and mode == "ok":
            fail("%s: EIO after %d of %d bytes" % (p, len(got),
                                                     len(want[p])))
        failed += err is not None
    if mode == "either":
        print(failed)


def together(archive, mnt, path, threads, step):
    import threading
    want = members(archive)[path]
    go = threading.Barrier(threads)
    errors = []

    def one(i):
        off = i * step
        try:
            with open(os.path.join(mnt, path), "rb", buffering=0) as f:
                go.wait()
                got = os.pread(f.fileno(), 4096, off)
            if got != want[off:off + 4096]:
                errors.append("%s: wrong bytes at %d" % (path, off))
        except OSError as e:
            errors.append("%s at %d: %s" % (path, off, e))

    ts = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        fail("; ".join(errors))


def main(argv):
    if len(argv) == 3 and argv[1] == "make":
        make(argv[2])
    elif len(argv) >= 6 and argv[1] == "check" and \
            argv[2] in ("ok", "eio", "either"):
        check(argv[2], argv[3], argv[4], argv[5:])
    elif len(argv) == 7 and argv[1] == "together":
        together(argv[2], argv[3], argv[4], int(argv[5]), int(argv[6]))
    else:
        fail("usage: see the docstring")


if __name__ == "__main__":
    main(sys.argv)
