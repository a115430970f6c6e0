# SPDX-License-Identifier: MIT
"""The exceptions: classes, attributes and messages for rejected, unreadable
and missing archives, from the JSON of check/ls/export/diff and from the
exit status and stderr line of the subcommands without --json."""

from __future__ import annotations

import errno
import io
import os
import unittest
from unittest import mock

import wsnap
from wsnap import _cli

from .support import TmpCase, run_bin, sample_bytes, stderr_message, tar_bytes

EVIL = tar_bytes([("../evil", "file", b"x", 0o644), ("ok.txt", "file", b"fine", 0o644)])
ABS_LINK = tar_bytes([("l", "symlink", "/etc/passwd", 0o777)])
JUNK = b"this is not a tar archive\n" * 100


class Rejected(TmpCase):
    def test_sdk_shape(self) -> None:
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(EVIL)
        e = cm.exception
        self.assertIsInstance(e, ValueError)
        self.assertIsInstance(e, wsnap.WsnapError)
        self.assertEqual(e.member, "../evil")
        self.assertEqual(e.reason, "parent traversal")
        self.assertEqual(str(e), "unsafe tar member '../evil': parent traversal")
        self.assertEqual(e.returncode, 3)
        self.assertIsNone(e.hint)

    def test_every_reader_rejects_alike(self) -> None:
        path = self.write("evil.tar", EVIL)
        want = stderr_message(run_bin("check", path))
        calls = {
            "check": lambda a: wsnap.check(a),
            "ls": lambda a: wsnap.ls(a),
            "export": lambda a: wsnap.export(a, self.path("out")),
            "diff": lambda a: wsnap.diff(a, self.tmp),
            "strip_prefix": lambda a: wsnap.strip_prefix(a, io.BytesIO(), "x"),
        }
        for name, call in calls.items():
            for arch in (path, EVIL, io.BytesIO(EVIL)):
                with self.subTest(name, input=type(arch).__name__):
                    with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                        call(arch)
                    self.assertEqual(str(cm.exception), want)
        self.assertFalse(os.path.exists(self.path("out")))

    def test_hint(self) -> None:
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.check(ABS_LINK)
        self.assertEqual(cm.exception.reason, "absolute symlink target not allowed: /etc/passwd")
        self.assertEqual(
            cm.exception.hint,
            "--allow-external-symlinks accepts symlinks whose targets leave the snapshot",
        )
        self.assertEqual(wsnap.check(ABS_LINK, allow_external_symlinks=True).symlinks, 1)

    def test_odd_names_are_exact_and_quoted_like_repr(self) -> None:
        for name in ("../it's", '../say "hi"', "../tab\there", "../caf\u00e9",
                     "../new\nline", os.fsdecode(b"../bad\xff")):
            with self.subTest(name=name):
                data = tar_bytes([(name, "file", b"x", 0o644)])
                with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                    wsnap.check(data)
                self.assertEqual(cm.exception.member, name)
                self.assertEqual(str(cm.exception), f"unsafe tar member {name!r}: parent traversal")
                if "\udcff" not in name:  # the binary prints that byte as \xff
                    self.assertEqual(str(cm.exception),
                                     stderr_message(run_bin("check", "-", input=data)))


class Unreadable(TmpCase):
    def test_not_tar(self) -> None:
        for arch in (JUNK, self.write("junk.tar", JUNK), io.BytesIO(JUNK)):
            with self.subTest(type(arch).__name__):
                with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                    wsnap.check(arch)
                self.assertEqual(cm.exception.member, "<tar>")
                self.assertEqual(cm.exception.reason, "invalid tar stream")
                self.assertEqual(str(cm.exception), "unsafe tar member '<tar>': invalid tar stream")

    def test_truncated(self) -> None:
        data = sample_bytes()
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.ls(data[:3000])
        self.assertEqual(cm.exception.member, "<tar>")

    def test_a_directory_is_not_an_archive(self) -> None:
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.check(self.tmp)
        self.assertEqual(cm.exception.errno, errno.EISDIR)
        self.assertEqual(str(cm.exception), f"cannot read archive '{self.tmp}': Is a directory")

    def test_file_object_that_fails(self) -> None:
        class Broken(io.RawIOBase):
            def readable(self) -> bool:
                return True

            def read(self, n: int = -1) -> bytes:
                raise OSError(errno.EIO, "disk on fire")

        with self.assertRaises(OSError) as cm:
            wsnap.check(Broken())
        self.assertEqual(str(cm.exception), "[Errno 5] disk on fire")


class Missing(TmpCase):
    def test_missing_archive(self) -> None:
        path = self.path("nope.tar")
        for call in (wsnap.check, wsnap.ls, lambda a: wsnap.export(a, self.path("o")),
                     lambda a: wsnap.diff(a, self.tmp)):
            with self.assertRaises(wsnap.WsnapIOError) as cm:
                call(path)
            e = cm.exception
            self.assertIsInstance(e, OSError)
            self.assertEqual(e.errno, errno.ENOENT)
            self.assertEqual(e.returncode, 4)
            self.assertEqual(str(e), f"cannot open '{path}': No such file or directory")
            self.assertEqual(str(e), stderr_message(run_bin("check", path)))

    def test_missing_binary(self) -> None:
        with mock.patch.dict(os.environ, {"WSNAP_BIN": self.path("no-wsnap")}):
            with self.assertRaises(FileNotFoundError):
                wsnap.check(sample_bytes())


