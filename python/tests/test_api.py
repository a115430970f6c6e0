# SPDX-License-Identifier: MIT
"""check, ls, export, diff, pack and strip_prefix against the real binary,
with archives as paths, bytes and file objects, and the policy keywords."""

from __future__ import annotations

import io
import os
import tarfile
import unittest

import wsnap

from .support import (
    MTIME,
    NMEMBERS,
    SAMPLE,
    TmpCase,
    pipe_reader,
    read_bytes,
    read_tree,
    run_bin,
    sample_bytes,
    tar_bytes,
)


def sample_listing():
    """What ls must say of SAMPLE, from the entries themselves."""
    out = {}
    for name, kind, payload, mode in SAMPLE:
        if name == ".":
            continue
        if kind == "file":
            out[name] = ("file", mode, len(payload), None)
        elif kind == "dir":
            out[name] = ("dir", mode, None, None)
        else:
            out[name] = ("symlink", 0o777, len(payload), payload)
    return out


class Inputs(TmpCase):
    """An archive as a path, bytes, bytearray, memoryview, file objects
    (seekable, positioned, a pipe) gives the same answer."""

    def setUp(self) -> None:
        super().setUp()
        self.data = sample_bytes()
        self.file = self.write("s.tar", self.data)

    def test_check_every_kind_of_input(self) -> None:
        want = wsnap.check(self.file)
        self.assertEqual(want.members, NMEMBERS)
        self.assertEqual(want.files, 7)
        self.assertEqual(want.symlinks, 2)
        self.assertEqual(want.directories, 4)  # the root is not counted
        self.assertEqual(want.bytes, sum(len(p) for _, k, p, _ in SAMPLE if k == "file"))
        self.assertEqual(want.compression, "none")
        from pathlib import Path

        inputs = {
            "pathlib": Path(self.file),
            "bytes": self.data,
            "bytearray": bytearray(self.data),
            "memoryview": memoryview(self.data),
            "BytesIO": io.BytesIO(self.data),
        }
        for what, arch in inputs.items():
            with self.subTest(what):
                self.assertEqual(wsnap.check(arch), want)
        with open(self.file, "rb") as f:
            self.assertEqual(wsnap.check(f), want)

    def test_file_object_is_read_from_its_position(self) -> None:
        buf = io.BytesIO(b"JUNK" * 100 + self.data)
        buf.seek(400)
        self.assertEqual(wsnap.check(buf).members, NMEMBERS)

    def test_pipe(self) -> None:
        with pipe_reader(self.data) as f:
            names = [m.path for m in wsnap.ls(f)]
        self.assertEqual(names, sorted(sample_listing()))

    def test_compressed_bytes(self) -> None:
        gz = sample_bytes(compression="gz")
        self.assertEqual(wsnap.check(gz).compression, "gzip")
        self.assertEqual([m.path for m in wsnap.ls(gz)], sorted(sample_listing()))

    def test_text_file_object_is_refused(self) -> None:
        with self.assertRaises(TypeError):
            wsnap.check(io.StringIO("not bytes"))

    def test_file_named_dash_is_a_file(self) -> None:
        self.write("-", self.data)
        cwd = os.getcwd()
        os.chdir(self.tmp)
        try:
            self.assertEqual(wsnap.check("-").members, NMEMBERS)
        finally:
            os.chdir(cwd)


class Ls(TmpCase):
    def test_members_as_presented(self) -> None:
        got = {m.path: m for m in wsnap.ls(sample_bytes())}
        want = sample_listing()
        self.assertEqual(sorted(got), sorted(want))
        for path, (kind, mode, size, target) in want.items():
            m = got[path]
            with self.subTest(path):
                self.assertEqual(m.type, kind)
                self.assertEqual(m.mode, mode)
                if size is not None:
                    self.assertEqual(m.size, size)
                self.assertEqual(m.target, target)
                self.assertEqual(m.mtime_ns, MTIME * 10**9)
        self.assertTrue(got["src"].is_dir and got["bin/run"].is_file)
        self.assertTrue(got["link-to-src"].is_symlink)

    def test_sorted_bytewise_with_implicit_directories(self) -> None:
        data = tar_bytes([("b/x", "file", b"1", 0o644), ("a", "file", b"2", 0o644),
                          ("B", "file", b"3", 0o644)])
        self.assertEqual([m.path for m in wsnap.ls(data)], ["B", "a", "b", "b/x"])

    def test_fractional_mtime_exact(self) -> None:
        data = tar_bytes([("f", "file", b"x", 0o644)], mtime=1700000000.123456789)
        (m,) = wsnap.ls(data)
        self.assertEqual(m.mtime_ns // 1000, 1700000000123456)  # tarfile keeps microseconds
        self.assertAlmostEqual(m.mtime, 1700000000.123456, places=5)

    def test_names_that_are_not_utf8_are_exact(self) -> None:
        raw = b"caf\xe9-\xff.txt"
        name = os.fsdecode(raw)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT,
                          encoding="utf-8", errors="surrogateescape") as t:
            ti = tarfile.TarInfo(name)
            ti.size = 1
            t.addfile(ti, io.BytesIO(b"x"))
        (m,) = wsnap.ls(buf.getvalue())
        self.assertEqual(os.fsencode(m.path), raw)


