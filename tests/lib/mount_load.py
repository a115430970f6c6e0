#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Load on a wsnap mount, for tests/e2e/e2e_mount_load.sh.

    mount_load.py make DIR NFILES
        DIR/load.tar: NFILES files in 40 directories (sizes from 0 bytes to
        256 KiB, around block and page boundaries), 4 files of 8 MiB, a
        symlink per directory. Every file's bytes are a 4099-byte pattern
        derived from its path, repeated, so any range can be checked
        without keeping the data. DIR/load.json lists the members.
    mount_load.py load DIR MNT SECONDS PROCS THREADS PID
        PROCS processes of THREADS threads read the mount for SECONDS:
        whole files, random ranges through open descriptors, stat, listdir,
        readlink; every byte is checked; cached pages are dropped now and
        then (POSIX_FADV_DONTNEED) so that reads reach the daemon. Meanwhile the daemon's resident
        memory (PID) is sampled every half second. Fails (exit 1) on any
        error or difference, or when the daemon's memory grows in the second
        half of the run by more than max(8 MiB, 10%) over the first half.
    mount_load.py hold MNT PATH SECONDS
        A holder: opens MNT/PATH, chdirs into its directory, prints 'ready',
        then reads the file again through the open descriptor every 0.1 s
        for SECONDS (also after a lazy unmount), checking every byte.
    mount_load.py pid ARCHIVE MNT
        The pid of the 'wsnap mount ARCHIVE MNT' daemon.
"""

import hashlib
import json
import multiprocessing
import os
import random
import sys
import tarfile
import threading
import time

PERIOD = 4099  # prime: a shifted range never repeats the pattern's phase
MTIME = 1764410400
SIZES = [0, 1, 511, 512, 513, 4095, 4096, 4097, 8192, 65536, 65537]


def fail(msg):
    sys.stderr.write("mount_load: %s\n" % msg)
    sys.exit(1)


def pattern(path):
    seed = hashlib.sha256(path.encode()).digest()
    return (seed * (PERIOD // len(seed) + 1))[:PERIOD]


def expect(pat, off, n):
    start = off % PERIOD
    return (pat * ((start + n) // PERIOD + 1))[start:start + n]


class PatternReader:
    """a file object producing a pattern file's bytes, for tarfile"""

    def __init__(self, pat, size):
        self.pat, self.size, self.pos = pat, size, 0

    def read(self, n=-1):
        if n < 0 or n > self.size - self.pos:
            n = self.size - self.pos
        data = expect(self.pat, self.pos, n)
        self.pos += n
        return data


