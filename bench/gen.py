#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Deterministic synthetic workspaces for bench/run.sh.

Every tree is a pure function of its parameters (content, modes and
integer mtimes), so two runs, or two machines, benchmark the same bytes.

  gen.py small DIR --dirs N --files M --max-size B
      N directories d000.. of M files f0000.. each, sizes 0..B-1 bytes of
      text, every 50th file executable.
  gen.py venv DIR --packages N
      a virtualenv-like tree: bin/ with python -> python3 ->
      /usr/bin/python3 (external), lib64 -> lib, site-packages with
      modules, __pycache__, dist-info, a few native .so files and internal
      symlinks.
  gen.py big FILE --mib N
      one file of N MiB of text-like bytes (6 bits of entropy a byte, so
      gzip gets about 25%: neither all zeros nor incompressible).
  gen.py tar FILE --dirs N --files M --max-size B
      the tree of 'small' with the same names, modes, sizes and mtimes,
      written straight into an uncompressed GNU tar (sorted, owner 0),
      with no tree on disk: 1,000,000 members need no million inodes.
      --dirs 0 puts M files at the top level (one large directory).
  gen.py modify DIR --dirs N --files M --count K
      rewrites K files of a small tree (one every N/K directories, half
      with the same size and different bytes, half with a different size)
      through a temporary file and rename, so a hardlinked copy (cp -al)
      keeps its originals; prints the changed paths.