class Export(TmpCase):
    def test_export_summary_and_tree(self) -> None:
        dest = self.path("out")
        st = wsnap.export(sample_bytes(), dest)
        self.assertTrue(st.created)
        self.assertEqual(st.dest, dest)
        self.assertEqual(st.files, 7)
        self.assertEqual(st.symlinks, 2)
        tree = read_tree(dest)
        self.assertEqual(tree["src/main.py"], ("file", 0o644, b"print('hello')\n"))
        self.assertEqual(tree["bin/run"], ("file", 0o755, b"#!/bin/sh\necho run\n"))
        self.assertEqual(tree["secret.txt"][1], 0o600)
        self.assertEqual(tree["link-to-src"], ("symlink", 0, "src/pkg"))
        self.assertEqual(tree["empty"], ("dir", 0o755, None))

    def test_export_from_file_object_and_strip_prefix(self) -> None:
        data = tar_bytes([("workspace", "dir", None, 0o755),
                          ("workspace/a.txt", "file", b"a", 0o644),
                          ("workspace/d/b.txt", "file", b"b", 0o644)])
        dest = self.path("out")
        with open(self.write("w.tar", data), "rb") as f:
            wsnap.export(f, dest, strip_prefix="workspace")
        self.assertEqual(sorted(read_tree(dest)), ["a.txt", "d", "d/b.txt"])

    def test_export_merges_into_an_existing_directory(self) -> None:
        dest = self.path("out")
        os.mkdir(dest)
        self.write("out/keep", b"k")
        st = wsnap.export(sample_bytes(), dest)
        self.assertFalse(st.created)
        self.assertIn("keep", read_tree(dest))


class Diff(TmpCase):
    def test_archive_against_directory(self) -> None:
        dest = self.path("out")
        wsnap.export(sample_bytes(), dest)
        self.assertEqual(wsnap.diff(sample_bytes(), dest), [])
        with open(os.path.join(dest, "src/main.py"), "a") as f:
            f.write("# more\n")
        os.unlink(os.path.join(dest, "secret.txt"))
        os.mkdir(os.path.join(dest, "new"))
        self.write("out/new/f", b"f")
        os.unlink(os.path.join(dest, "link-to-readme"))
        self.write("out/link-to-readme", b"now a file")
        changes = wsnap.diff(sample_bytes(), dest)
        got = [(c.kind, c.path) for c in changes]
        self.assertEqual(got, [("T", "link-to-readme"), ("A", "new"), ("A", "new/f"),
                               ("D", "secret.txt"), ("M", "src/main.py")])
        by = {c.path: c for c in changes}
        self.assertIsNone(by["new"].old)
        self.assertEqual(by["new"].new, wsnap.Node("dir", 0o755, by["new"].new.size))
        self.assertIsNone(by["secret.txt"].new)
        self.assertEqual(by["secret.txt"].old.mode, 0o600)
        self.assertEqual(by["link-to-readme"].old.type, "symlink")
        self.assertEqual(by["link-to-readme"].old.target, "README.md")
        self.assertEqual(by["link-to-readme"].new.type, "file")
        self.assertEqual(by["src/main.py"].new.size, len(b"print('hello')\n# more\n"))

    def test_two_archives_one_as_stream(self) -> None:
        a = self.write("a.tar", sample_bytes())
        b = tar_bytes(SAMPLE[:-1] + [("extra", "file", b"e", 0o644)])
        got = [(c.kind, c.path) for c in wsnap.diff(a, io.BytesIO(b))]
        self.assertEqual(got, [("D", "data.bin"), ("A", "extra")])
        got = [(c.kind, c.path) for c in wsnap.diff(b, a)]
        self.assertEqual(got, [("A", "data.bin"), ("D", "extra")])

    def test_mtime_only_with_mtime(self) -> None:
        a = sample_bytes()
        b = sample_bytes(mtime=MTIME + 60)
        self.assertEqual(wsnap.diff(a, self.write("b.tar", b)), [])
        self.assertEqual(len(wsnap.diff(a, self.write("b.tar", b), mtime=True)), NMEMBERS)

    def test_two_streams_refused(self) -> None:
        with self.assertRaises(ValueError):
            wsnap.diff(sample_bytes(), sample_bytes())