def make(dirname, nfiles):
    rng = random.Random(6)
    members = []
    per_dir = max(1, nfiles // 40)
    for i in range(nfiles):
        d = "d%02d" % (i // per_dir)
        size = rng.choice(SIZES) if i % 3 else rng.randrange(0, 256 << 10)
        members.append(("file", "%s/f%04d.bin" % (d, i), size))
    for i in range(4):
        members.append(("file", "big/b%d.bin" % i, (8 << 20) + i * 4097))
    dirs = sorted({m[1].rsplit("/", 1)[0] for m in members})
    links = [("symlink", d + "/link", "f%04d.bin" % (k * per_dir))
             for k, d in enumerate(dirs) if d != "big"]
    with tarfile.open(os.path.join(dirname, "load.tar"), "w",
                      format=tarfile.PAX_FORMAT) as tf:
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, MTIME
            tf.addfile(ti)
        for _, path, size in members:
            ti = tarfile.TarInfo(path)
            ti.size, ti.mode, ti.mtime = size, 0o644, MTIME
            tf.addfile(ti, PatternReader(pattern(path), size))
        for _, path, target in links:
            ti = tarfile.TarInfo(path)
            ti.type, ti.linkname, ti.mtime = tarfile.SYMTYPE, target, MTIME
            tf.addfile(ti)
    with open(os.path.join(dirname, "load.json"), "w") as f:
        json.dump({"files": [[p, s] for _, p, s in members],
                   "links": [[p, t] for _, p, t in links],
                   "dirs": dirs}, f)
    print("make: %d files, %d links, %d dirs" % (len(members), len(links),
                                                len(dirs)))


def worker(mnt, manifest, seconds, seed, out):
    """one thread's loop; appends (ops, bytes, errors) to out"""
    rng = random.Random(seed)
    files = manifest["files"]
    children = {}
    for p, _ in files:
        d, name = p.rsplit("/", 1)
        children.setdefault(d, set()).add(name)
    for p, _ in manifest["links"]:
        d, name = p.rsplit("/", 1)
        children[d].add(name)
    stop = time.monotonic() + seconds
    ops = nbytes = 0
    errors = []
    fds = {}
    try:
        while time.monotonic() < stop and not errors:
            op = rng.random()
            p, size = rng.choice(files)
            full = os.path.join(mnt, p)
            if op < 0.25:  # the whole file, sequentially
                pat, off = pattern(p), 0
                with open(full, "rb", buffering=0) as f:
                    # drop the file's cached pages now and then, so that
                    # reads reach the daemon, not only the page cache
                    if rng.random() < 0.5:
                        os.posix_fadvise(f.fileno(), 0, 0,
                                         os.POSIX_FADV_DONTNEED)
                    while True:
                        chunk = f.read(128 << 10)
                        if not chunk:
                            break
                        if chunk != expect(pat, off, len(chunk)):
                            errors.append("%s: bytes at %d differ" % (p, off))
                            break
                        off += len(chunk)
                        nbytes += len(chunk)
                if off != size and not errors:
                    errors.append("%s: read %d bytes, size %d" % (p, off, size))
            elif op < 0.80:  # random ranges through a kept descriptor
                if p not in fds:
                    if len(fds) >= 16:
                        os.close(fds.pop(next(iter(fds))))
                    fds[p] = os.open(full, os.O_RDONLY)
                if rng.random() < 0.1:
                    os.posix_fadvise(fds[p], 0, 0, os.POSIX_FADV_DONTNEED)
                off = rng.randrange(size + 1)
                n = rng.choice([1, 511, 4096, 65536, rng.randrange(1, 300000)])
                got = os.pread(fds[p], n, off)
                want = expect(pattern(p), off, max(0, min(n, size - off)))
                if got != want:
                    errors.append("%s: %d bytes at %d differ" % (p, n, off))
                nbytes += len(got)
            elif op < 0.90:
                st = os.stat(full)
                if st.st_size != size or st.st_mode & 0o7777 != 0o644:
                    errors.append("%s: stat %o %d" % (p, st.st_mode,
                                                      st.st_size))
            elif op < 0.97:
                d = p.rsplit("/", 1)[0]
                got = set(os.listdir(os.path.join(mnt, d)))
                if got != children[d]:
                    errors.append("%s: listing differs" % d)
            else:
                lp, target = rng.choice(manifest["links"])
                if os.readlink(os.path.join(mnt, lp)) != target:
                    errors.append("%s: readlink differs" % lp)
            ops += 1
    except OSError as e:
        errors.append("%s" % e)
    finally:
        for fd in fds.values():
            os.close(fd)
    out.append((ops, nbytes, errors))


def process_main(mnt, manifest, seconds, nthreads, seed, queue):
    out = []
    threads = [threading.Thread(target=worker,
                                args=(mnt, manifest, seconds,
                                      seed * 1000 + k, out))
               for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(out)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rchar(pid):
    """bytes the process has read through read/pread (/proc/PID/io)"""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def load(dirname, mnt, seconds, nprocs, nthreads, pid):
    with open(os.path.join(dirname, "load.json")) as f:
        manifest = json.load(f)
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=process_main,
                                     args=(mnt, manifest, seconds, nthreads,
                                           k, queue))
             for k in range(nprocs)]
    for p in procs:
        p.start()
    samples = []
    read_before = rchar(pid)
    start = time.monotonic()
    while any(p.is_alive() for p in procs) and \
            time.monotonic() - start < seconds + 60:
        samples.append((time.monotonic() - start, rss_kib(pid)))
        time.sleep(0.5)
    daemon_read = rchar(pid) - read_before
    results = []
    for _ in procs:
        results.extend(queue.get(timeout=60))
    for p in procs:
        p.join()
        if p.exitcode != 0:
            fail("a reader process exited %d" % p.exitcode)
    ops = sum(r[0] for r in results)
    nbytes = sum(r[1] for r in results)
    errors = [e for r in results for e in r[2]]
    first = [k for t, k in samples if t < seconds / 2]
    second = [k for t, k in samples if t >= seconds / 2]
    print("load: %d readers, %.0fs, %d operations, %d MiB checked, "
          "%d errors" % (nprocs * nthreads, seconds, ops, nbytes >> 20,
                         len(errors)))
    print("load: the daemon read %d MiB of the archive meanwhile" %
          (daemon_read >> 20))
    if first and second:
        print("load: daemon RSS first half max %d KiB, second half max %d "
              "KiB, end %d KiB" % (max(first), max(second), samples[-1][1]))
    if errors:
        fail("; ".join(errors[:5]))
    if daemon_read <= 0:
        fail("the daemon read nothing: the page cache served everything")
    if ops < nprocs * nthreads:
        fail("only %d operations" % ops)
    if not first or not second:
        fail("too few memory samples")
    allowed = max(8 << 10, max(first) // 10)
    if max(second) > max(first) + allowed:
        fail("daemon memory grew: %d KiB then %d KiB" % (max(first),
                                                         max(second)))


def hold(mnt, path, seconds):
    pat = pattern(path)
    full = os.path.join(mnt, path)
    fd = os.open(full, os.O_RDONLY)
    size = os.fstat(fd).st_size
    os.chdir(os.path.dirname(full))
    print("ready", flush=True)
    stop = time.monotonic() + seconds
    reads = 0
    while time.monotonic() < stop:
        data = os.pread(fd, size, 0)
        if data != expect(pat, 0, size):
            fail("holder: %s differs after %d reads" % (path, reads))
        reads += 1
        time.sleep(0.1)
    os.close(fd)
    print("held %s: %d reads ok" % (path, reads), flush=True)


def daemon_pid(archive, mnt):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")[:-1]
        except OSError:
            continue
        if b"mount" in argv and argv[-2:] == [os.fsencode(archive),
                                              os.fsencode(mnt)]:
            print(d)
            return
    fail("no daemon serves %s" % mnt)


def main(argv):
    if len(argv) == 4 and argv[1] == "make":
        make(argv[2], int(argv[3]))
    elif len(argv) == 8 and argv[1] == "load":
        load(argv[2], argv[3], float(argv[4]), int(argv[5]), int(argv[6]),
             int(argv[7]))
    elif len(argv) == 5 and argv[1] == "hold":
        hold(argv[2], argv[3], float(argv[4]))
    elif len(argv) == 4 and argv[1] == "pid":
        daemon_pid(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
