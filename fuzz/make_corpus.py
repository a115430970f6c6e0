#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the seed corpus of the fuzzers: fuzz/corpus/seed/.

    python3 fuzz/make_corpus.py [OUTDIR]

Small valid archives of every tar flavour and compression, one archive per
policy rule (the case that triggers it), and the small files of the
malformed corpus (tests/data/malformed). Seeds that need options carry the
fuzzers' configuration prefix: "WSNP" and 12 bytes (see fuzz_common.h,
fuzz_input_parse); the configured paths are indices into
fuzz_paths[], read from fuzz_common.c so that both stay in step.

Seeds have no .tar suffix (the repository ignores *.tar outside
tests/data). Deterministic: running it again gives the same files.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data"))
import tarcraft as t  # noqa: E402

MAX_SEED = 16 << 10
CASES = {}


def seed(name, data):
    assert name not in CASES, name
    assert len(data) <= MAX_SEED, (name, len(data))
    CASES[name] = bytes(data)


def fuzz_paths():
    src = open(os.path.join(HERE, "fuzz_common.c")).read()
    body = re.search(r"fuzz_paths\[\] = \{(.*?)\};", src, re.S).group(1)
    return re.findall(r'"((?:[^"\\]|\\.)*)"', body)


PATHS = fuzz_paths()
FLAGS = {"allow_external": 1, "no_symlinks": 2, "root_name": 4,
         "strip_prefix": 8, "keep_data": 16, "pipe": 32, "compare": 64}


def cfg(flags=(), skip=None, reject=None, rsym=None, root=None, strip=None,
        members=0, total=0, file_size=0, path_len=0, depth=0, extra=0):
    """the configuration prefix; limits are the fuzz_limit() byte values
    (0 default, v < 128 means (v - 1) * scale)"""
    c = bytearray(12)
    for f in flags:
        c[0] |= FLAGS[f]

    def sel(path):
        if path is None:
            return 0
        return 1 | (PATHS.index(path) << 2)

    c[1], c[2], c[3] = sel(skip), sel(reject), sel(rsym)
    if root is not None:
        c[0] |= FLAGS["root_name"]
        c[4] = PATHS.index(root)
    if strip is not None:
        c[0] |= FLAGS["strip_prefix"]
        c[5] = PATHS.index(strip)
    c[6], c[7], c[8], c[9], c[10] = members, total, file_size, path_len, depth
    c[11] = extra
    return b"WSNP" + bytes(c)


def arc(*members):
    return b"".join(members) + t.end()


