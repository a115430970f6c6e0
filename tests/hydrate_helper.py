#!/usr/bin/env python3
"""Helper of the hydrate end-to-end tests (tests/e2e_hydrate*.sh).

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
    elif cmd == "touch100":
        touch100(argv[2], int(argv[3]))
    else:
        mh.fail("unknown command %r" % cmd)


if __name__ == "__main__":
    main(sys.argv)