class Usage(TmpCase):
    def test_value_the_binary_refuses(self) -> None:
        with self.assertRaises(wsnap.WsnapUsageError) as cm:
            wsnap.check(sample_bytes(), max_total_size="lots")
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.returncode, 2)
        self.assertEqual(
            str(cm.exception),
            "invalid --max-total-size 'lots': want a number of bytes such as "
            "1000, 64K, 1M, 64G, or 'unlimited'",
        )

    def test_usage_without_json(self) -> None:
        os.mkdir(self.path("d"))
        with self.assertRaises(wsnap.WsnapUsageError) as cm:
            wsnap.pack(self.path("d"), io.BytesIO(), compress="rar")
        self.assertTrue(str(cm.exception).startswith("--compress takes"), str(cm.exception))


class WithoutJson(TmpCase):
    """Subcommands without --json: pack and strip-prefix report through the
    exit status and the stderr line."""

    def test_pack_refuses_a_fifo(self) -> None:
        d = self.path("d")
        os.mkdir(d)
        os.mkfifo(os.path.join(d, "fifo"))
        out = self.path("o.tar")
        with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
            wsnap.pack(d, out)
        self.assertEqual((cm.exception.member, cm.exception.reason),
                         ("./fifo", "unsupported member type"))
        self.assertEqual(str(cm.exception), "unsafe tar member './fifo': unsupported member type")
        self.assertFalse(os.path.exists(out))

    def test_pack_of_a_missing_directory(self) -> None:
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.pack(self.path("nope"), self.path("o.tar"))
        self.assertEqual(cm.exception.errno, errno.ENOENT)

    def test_strip_prefix_missing_input(self) -> None:
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.strip_prefix(self.path("nope.tar"), self.path("o.tar"), "x")
        self.assertEqual(cm.exception.errno, errno.ENOENT)

    def test_unmount_of_nothing(self) -> None:
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.unmount(self.tmp)
        self.assertEqual(str(cm.exception), f"nothing is mounted at '{self.tmp}'")


def result(rc: int, stderr: str = "", records=None, cmd: str = "mount") -> _cli.Result:
    return _cli.Result(["wsnap", cmd], rc, b"", stderr.encode(), records is not None,
                       records or [])


class Adapter(unittest.TestCase):
    """The one module that reads the binary: both ways of reporting give
    the same exception."""

    def test_rejection_from_stderr_and_from_json(self) -> None:
        line = "wsnap: unsafe tar member \"../it's\": parent traversal\n"
        from_text = _cli.error_for(result(3, line))
        from_json = _cli.error_for(result(3, line, [
            {"ok": False, "error": "rejected", "member": "../it's", "reason": "parent traversal"}]))
        for e in (from_text, from_json):
            self.assertIsInstance(e, wsnap.UnsafeTarMemberError)
            self.assertEqual((e.member, e.reason), ("../it's", "parent traversal"))
            self.assertEqual(str(e), line[len("wsnap: "):-1])

    def test_escapes_in_stderr(self) -> None:
        e = _cli.error_for(result(
            3, "wsnap: unsafe tar member 'a\\nb': symlink target escapes archive root: ..\\tx\n"))
        self.assertEqual(e.member, "a\nb")
        self.assertEqual(e.reason, "symlink target escapes archive root: ..\tx")

    def test_io_with_hint_and_errno(self) -> None:
        text = ("wsnap: cannot unmount '/w': Device or resource busy\n"
                "wsnap: hint: --lazy detaches a busy mount\n")
        for rec in (None, [{"ok": False, "error": "io", "errno": errno.EBUSY,
                            "message": "cannot unmount '/w': Device or resource busy",
                            "hint": "--lazy detaches a busy mount"}]):
            e = _cli.error_for(result(4, text, rec, cmd="unmount"))
            self.assertIsInstance(e, wsnap.WsnapIOError)
            self.assertEqual(e.errno, errno.EBUSY)
            self.assertEqual(str(e), "cannot unmount '/w': Device or resource busy")
            self.assertEqual(e.hint, "--lazy detaches a busy mount")

    def test_usage_text_as_the_json_has_it(self) -> None:
        e = _cli.error_for(result(
            2, "wsnap: hydrate: want ARCHIVE and WORKSPACE (see 'wsnap hydrate --help')\n",
            cmd="hydrate"))
        self.assertIsInstance(e, wsnap.WsnapUsageError)
        self.assertEqual(str(e), "want ARCHIVE and WORKSPACE")

    def test_other_failures(self) -> None:
        e = _cli.error_for(result(-9))
        self.assertEqual(type(e), wsnap.WsnapError)
        self.assertEqual(str(e), "wsnap mount killed by signal 9")
        e = _cli.error_for(result(3, "wsnap: something else\n"))
        self.assertEqual(type(e), wsnap.WsnapError)
        self.assertEqual(str(e), "something else")

    def test_json_is_asked_where_help_lists_it(self) -> None:
        for cmd in ("check", "ls", "export", "diff"):
            self.assertTrue(_cli.has_option(cmd, "--json"), cmd)
        self.assertFalse(_cli.has_option("check", "--no-such-option"))
        self.assertTrue(_cli.has_option("unmount", "--lazy"))


if __name__ == "__main__":
    unittest.main()
