#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helper of the hydrate end-to-end tests (tests/e2e/e2e_hydrate*.sh).

  compare ARCHIVE WS [LSJSON]
                    every node of the workspace WS (an overlay) against the
                    archive's own members and bytes (tarfile): type, mode,
                    size, mtime, target, content, listings; and against
                    'wsnap ls --json' when LSJSON is given
  tree A B          two directory trees hold the same nodes: type, mode,
                    size, target, content, and mtime for non-directories
  pid WS            the pid of the snapshot daemon under the workspace WS
  many DIR N        a snapshot DIR/many.tar of N small files in N/100
                    directories (for the figures)
  touch100 WS N     changes 100 files of the workspace of a 'many' snapshot
                    of N files
  churn WS SEED N   N random changes through the workspace: files written,
                    appended, rewritten alike, truncated, chmod'ed, touched,
                    removed, renamed (also over others), made symlinks;
                    directories made, removed, renamed, replaced

Exit status 0 when all is well; a message and 1 otherwise.
"""
import os
import stat
import sys
import tarfile
import io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mount_helper as mh  # noqa: E402


def kind_of(st):
    return {stat.S_IFDIR: "dir", stat.S_IFREG: "file",
            stat.S_IFLNK: "symlink"}.get(stat.S_IFMT(st.st_mode), "other")


def compare(archive, ws, lsjson=None):
    want = mh.expected(archive)
    got = mh.walk_mount(ws)
    if set(want) != set(got):
        mh.fail("paths differ: only in archive %s, only in workspace %s" % (
            sorted(set(want) - set(got))[:5],
            sorted(set(got) - set(want))[:5]))
    for p, e in sorted(want.items()):
        st = got[p]
        kind = kind_of(st)
        if kind != e["type"]:
            mh.fail("%r: type %s, want %s" % (p, kind, e["type"]))
        if stat.S_IMODE(st.st_mode) != e["mode"]:
            mh.fail("%r: mode %o, want %o" % (p, stat.S_IMODE(st.st_mode),
                                               e["mode"]))
        if kind != "dir" and st.st_size != e["size"]:
            mh.fail("%r: size %d, want %d" % (p, st.st_size, e["size"]))
        if mh.ns_to_dec(st.st_mtime_ns) != e["mtime"]:
            mh.fail("%r: mtime %s, want %s" % (
                p, mh.ns_to_dec(st.st_mtime_ns), e["mtime"]))
        if kind == "symlink" and \
                os.readlink(os.path.join(ws, p)) != e["target"]:
            mh.fail("%r: target %r" % (p, os.readlink(os.path.join(ws, p))))
        if kind == "file":
            with open(os.path.join(ws, p), "rb") as f:
                if f.read() != e["data"]:
                    mh.fail("%r: content differs" % p)
    for p, e in want.items():
        if e["type"] != "dir":
            continue
        names = sorted(os.listdir(os.path.join(ws, p)))
        kids = sorted(q.rsplit("/", 1)[-1] for q in want
                      if "/" in q and q.rsplit("/", 1)[0] == p)
        if names != kids:
            mh.fail("%r: listing %s, want %s" % (p, names[:5], kids[:5]))
    if lsjson:
        mh.compare_ls(lsjson, ws, got)
    print("compare: %d nodes ok" % len(want))


def tree(a, b):
    ga, gb = mh.walk_mount(a), mh.walk_mount(b)
    if set(ga) != set(gb):
        mh.fail("trees differ: only in %s %s, only in %s %s" % (
            a, sorted(set(ga) - set(gb))[:5], b,
            sorted(set(gb) - set(ga))[:5]))
    for p in sorted(ga):
        sa, sb = ga[p], gb[p]
        ka, kb = kind_of(sa), kind_of(sb)
        if ka != kb:
            mh.fail("%r: %s in %s, %s in %s" % (p, ka, a, kb, b))
        if stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode) and \
                ka != "symlink":
            mh.fail("%r: mode %o, %o" % (p, stat.S_IMODE(sa.st_mode),
                                         stat.S_IMODE(sb.st_mode)))
        if ka == "dir":
            continue
        if sa.st_size != sb.st_size:
            mh.fail("%r: size %d, %d" % (p, sa.st_size, sb.st_size))
        if sa.st_mtime_ns != sb.st_mtime_ns:
            mh.fail("%r: mtime %d, %d" % (p, sa.st_mtime_ns, sb.st_mtime_ns))
        if ka == "symlink":
            if os.readlink(os.path.join(a, p)) != \
                    os.readlink(os.path.join(b, p)):
                mh.fail("%r: targets differ" % p)
        else:
            with open(os.path.join(a, p), "rb") as fa, \
                    open(os.path.join(b, p), "rb") as fb:
                if fa.read() != fb.read():
                    mh.fail("%r: content differs" % p)
    print("tree: %d nodes equal" % len(ga))


def daemon_pid(ws):
    """the snapshot daemon is a copy of 'wsnap hydrate ... WS'"""
    ws = os.fsencode(ws)
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")[:-1]
        except OSError:
            continue
        if len(argv) >= 3 and b"hydrate" in argv and argv[-1] == ws and \
                os.path.basename(argv[0]).startswith(b"wsnap"):
            print(d)
            return
    mh.fail("no snapshot daemon under %s" % ws)


def many(dirname, n):
    """N files of 0..255 bytes in N/100 directories, pax, one record"""
    path = os.path.join(dirname, "many.tar")
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(n):
            ti = tarfile.TarInfo("d%04d/f%06d.txt" % (i // 100, i))
            data = (b"%d\n" % i) * (i % 16)
            ti.size = len(data)
            ti.mtime = 1700000000
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
    print(path)


def touch100(ws, n):
    """appends to 100 files spread over the tree"""
    for i in range(100):
        j = i * (n // 100)
        p = os.path.join(ws, "d%04d/f%06d.txt" % (j // 100, j))
        if not os.path.exists(p):
            mh.fail("%s: no such file" % p)
        with open(p, "ab") as f:
            f.write(b"changed\n")


def _nodes(ws):
    files, dirs = [], []
    for root, ds, fs in os.walk(ws):
        rel = os.path.relpath(root, ws)
        rel = "" if rel == "." else rel
        for d in ds:
            p = os.path.join(rel, d)
            (files if os.path.islink(os.path.join(ws, p)) else dirs).append(p)
        for f in fs:
            files.append(os.path.join(rel, f))
    return sorted(files), sorted(dirs)


def churn(ws, seed, n):
    """random changes; each kind of overlay bookkeeping gets exercised"""
    import random
    import shutil
    rnd = random.Random(seed)
    done = 0
    while done < n:
        files, dirs = _nodes(ws)
        regular = [f for f in files
                   if not os.path.islink(os.path.join(ws, f))]
        # removing big trees would soon leave nothing of the lower layer
        small = [d for d in dirs
                 if sum(len(x) + len(y) for _, x, y in
                        os.walk(os.path.join(ws, d))) <= 3]
        op = rnd.randrange(16)
        pick_dir = rnd.choice([""] + dirs)
        new = os.path.join(pick_dir, "n%d-%d" % (seed, done))
        full = lambda p: os.path.join(ws, p)  # noqa: E731
        try:
            if op == 0:
                with open(full(new), "wb") as f:
                    f.write(rnd.randbytes(rnd.randrange(0, 3000)))
            elif op == 1 and regular:
                with open(full(rnd.choice(regular)), "ab") as f:
                    f.write(b"+")
            elif op == 2 and regular:
                p = full(rnd.choice(regular))
                with open(p, "rb") as f:
                    data = f.read()
                with open(p, "wb") as f:
                    f.write(data)
            elif op == 3 and regular:
                os.truncate(full(rnd.choice(regular)), rnd.randrange(0, 10))
            elif op == 4 and regular:
                os.chmod(full(rnd.choice(regular)),
                         rnd.choice([0o600, 0o644, 0o700, 0o755, 0o400]))
            elif op == 5 and files:
                os.utime(full(rnd.choice(files)), (1600000000, 1600000000),
                         follow_symlinks=False)
            elif op == 6 and files:
                os.unlink(full(rnd.choice(files)))
            elif op == 7 and small:
                shutil.rmtree(full(rnd.choice(small)))
            elif op == 8:
                os.mkdir(full(new))
            elif op == 9 and files:
                src = rnd.choice(files)
                dst = rnd.choice([new] + files)
                os.rename(full(src), full(dst))
            elif op == 10 and dirs:
                src = rnd.choice(dirs)
                dst = os.path.join(rnd.choice([""] + dirs),
                                   "r%d-%d" % (seed, done))
                if (dst + "/").startswith(src + "/"):
                    continue
                try:
                    os.rename(full(src), full(dst))
                except OSError:
                    # fuse-overlayfs: EXDEV for a directory of the lower
                    # layer; tools copy then
                    shutil.move(full(src), full(dst))
            elif op == 11 and regular:
                p = rnd.choice(regular)
                os.unlink(full(p))
                target = os.path.relpath(
                    rnd.choice(regular or [p]), os.path.dirname(p) or ".")
                os.symlink(target, full(p))
            elif op == 12 and small:
                d = rnd.choice(small)
                shutil.rmtree(full(d))
                with open(full(d), "wb") as f:
                    f.write(b"was a directory\n")
            elif op == 13 and regular:
                p = rnd.choice(regular)
                os.unlink(full(p))
                os.mkdir(full(p))
                with open(full(os.path.join(p, "inner")), "wb") as f:
                    f.write(b"inner\n")
            elif op == 14 and small:
                d = rnd.choice(small)
                shutil.rmtree(full(d))
                os.mkdir(full(d))
                with open(full(os.path.join(d, "again")), "wb") as f:
                    f.write(b"again\n")
            elif op == 15 and dirs:
                os.chmod(full(rnd.choice(dirs)), rnd.choice([0o700, 0o755]))
            else:
                continue
        except FileNotFoundError:
            continue
        done += 1
    # symlinks moved to a shallower directory may now leave the snapshot:
    # the policy would reject the whole workspace, alike on both paths;
    # they go, so that the next rounds compare something
    files, _ = _nodes(ws)
    for p in files:
        if os.path.islink(os.path.join(ws, p)):
            t = os.path.normpath(os.path.join(os.path.dirname(p),
                                              os.readlink(os.path.join(ws,
                                                                       p))))
            if t == ".." or t.startswith("../") or os.path.isabs(t):
                os.unlink(os.path.join(ws, p))
    print("churn: %d changes" % done)


def main(argv):
    cmd = argv[1]
    if cmd == "compare":
        compare(argv[2], argv[3], argv[4] if len(argv) > 4 else None)
    elif cmd == "tree":
        tree(argv[2], argv[3])
    elif cmd == "pid":
        daemon_pid(argv[2])
    elif cmd == "many":
        many(argv[2], int(argv[3]))
    elif cmd == "churn":
        churn(argv[2], int(argv[3]), int(argv[4]))
    elif cmd == "touch100":
        touch100(argv[2], int(argv[3]))
    else:
        mh.fail("unknown command %r" % cmd)


if __name__ == "__main__":
    main(sys.argv)