"""
import argparse
import os
import random
import sys

MTIME = 1767225600  # 2026-01-01 00:00:00 UTC
CHANGED_MTIME = MTIME + 86400
POOL_SIZE = 1 << 20
ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n_("


def text_pool(seed, size=POOL_SIZE):
    rnd = random.Random(seed)
    raw = rnd.randbytes(size)
    table = bytes(ALPHABET[i % len(ALPHABET)] for i in range(256))
    return raw.translate(table)


def write_file(path, data, mode, mtime):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    os.utime(path, (mtime, mtime))


def small_name(d, f):
    return "d%03d/f%04d.txt" % (d, f)


def small_size(d, f, max_size):
    # A cheap deterministic hash: sizes spread over 0..max_size-1.
    return ((d * 7919 + f * 104729) * 2654435761 >> 7) % max_size


def gen_small(args):
    pool = text_pool(1)
    os.makedirs(args.dir, exist_ok=True)
    for d in range(args.dirs):
        os.makedirs(os.path.join(args.dir, "d%03d" % d), exist_ok=True)
        for f in range(args.files):
            size = small_size(d, f, args.max_size)
            off = (d * args.files + f) * 4099 % (POOL_SIZE - size)
            mode = 0o755 if (d * args.files + f) % 50 == 0 else 0o644
            write_file(os.path.join(args.dir, small_name(d, f)),
                       pool[off:off + size], mode, MTIME + f)
        os.utime(os.path.join(args.dir, "d%03d" % d), (MTIME, MTIME))
    os.utime(args.dir, (MTIME, MTIME))


def gen_tar(args):
    import io
    import tarfile

    pool = text_pool(1)

    def info(name, kind, size, mode, mtime):
        ti = tarfile.TarInfo(name)
        ti.type, ti.size, ti.mode, ti.mtime = kind, size, mode, mtime
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = "root"
        return ti

    tmp = args.file + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as t:
        t.addfile(info(".", tarfile.DIRTYPE, 0, 0o755, MTIME))
        dirs = [None] if args.dirs == 0 else range(args.dirs)
        for d in dirs:
            top = "." if d is None else "./d%03d" % d
            if d is not None:
                t.addfile(info(top, tarfile.DIRTYPE, 0, 0o755, MTIME))
            dd = 0 if d is None else d
            for f in range(args.files):
                size = small_size(dd, f, args.max_size)
                off = (dd * args.files + f) * 4099 % (POOL_SIZE - size)
                mode = 0o755 if (dd * args.files + f) % 50 == 0 else 0o644
                name = "%s/f%0*d.txt" % (top, 6 if d is None else 4, f)
                t.addfile(info(name, tarfile.REGTYPE, size, mode, MTIME + f),
                          io.BytesIO(pool[off:off + size]))
    os.replace(tmp, args.file)


def changed_files(dirs, files, count):
    """K distinct files spread evenly over the directories."""
    out = []
    seen = set()
    i = 0
    while len(out) < min(count, dirs * files):
        d = i * dirs // count if count <= dirs else i % dirs
        f = (i * 37 + i // dirs * 101) % files
        name = small_name(d, f)
        if name not in seen:
            seen.add(name)
            out.append(name)
        i += 1
    return out


def gen_modify(args):
    pool = text_pool(2)
    names = changed_files(args.dirs, args.files, args.count)
    for i, name in enumerate(names):
        path = os.path.join(args.dir, name)
        with open(path, "rb") as f:
            old = f.read()
        if i % 2 == 0 and old:
            # Same size, different bytes: only a content comparison sees it.
            new = bytes(b ^ 0x20 for b in old[:16]) + old[16:]
        else:
            new = old + pool[i * 97:i * 97 + 100]
        tmp = path + ".bench-tmp"
        write_file(tmp, new, 0o644, CHANGED_MTIME)
        os.rename(tmp, path)
        print(name)


def gen_venv(args):
    root = args.dir
    pool = text_pool(3)
    rnd = random.Random(4)
    sp = os.path.join(root, "lib", "python3.11", "site-packages")
    for d in (os.path.join(root, "bin"), os.path.join(root, "include"), sp):
        os.makedirs(d, exist_ok=True)
    write_file(os.path.join(root, "pyvenv.cfg"),
               b"home = /usr/bin\ninclude-system-site-packages = false\n"
               b"version = 3.11.2\n", 0o644, MTIME)
    for name in ("activate", "activate.csh", "activate.fish", "pip",
                 "pip3", "pip3.11"):
        write_file(os.path.join(root, "bin", name),
                   b"#!/bin/sh\n" + pool[:rnd.randrange(200, 3000)],
                   0o755, MTIME)
    os.symlink("/usr/bin/python3", os.path.join(root, "bin", "python3"))
    os.symlink("python3", os.path.join(root, "bin", "python"))
    os.symlink("python3", os.path.join(root, "bin", "python3.11"))
    os.symlink("lib", os.path.join(root, "lib64"))
    for p in range(args.packages):
        pkg = "pkg%03d" % p
        nmod = rnd.randrange(10, 120)
        subs = ["", "core", "utils", "_vendor"][:rnd.randrange(1, 5)]
        for s in subs:
            d = os.path.join(sp, pkg, s)
            os.makedirs(os.path.join(d, "__pycache__"), exist_ok=True)
            for m in range(nmod // len(subs)):
                size = min(int(rnd.expovariate(1 / 6000)), 200000)
                off = rnd.randrange(0, POOL_SIZE - size)
                mod = "mod%03d" % m
                write_file(os.path.join(d, mod + ".py"),
                           pool[off:off + size], 0o644, MTIME)
                write_file(os.path.join(d, "__pycache__",
                                        mod + ".cpython-311.pyc"),
                           pool[off // 2:off // 2 + size // 2 + 16],
                           0o644, MTIME)
            write_file(os.path.join(d, "__init__.py"), b"", 0o644, MTIME)
            os.utime(os.path.join(d, "__pycache__"), (MTIME, MTIME))
        if p % 10 == 0:
            size = rnd.randrange(1 << 20, 4 << 20)
            write_file(os.path.join(sp, pkg, "_native.cpython-311.so"),
                       rnd.randbytes(size), 0o755, MTIME)
        if p % 7 == 0:
            data = os.path.join(sp, pkg, "data")
            os.makedirs(os.path.join(data, "v1"), exist_ok=True)
            write_file(os.path.join(data, "v1", "table.csv"),
                       pool[:4000], 0o644, MTIME)
            os.symlink("v1", os.path.join(data, "latest"))
        info = os.path.join(sp, pkg + "-1.0.dist-info")
        os.makedirs(info, exist_ok=True)
        for name in ("METADATA", "RECORD", "WHEEL", "INSTALLER"):
            write_file(os.path.join(info, name), pool[:rnd.randrange(20, 5000)],
                       0o644, MTIME)
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                os.utime(path, (MTIME, MTIME), follow_symlinks=False)
        os.utime(dirpath, (MTIME, MTIME), follow_symlinks=False)


def gen_big(args):
    pool = text_pool(5, 16 << 20)
    total = args.mib << 20
    with open(args.file, "wb") as f:
        done = 0
        i = 0
        while done < total:
            # Rotate through the pool so consecutive MiBs differ.
            off = (i * 1048573) % (len(pool) - (1 << 20))
            n = min(1 << 20, total - done)
            f.write(pool[off:off + n])
            done += n
            i += 1
    os.utime(args.file, (MTIME, MTIME))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("small")
    p.add_argument("dir")
    p.add_argument("--dirs", type=int, default=100)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--max-size", type=int, default=1024)
    p = sub.add_parser("tar")
    p.add_argument("file")
    p.add_argument("--dirs", type=int, default=1000)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--max-size", type=int, default=512)
    p = sub.add_parser("modify")
    p.add_argument("dir")
    p.add_argument("--dirs", type=int, default=100)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--count", type=int, default=100)
    p = sub.add_parser("venv")
    p.add_argument("dir")
    p.add_argument("--packages", type=int, default=60)
    p = sub.add_parser("big")
    p.add_argument("file")
    p.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    {"small": gen_small, "modify": gen_modify, "venv": gen_venv,
     "big": gen_big, "tar": gen_tar}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
