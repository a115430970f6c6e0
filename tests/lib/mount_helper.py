#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helper of the mount end-to-end tests (tests/e2e/e2e_mount*.sh).

  make DIR               rich benign snapshot DIR/snap.tar (+ .tar.gz,
                         .tar.xz, .tar.bz2 made here; zstd by the caller)
  compare ARCHIVE MNT [LSJSON]
                         the mount against the archive's own members and
                         bytes (tarfile), and against 'wsnap ls --json'
  erofs MNT              every kind of write fails with EROFS
  stress ARCHIVE MNT SECONDS THREADS
                         threads read random ranges of random files, every
                         byte checked against the archive
  pid ARCHIVE MNT        the pid of the daemon serving MNT
  read-all ARCHIVE MNT [PATH...]
                         the named files (all when none) read back equal
  offset ARCHIVE PATH    the byte of ARCHIVE where PATH's data starts
  read-eio ARCHIVE MNT PATH...
                         each file reads as ARCHIVE's bytes (a copy of the
                         archive as mounted) until a read fails with EIO,
                         which must happen before its end

Exit status 0 when all is well; a message and 1 otherwise.
"""
import decimal
import errno
import io
import json
import os
import random
import stat
import subprocess
import sys
import tarfile
import threading
import time

# policy.md 7.6: every mode of the sanitizing table, name -> archived mode
MODES = {
    "m0755": 0o755, "m0644": 0o644, "m0444": 0o444, "m0000": 0o000,
    "m0777": 0o777, "m0655": 0o655, "m4755": 0o4755, "m2755": 0o2755,
    "m1755": 0o1755,
}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def sanitized(mode):
    m = mode & 0o755
    if not m & 0o100:
        m &= ~0o111
    return m | 0o600


def add(tf, name, kind="file", data=b"", mode=0o644, mtime="1700000000",
        target=None):
    ti = tarfile.TarInfo(name)
    ti.mode = mode
    ti.mtime = float(decimal.Decimal(mtime))
    ti.pax_headers = {"mtime": mtime}
    ti.uname = ti.gname = ""
    if kind == "dir":
        ti.type = tarfile.DIRTYPE
        tf.addfile(ti)
    elif kind == "symlink":
        ti.type = tarfile.SYMTYPE
        ti.linkname = target
        tf.addfile(ti)
    else:
        ti.size = len(data)
        tf.addfile(ti, _Reader(data))


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def read(self, n=-1):
        if n < 0:
            n = len(self.data) - self.pos
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out


def content(seed, size):
    return random.Random(seed).randbytes(size)


def make(dirname):
    path = os.path.join(dirname, "snap.tar")
    long_dir = "/".join(["long-component-%02d-" % i + "x" * 80
                         for i in range(4)])
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        add(tf, "./", "dir", mode=0o755, mtime="1700000000")
        add(tf, "./src/", "dir", mode=0o700, mtime="1700000001.5")
        add(tf, "./src/pkg/", "dir", mode=0o777, mtime="1700000002")
        add(tf, "./src/pkg/__init__.py", data=b"",
            mtime="1700000003.000000001")
        add(tf, "./src/pkg/main.py",
            data=b'print("hello from the snapshot")\n',
            mtime="1700000004.123456789")
        add(tf, "./src/pkg/deep/er/est/leaf.txt", data=b"leaf\n",
            mtime="1700000005.999999999")
        add(tf, "implicit/a/b/c.txt", data=b"implicit parents\n")
        add(tf, "bin/python3.11", data=b"#!/bin/sh\necho fake python\n",
            mode=0o755)
        add(tf, ".venv/bin/python3", "symlink",
            target="../../bin/python3.11")
        add(tf, ".venv/bin/python", "symlink", target="python3")
        add(tf, ".venv/lib64", "symlink", target="lib")
        add(tf, ".venv/lib/python3.11/site-packages/mod.py",
            data=b"x = 1\n")
        add(tf, ".venv/pyvenv.cfg", data=b"home = /usr/bin\n")
        add(tf, long_dir + "/" + "n" * 200 + ".txt", data=b"long name\n",
            mtime="1700000006.25")
        add(tf, "données/été.txt", data="accentué\n".encode())
        add(tf, "日本語/ファイル.txt", data="こんにちは\n".encode())
        add(tf, "emoji-\U0001F600.md", data=b"smile\n")
        add(tf, "space name/with 'quotes' and \"dq\".txt", data=b"q\n")
        add(tf, "empty/empty-file", data=b"")
        add(tf, "empty-dir/", "dir")
        add(tf, "big/multi.bin", data=content(1, 5 * 1024 * 1024 + 12345),
            mtime="1700000007.5")
        for i in range(40):
            add(tf, "many/f%03d.txt" % i, data=content(100 + i, 1 + i * 997))
        for name, mode in MODES.items():
            add(tf, "modes/" + name, data=name.encode(), mode=mode)
        add(tf, "modes/dir0700/", "dir", mode=0o700)
        add(tf, "modes/dir0700/inner", data=b"in\n", mode=0o600)
    with open(path, "rb") as f:
        raw = f.read()
    import bz2
    import gzip
    import lzma
    with open(path + ".gz", "wb") as f:
        f.write(gzip.compress(raw))
    with open(path + ".xz", "wb") as f:
        f.write(lzma.compress(raw))
    with open(path + ".bz2", "wb") as f:
        f.write(bz2.compress(raw))


def rel(name):
    parts = [p for p in name.split("/") if p not in ("", ".")]
    return "/".join(parts)


def open_tar(archive):
    """tarfile of any archive the tests make (tarfile has no zstd)"""
    if archive.endswith(".zst"):
        raw = subprocess.run(["zstd", "-dc", archive], check=True,
                             stdout=subprocess.PIPE).stdout
        return tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
    return tarfile.open(archive, "r:*")


def expected(archive):
    """path -> dict(type, mode, size, mtime (Decimal), target, data)"""
    out = {}
    with open_tar(archive) as tf:
        for m in tf.getmembers():
            p = rel(m.name)
            if p == "":
                continue
            mt = decimal.Decimal(m.pax_headers.get("mtime", str(m.mtime)))
            if m.isdir():
                e = dict(type="dir", mode=0o755, size=4096, mtime=mt)
            elif m.issym():
                e = dict(type="symlink", mode=0o777, size=len(
                    os.fsencode(m.linkname)), mtime=mt, target=m.linkname)
            else:
                e = dict(type="file", mode=sanitized(m.mode), size=m.size,
                         mtime=mt, data=tf.extractfile(m).read())
            out[p] = e
    for p in list(out):
        parts = p.split("/")
        for i in range(1, len(parts)):
            anc = "/".join(parts[:i])
            out.setdefault(anc, dict(type="dir", mode=0o755, size=4096,
                                     mtime=decimal.Decimal(0)))
    return out


def walk_mount(mnt):
    """path -> lstat of every node under mnt (root excluded)"""
    out = {}
    stack = [""]
    while stack:
        d = stack.pop()
        full = os.path.join(mnt, d) if d else mnt
        for name in os.listdir(full):
            p = d + "/" + name if d else name
            st = os.lstat(os.path.join(mnt, p))
            out[p] = st
            if stat.S_ISDIR(st.st_mode):
                stack.append(p)
    return out


def ns_to_dec(ns):
    return decimal.Decimal(ns) / decimal.Decimal(10 ** 9)


def compare(archive, mnt, lsjson=None):
    want = expected(archive)
    got = walk_mount(mnt)
    if set(want) != set(got):
        fail("paths differ: only in archive %s, only in mount %s" % (
            sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
    uid, gid = os.getuid(), os.getgid()
    if "WSNAP_EXPECT_UID" in os.environ:
        uid = int(os.environ["WSNAP_EXPECT_UID"])
        gid = int(os.environ["WSNAP_EXPECT_GID"])
    subdirs = {}
    for p, e in want.items():
        if e["type"] == "dir" and "/" in p:
            parent = p.rsplit("/", 1)[0]
            subdirs[parent] = subdirs.get(parent, 0) + 1
        elif e["type"] == "dir":
            subdirs[""] = subdirs.get("", 0) + 1
    for p, e in sorted(want.items()):
        st = got[p]
        kind = {stat.S_IFDIR: "dir", stat.S_IFREG: "file",
                stat.S_IFLNK: "symlink"}.get(stat.S_IFMT(st.st_mode))
        if kind != e["type"]:
            fail("%r: type %s, want %s" % (p, kind, e["type"]))
        if stat.S_IMODE(st.st_mode) != e["mode"]:
            fail("%r: mode %o, want %o" % (p, stat.S_IMODE(st.st_mode),
                                            e["mode"]))
        if st.st_size != e["size"]:
            fail("%r: size %d, want %d" % (p, st.st_size, e["size"]))
        if ns_to_dec(st.st_mtime_ns) != e["mtime"]:
            fail("%r: mtime %s, want %s" % (p, ns_to_dec(st.st_mtime_ns),
                                            e["mtime"]))
        if (st.st_uid, st.st_gid) != (uid, gid):
            fail("%r: owner %d:%d, want %d:%d" % (p, st.st_uid, st.st_gid,
                                                  uid, gid))
        if st.st_blocks != (st.st_size + 511) // 512:
            fail("%r: st_blocks %d for size %d" % (p, st.st_blocks,
                                                   st.st_size))
        if kind == "dir" and st.st_nlink != 2 + subdirs.get(p, 0):
            fail("%r: nlink %d, want %d" % (p, st.st_nlink,
                                            2 + subdirs.get(p, 0)))
        if kind == "symlink" and os.readlink(os.path.join(mnt, p)) != \
                e["target"]:
            fail("%r: target %r" % (p, os.readlink(os.path.join(mnt, p))))
        if kind == "file":
            with open(os.path.join(mnt, p), "rb") as f:
                data = f.read()
            if data != e["data"]:
                fail("%r: content differs (%d bytes, want %d)" % (
                    p, len(data), len(e["data"])))
    root = os.stat(mnt)
    if stat.S_IMODE(root.st_mode) != 0o755 or \
            root.st_nlink != 2 + subdirs.get("", 0):
        fail("root: mode %o nlink %d" % (stat.S_IMODE(root.st_mode),
                                        root.st_nlink))
    # readdir order and content of every directory
    for p, e in want.items():
        if e["type"] != "dir":
            continue
        names = sorted(os.listdir(os.path.join(mnt, p)))
        kids = sorted(q.rsplit("/", 1)[-1] for q in want
                      if q.rsplit("/", 1)[0] == p and "/" in q)
        if names != kids:
            fail("%r: listing %s, want %s" % (p, names[:5], kids[:5]))
    if lsjson:
        compare_ls(lsjson, mnt, got)
    print("compare: %d nodes ok" % len(want))


def compare_ls(lsjson, mnt, got):
    seen = []
    end = None
    with open(lsjson, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line, parse_float=decimal.Decimal)
            if end is not None:
                fail("ls --json has a record after its outcome")
            if "ok" in o:
                end = o
                continue
            p = o["path"]
            seen.append(p)
            if p not in got:
                fail("ls --json lists %r, the mount has no such node" % p)
            st = got[p]
            kind = {stat.S_IFDIR: "dir", stat.S_IFREG: "file",
                    stat.S_IFLNK: "symlink"}[stat.S_IFMT(st.st_mode)]
            if o["type"] != kind:
                fail("%r: ls type %s, mount %s" % (p, o["type"], kind))
            if o["mode"] != "%04o" % stat.S_IMODE(st.st_mode):
                fail("%r: ls mode %s, mount %04o" % (
                    p, o["mode"], stat.S_IMODE(st.st_mode)))
            if o["size"] != st.st_size:
                fail("%r: ls size %s, mount %d" % (p, o["size"], st.st_size))
            if decimal.Decimal(o["mtime"]) != ns_to_dec(st.st_mtime_ns):
                fail("%r: ls mtime %s, mount %s" % (
                    p, o["mtime"], ns_to_dec(st.st_mtime_ns)))
            if kind == "symlink" and \
                    o.get("target") != os.readlink(os.path.join(mnt, p)):
                fail("%r: ls target %r" % (p, o.get("target")))
            if kind != "symlink" and "target" in o:
                fail("%r: ls has a target for a %s" % (p, kind))
    if end is None or end["ok"] is not True or end["records"] != len(seen):
        fail("ls --json does not end in its outcome record: %r" % (end,))
    if seen != sorted(seen, key=os.fsencode):
        fail("ls --json is not sorted bytewise")
    if set(seen) != set(got):
        fail("ls --json and the mount differ: %s" % sorted(
            set(seen) ^ set(got))[:5])


def expect_errno(what, fn, want=errno.EROFS):
    try:
        fn()
    except OSError as e:
        if e.errno != want:
            fail("%s: %s, want %s" % (what, os.strerror(e.errno),
                                      os.strerror(want)))
        return
    fail("%s: succeeded on a read-only mount" % what)


def erofs(mnt):
    j = lambda *p: os.path.join(mnt, *p)
    f = j("src/pkg/main.py")
    expect_errno("open for writing", lambda: open(f, "r+b"))
    expect_errno("open for append", lambda: open(f, "ab"))
    expect_errno("truncate by open", lambda: os.open(f, os.O_WRONLY |
                                                     os.O_TRUNC))
    expect_errno("create", lambda: open(j("new.txt"), "wb"))
    expect_errno("create in a subdirectory", lambda: os.open(
        j("src/new"), os.O_CREAT | os.O_WRONLY, 0o644))
    expect_errno("truncate", lambda: os.truncate(f, 0))
    expect_errno("mkdir", lambda: os.mkdir(j("newdir")))
    expect_errno("rmdir", lambda: os.rmdir(j("empty-dir")))
    expect_errno("unlink", lambda: os.unlink(f))
    expect_errno("rename", lambda: os.rename(f, j("src/pkg/moved.py")))
    expect_errno("symlink", lambda: os.symlink("x", j("newlink")))
    expect_errno("link", lambda: os.link(f, j("hard")))
    expect_errno("mknod", lambda: os.mkfifo(j("fifo")))
    expect_errno("chmod", lambda: os.chmod(f, 0o600))
    expect_errno("chown", lambda: os.chown(f, 1, 1))
    expect_errno("utime", lambda: os.utime(f, (1, 1)))
    expect_errno("setxattr", lambda: os.setxattr(f, "user.x", b"1"))
    expect_errno("removexattr", lambda: os.removexattr(f, "user.x"))
    # reading attributes works and finds none
    if os.listxattr(f) != []:
        fail("listxattr: %r" % os.listxattr(f))
    # not supported at all (ENOSYS to the kernel, which then answers
    # every getxattr of the mount by itself: no round trip per ls -l entry)
    expect_errno("getxattr", lambda: os.getxattr(f, "user.x"),
                 errno.EOPNOTSUPP)
    st = os.statvfs(mnt)
    if not st.f_flag & os.ST_RDONLY:
        fail("statvfs: not read-only")
    if st.f_files < 50:
        fail("statvfs: f_files %d" % st.f_files)
    print("erofs: ok")


def stress(archive, mnt, seconds, nthreads):
    want = {p: e["data"] for p, e in expected(archive).items()
            if e["type"] == "file" and e["size"] > 0}
    paths = sorted(want)
    stop = time.monotonic() + seconds
    errors = []
    counts = [0] * nthreads

    def worker(k):
        rng = random.Random(k)
        fds = {}
        try:
            while time.monotonic() < stop and not errors:
                p = rng.choice(paths)
                data = want[p]
                if p not in fds:
                    if len(fds) >= 32:  # bounded: any number of files
                        os.close(fds.pop(next(iter(fds))))
                    fds[p] = os.open(os.path.join(mnt, p), os.O_RDONLY)
                off = rng.randrange(len(data))
                n = rng.choice([1, 511, 4096, 65536, 300000,
                                rng.randrange(1, 1 << 20)])
                got = os.pread(fds[p], n, off)
                if got != data[off:off + n]:
                    errors.append("%r: %d bytes at %d differ" % (p, n, off))
                counts[k] += 1
                if rng.random() < 0.05:  # reopen now and then
                    os.close(fds.pop(p))
        except OSError as e:
            errors.append("%s" % e)
        finally:
            for fd in fds.values():
                os.close(fd)

    threads = [threading.Thread(target=worker, args=(k,))
               for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("stress: " + errors[0])
    print("stress: %d threads, %d reads checked in %ss" % (
        nthreads, sum(counts), seconds))


def daemon_pid(archive, mnt):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")[:-1]
        except OSError:
            continue
        if len(argv) >= 4 and b"mount" in argv and \
                argv[-2:] == [os.fsencode(archive), os.fsencode(mnt)]:
            print(d)
            return
    fail("no daemon serves %s" % mnt)


def read_all(archive, mnt, names):
    want = expected(archive)
    names = names or [p for p, e in want.items() if e["type"] == "file"]
    for p in names:
        with open(os.path.join(mnt, p), "rb") as f:
            if f.read() != want[p]["data"]:
                fail("%r: content differs" % p)
    print("read-all: %d files ok" % len(names))


def data_offset(archive, name):
    with tarfile.open(archive, "r:") as tf:
        for m in tf.getmembers():
            if rel(m.name) == name:
                print(m.offset_data)
                return
    fail("no member %r" % name)


def read_eio(archive, mnt, names):
    want = expected(archive)
    for p in names:
        data = want[p]["data"]
        got = b""
        fd = os.open(os.path.join(mnt, p), os.O_RDONLY)
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError as e:
                    if e.errno != errno.EIO:
                        fail("%r: %s after %d bytes" % (p, e, len(got)))
                    break
                if not chunk:
                    fail("%r: read to its end (%d bytes), no EIO" %
                         (p, len(got)))
                if data[len(got):len(got) + len(chunk)] != chunk:
                    fail("%r: bytes at %d are not the snapshot's" %
                         (p, len(got)))
                got += chunk
        finally:
            os.close(fd)
    print("read-eio: %d files ok" % len(names))


def main(argv):
    cmd = argv[1]
    if cmd == "make":
        make(argv[2])
    elif cmd == "compare":
        compare(argv[2], argv[3], argv[4] if len(argv) > 4 else None)
    elif cmd == "erofs":
        erofs(argv[2])
    elif cmd == "stress":
        stress(argv[2], argv[3], float(argv[4]), int(argv[5]))
    elif cmd == "pid":
        daemon_pid(argv[2], argv[3])
    elif cmd == "read-all":
        read_all(argv[2], argv[3], argv[4:])
    elif cmd == "offset":
        data_offset(argv[2], argv[3])
    elif cmd == "read-eio":
        read_eio(argv[2], argv[3], argv[4:])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