def gen_valid():
    f, d, s = t.file, t.dir, t.symlink
    tree = arc(d("./"), d("./d/"), f("./d/a.txt", b"hello\n", mode=0o755),
               s("./d/link", "a.txt"), f("./top", b"x" * 600))
    seed("ok-ustar", tree)
    seed("ok-v7", arc(f("v7file", b"abc", magic=b"\0" * 8)))
    seed("ok-gnu-long",
         arc(t.gnu_long("d/" + "l" * 120) + f("short", b"L", magic=t.GNU_MAGIC),
             t.gnu_long("t" * 110, b"K") + s("lnk", "x", magic=t.GNU_MAGIC)))
    seed("ok-pax",
         arc(t.pax([("path", "p/" + "q" * 130), ("mtime", "1764410400.5"),
                    ("linkpath", "ignored")]) + f("short", b"P" * 10),
             t.pax([("size", "3")]) + t.header("sz", size=0) + t.pad(b"abc")))
    seed("ok-pax-global",
         arc(t.pax([("mtime", "1")], typeflag=b"g"), f("a", b"1"),
             f("b", b"2")))
    seed("ok-b256", arc(t.header("five", size=t.base256(5, 12)) +
                        t.pad(b"hello"),
                        f("old", b"x", mtime=t.base256(-5, 12))))
    seed("ok-prefix", arc(f("name", b"1", prefix="pre/fix")))
    # sparse maps as GNU tar writes them: every run with data but the
    # last fills whole blocks, a trailing hole ends in a run of length 0
    h512 = b"h" * 512
    seed("ok-sparse-gnu",
         arc(t.gnu_sparse("sp", [(0, 512), (10000, 3), (20000, 0)], 20000,
                          h512 + b"abc")))
    seed("ok-sparse-gnu-ext",
         arc(t.gnu_sparse("sp", [(i * 1000, 512) for i in range(25)] +
                          [(i * 1000, 0) for i in range(25, 30)] +
                          [(40000, 0)], 40000, h512 * 25)))
    seed("ok-sparse-pax10",
         arc(t.pax_sparse_10("sp", [(0, 512), (8192, 4), (9000, 0)], 9000,
                             h512 + b"wxyz")))
    seed("ok-sparse-pax01",
         arc(t.pax_sparse_01("sp", [(0, 512), (8192, 4), (9000, 0)], 9000,
                             h512 + b"wxyz")))
    seed("ok-sparse-pax00",
         arc(t.pax([("GNU.sparse.size", "9000"),
                    ("GNU.sparse.numblocks", "3"),
                    ("GNU.sparse.offset", "0"),
                    ("GNU.sparse.numbytes", "512"),
                    ("GNU.sparse.offset", "8192"),
                    ("GNU.sparse.numbytes", "4"),
                    ("GNU.sparse.offset", "9000"),
                    ("GNU.sparse.numbytes", "0")]) +
             f("sp", h512 + b"wxyz")))
    seed("ok-empty", t.end())
    seed("ok-no-end", f("a", b"x"))
    small = arc(d("d/"), f("d/f", b"data" * 20), s("d/l", "f"))
    for ext, comp in t.COMPRESSORS.items():
        seed("ok-" + ext, comp(small))
    seed("ok-zstd-raw", t.zstd_frame([("raw", small)]))
    seed("ok-zstd-rle", t.zstd_frame([("raw", small), ("rle", 0, 1 << 20)]))
    seed("ok-nested", t.gz(t.xz(small)))
    # restart points (fuzz_frames): zstd frames with a skippable frame and
    # the seekable format's seek table; two concatenated xz streams
    half = len(small) // 2
    frames = [t.zstd_frame([("raw", small[:half])]),
              t.zstd_frame([("raw", small[half:])])]
    skip = (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    sizes = [(len(frames[0]), half), (len(skip), 0),
             (len(frames[1]), len(small) - half)]
    entries = b"".join(c.to_bytes(4, "little") + d.to_bytes(4, "little")
                       for c, d in sizes)
    footer = len(sizes).to_bytes(4, "little") + b"\x00" + \
        (0x8F92EAB1).to_bytes(4, "little")
    table = (0x184D2A5E).to_bytes(4, "little") + \
        (len(entries) + len(footer)).to_bytes(4, "little") + entries + footer
    seed("ok-zstd-seekable", frames[0] + skip + frames[1] + table)
    # (stream padding may end the file; before another stream it is
    # refused: Python's lzma stops at it and tarfile sees less)
    seed("ok-xz-streams", t.xz(small[:half]) + t.xz(small[half:]))
    seed("ok-xz-streams-padded-end",
         t.xz(small[:half]) + t.xz(small[half:]) + b"\0" * 8)
    seed("xz-streams-padded", t.xz(small[:half]) + b"\0" * 4 +
         t.xz(small[half:]))
    # keep_data from a memfd and from a pipe (spill), compressed too
    seed("cfg-keep-data", cfg(["keep_data", "compare"]) + tree)
    seed("cfg-keep-data-pipe", cfg(["keep_data", "pipe"]) + t.gz(tree))
    seed("cfg-keep-sparse",
         cfg(["keep_data", "compare"]) +
         arc(t.gnu_sparse("sp", [(0, 512), (10000, 3), (20000, 0)], 20000,
                          b"h" * 512 + b"abc"),
             t.pax_sparse_10("sp2", [(0, 512), (8192, 4), (9000, 0)], 9000,
                             b"a" * 512 + b"wxyz")))


def gen_rules():
    f, d, s, h = t.file, t.dir, t.symlink, t.hardlink
    # section 3: one member
    for i, name in enumerate(["", ".", "./", "./.", ".//", "/"]):
        seed("rule-root-dir-%d" % i, arc(d(name), f("a", b"1")))
    seed("rule-root-symlink", arc(s(".", "x")))
    seed("rule-root-hardlink", arc(h("./", "x")))
    seed("rule-root-file", arc(f("./", b"1")))
    seed("rule-drive", arc(f("C:x", b"1")))
    seed("rule-drive-digit", arc(f("1:x", b"1")))
    seed("rule-unc", arc(f("//server/share", b"1")))
    seed("rule-unc-backslash", arc(f("\\\\?\\C:x", b"1")))
    seed("rule-backslash", arc(f("a\\b", b"1")))
    seed("rule-absolute", arc(f("/etc/passwd", b"1")))
    seed("rule-parent", arc(f("a/../b", b"1")))
    seed("rule-parent-dir", arc(d("../")))
    seed("rule-symlink-disabled", cfg(["no_symlinks"]) + arc(s("l", "x")))
    seed("rule-hardlink", arc(f("a", b"1"), h("b", "a")))
    seed("rule-fifo", arc(t.member("p", b"", b"6")))
    seed("rule-chardev", arc(t.member("c", b"", b"3")))
    seed("rule-unknown-type", arc(t.member("z", b"abc", b"Z")))
    seed("rule-contiguous", arc(t.member("c7", b"abc", b"7")))
    # section 4: the archive
    seed("rule-dup-file", arc(f("a", b"1"), f("./a", b"2")))
    seed("rule-dup-dir-ok", arc(d("a/"), d("./a")))
    seed("rule-dup-dir-file", arc(d("a/"), f("a", b"1")))
    seed("rule-target-absolute", arc(s("l", "/etc/passwd")))
    seed("rule-target-escape", arc(s("d/l", "../../x")))
    seed("rule-target-ok", arc(s("nested/python", "../bin/python3")))
    seed("rule-target-chain",
         arc(s("link", "./"), s("escape", "link/link/../../x")))
    seed("rule-target-loop", arc(s("a", "b"), s("b", "a")))
    seed("rule-target-external-ok",
         cfg(["allow_external"]) + arc(s("bin/python3", "/usr/bin/python3")))
    seed("rule-through-symlink", arc(s("l", "d"), d("d/"), f("l/x", b"1")))
    seed("rule-through-symlink-late", arc(f("l/x", b"1"), s("l", "d")))
    seed("rule-through-file", arc(f("f", b"1"), f("f/x", b"2")))
    seed("rule-phase-order", arc(f("f", b"1"), f("f/x", b"2"),
                                 f("a/../b", b"3")))
    seed("rule-implicit", arc(f("a/b/c/d", b"1")))
    seed("cfg-skip", cfg(skip="a") + arc(f("a/x", b"1"), f("b", b"2"),
                                         f("a/../evil", b"3")))
    seed("cfg-skip-all", cfg(skip=".") + arc(f("/etc/x", b"1")))
    seed("cfg-skip-root-name",
         cfg(skip="sub", root="workspace") +
         arc(f("workspace/sub/x", b"1"), f("workspace/y", b"2")))
    seed("cfg-reject-path",
         cfg(reject="remote/nested") +
         arc(d("remote/"), f("remote/nested/x", b"1")))
    seed("cfg-reject-path-file",
         cfg(reject="remote/nested") + arc(f("remote", b"1")))
    seed("cfg-reject-symlink",
         cfg(rsym="link") + arc(s("link", "x"), s("link2", "x")))
    seed("cfg-strip",
         cfg(strip="workspace") +
         arc(d("workspace/"), f("workspace/x", b"1"), d("workspace/sub/")))
    seed("cfg-strip-outside",
         cfg(strip="workspace") + arc(f("workspace/x", b"1"), f("y", b"2")))
    # section 5: limits, each at N and N + 1
    three = arc(f("a", b"1"), f("b", b"22"), f("c/d/e", b"333"))
    seed("cfg-max-members", cfg(members=5) + three)
    seed("cfg-max-total", cfg(total=2) + three)
    seed("cfg-max-file", cfg(file_size=1) + three)
    seed("cfg-max-path", cfg(path_len=5) + three)
    seed("cfg-max-depth", cfg(depth=3) + three)
    seed("cfg-all",
         cfg(["no_symlinks", "keep_data"], skip="b", reject="x",
             rsym="link", root="d", members=20, path_len=60, depth=10) +
         arc(d("d/"), f("d/a", b"1"), s("link", "d")))


def gen_export():
    """fuzz_export: byte 11 bit 0 plants traps in the destination (d ->
    victim dir, x -> victim file, link -> ../sibling, up -> ../.., a/, f,
    fifo), bit 1 exports twice, bits 2-3 choose the fallbacks, bit 4 a
    pipe; these archives walk into each trap"""
    f, d, s = t.file, t.dir, t.symlink
    traps = arc(f("d/x", b"1"), f("x", b"2"), f("link", b"3"),
                f("up/evil", b"4"), f("a/in", b"5"), f("f/y", b"6"),
                f("fifo", b"7"))
    seed("exp-traps", cfg(extra=1) + traps)
    seed("exp-traps-fallback", cfg(extra=1 | 4 | 8) + traps)
    seed("exp-replace",
         cfg(extra=1) + arc(d("d/"), f("d/x", b"1"), s("x", "d/x"),
                            d("link/"), s("f", "a"), d("fifo/")))
    seed("exp-dir-over-file", cfg(extra=1) + arc(f("a", b"file on a dir")))
    seed("exp-twice",
         cfg(extra=2) + arc(d("d/"), f("d/f", b"x" * 100, mode=0o755),
                            s("d/l", "f"), s("top", "d/l")))
    seed("exp-pipe", cfg(extra=16) + t.gz(arc(f("a/b/c", b"abc"),
                                              s("a/l", "b"))))
    seed("exp-sparse",
         cfg(extra=2 | 8) +
         arc(t.gnu_sparse("sp", [(0, 512), (70000, 3), (90000, 0)], 90000,
                          b"h" * 512 + b"abc")))


def gen_malformed():
    mal = os.path.join(HERE, "..", "tests", "data", "malformed")
    for name in sorted(os.listdir(mal)):
        # the cuts of base.tar are what libFuzzer's mutations make anyway
        if name == "EXPECTED" or re.match(r"trunc-\d", name):
            continue
        data = open(os.path.join(mal, name), "rb").read()
        if len(data) <= MAX_SEED:
            seed("mal-" + name.replace(".", "-"), data)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus",
                                                              "seed")
    gen_valid()
    gen_rules()
    gen_export()
    gen_malformed()
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    for name, data in sorted(CASES.items()):
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(data)
    print("%d seeds, %d bytes" % (len(CASES), sum(map(len, CASES.values()))))


if __name__ == "__main__":
    main()