class Pack(TmpCase):
    def setUp(self) -> None:
        super().setUp()
        self.src = self.path("src")
        wsnap.export(sample_bytes(), self.src)

    def test_pack_to_paths_and_streams(self) -> None:
        for name in ("o.tar", "o.tar.gz", "o.tar.xz", "o.tar.zst"):
            with self.subTest(name):
                out = self.path(name)
                wsnap.pack(self.src, out)
                self.assertEqual(wsnap.diff(out, self.src), [])
        buf = io.BytesIO()
        wsnap.pack(self.src, buf)
        self.assertEqual(buf.getvalue(), read_bytes(self.path("o.tar")))
        with self.assertRaises(TypeError):
            wsnap.pack(self.src, io.StringIO())
        gz = io.BytesIO()
        wsnap.pack(self.src, gz, compress="gzip")
        self.assertEqual(gz.getvalue()[:2], b"\x1f\x8b")
        self.assertEqual(wsnap.check(gz.getvalue()).compression, "gzip")
        names = [m.name for m in tarfile.open(fileobj=io.BytesIO(buf.getvalue()))]
        self.assertEqual(names[0], ".")
        self.assertTrue(all(n == "." or n.startswith("./") for n in names))

    def test_skip_leaves_paths_out(self) -> None:
        out = self.path("o.tar")
        wsnap.pack(self.src, out, skip=["src/pkg", "data.bin"])
        paths = [m.path for m in wsnap.ls(out)]
        self.assertNotIn("data.bin", paths)
        self.assertNotIn("src/pkg/util.py", paths)
        self.assertIn("src/main.py", paths)
        wsnap.pack(self.src, out, skip="src")
        self.assertFalse(any(p.startswith("src") for p in (m.path for m in wsnap.ls(out))))

    def test_external_symlink_needs_the_option(self) -> None:
        os.symlink("/etc/passwd", os.path.join(self.src, "ext"))
        out = self.path("o.tar")
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.pack(self.src, out)
        self.assertEqual(cm.exception.member, "./ext")
        self.assertIn("--allow-external-symlinks", cm.exception.hint)
        self.assertFalse(os.path.exists(out))
        wsnap.pack(self.src, out, allow_external_symlinks=True)
        self.assertEqual(wsnap.check(out, allow_external_symlinks=True).symlinks, 3)


class StripPrefix(TmpCase):
    def test_strip_prefix_streams_and_paths(self) -> None:
        data = tar_bytes([("ws", "dir", None, 0o755), ("ws/a", "file", b"a", 0o644),
                          ("ws/d/b", "file", b"b", 0o644)])
        out = io.BytesIO()
        wsnap.strip_prefix(data, out, "ws")
        self.assertEqual([m.path for m in wsnap.ls(out.getvalue())], ["a", "d", "d/b"])
        dst = self.path("o.tar")
        wsnap.strip_prefix(self.write("in.tar", data), dst, "ws")
        self.assertEqual(read_bytes(dst), out.getvalue())
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.strip_prefix(data, io.BytesIO(), "other")
        self.assertEqual(cm.exception.reason, "member does not start with prefix: other")


class Policy(TmpCase):
    def test_keywords_reach_the_binary(self) -> None:
        data = sample_bytes()
        paths = lambda **kw: [m.path for m in wsnap.ls(data, **kw)]  # noqa: E731
        self.assertNotIn("src/main.py", paths(skip=["src"]))
        self.assertNotIn("README.md", paths(skip="README.md"))
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(data, reject_paths=["secret.txt"])
        self.assertEqual(cm.exception.reason, "archive member overlaps protected path: secret.txt")
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(data, no_symlinks=True)
        self.assertEqual(cm.exception.reason, "symlink member not allowed")
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(data, reject_symlinks=["link-to-src"])
        self.assertEqual(cm.exception.member, "link-to-src")
        # a limit at N passes, at N - 1 rejects
        self.assertEqual(wsnap.check(data, max_members=NMEMBERS).members, NMEMBERS)
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(data, max_members=NMEMBERS - 1)
        self.assertEqual(cm.exception.reason, "archive member count exceeds limit")
        self.assertIn("--max-members", cm.exception.hint)
        with self.assertRaises(wsnap.UnsafeTarMemberError):
            wsnap.check(data, max_file_size="1K")
        self.assertEqual(wsnap.check(data, max_total_size="unlimited", max_depth=3).files, 7)
        self.assertEqual(wsnap.check(data, allow_external_symlinks=False).members, NMEMBERS)

    def test_bad_keywords(self) -> None:
        with self.assertRaises(TypeError):
            wsnap.check(sample_bytes(), no_such_option=1)
        with self.assertRaises(TypeError):
            wsnap.check(sample_bytes(), max_members=True)
        with self.assertRaises(TypeError):
            wsnap.check(sample_bytes(), no_symlinks="yes")
        with self.assertRaises(wsnap.WsnapUsageError):
            wsnap.check(sample_bytes(), max_members=-1)

    def test_same_options_as_the_cli(self) -> None:
        data = sample_bytes()
        p = run_bin("check", "--json", "--skip=src", "--max-members=100", "-", input=data)
        self.assertEqual(p.returncode, 0)
        got = wsnap.check(data, skip="src", max_members=100)
        import json

        self.assertEqual(got.raw, json.loads(p.stdout))


if __name__ == "__main__":
    unittest.main()
