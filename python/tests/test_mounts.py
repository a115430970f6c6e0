# SPDX-License-Identifier: MIT
"""mount() and hydrate() against real FUSE mounts: what they show, what a
workspace's diff/pack/discard do, and that leaving a with-block unmounts,
also by an exception and with a file still open, checked in
/proc/self/mountinfo. Needs /dev/fuse (WSNAP_REQUIRE_FUSE=1: must have)."""

from __future__ import annotations

import errno
import io
import os
import tempfile
import unittest
from unittest import mock

import wsnap

from .support import (
    NMEMBERS,
    TmpCase,
    is_mounted,
    mounts,
    pipe_reader,
    read_tree,
    sample_bytes,
    tar_bytes,
)

EVIL = tar_bytes([("../evil", "file", b"x", 0o644)])


class Boom(Exception):
    pass


class MountCase(TmpCase):
    def setUp(self) -> None:
        super().setUp()
        self.require_fuse()
        self.data = sample_bytes()
        self.archive = self.write("s.tar", self.data)
        self.exported = self.path("exported")
        wsnap.export(self.data, self.exported)

    def state_dir(self, ws: str) -> str:
        return os.path.join(os.path.dirname(ws), "." + os.path.basename(ws) + ".wsnap")


class Mount(MountCase):
    def test_mount_shows_the_snapshot(self) -> None:
        mp = self.path("mnt")
        os.mkdir(mp)
        for arch in (self.archive, self.data, io.BytesIO(self.data)):
            with self.subTest(type(arch).__name__):
                with wsnap.mount(arch, mp) as m:
                    self.assertEqual(m.path, mp)
                    self.assertTrue(is_mounted(mp))
                    self.assertIn((mp, "fuse.wsnap"), mounts())
                    self.assertEqual(read_tree(mp), read_tree(self.exported))
                    with self.assertRaises(OSError) as cm:
                        open(os.path.join(mp, "new"), "w")
                    self.assertEqual(cm.exception.errno, errno.EROFS)
                self.assertTrue(m.closed)
                self.assertNothingMounted()
                self.assertTrue(os.path.isdir(mp))  # a given mountpoint stays

    def test_own_mountpoint_made_and_removed(self) -> None:
        with mock.patch.object(tempfile, "tempdir", self.tmp):
            with wsnap.mount(self.archive) as m:
                self.assertTrue(m.path.startswith(self.tmp + "/wsnap-mount-"))
                self.assertEqual(len(os.listdir(m.path)), len(os.listdir(self.exported)))
            self.assertFalse(os.path.exists(m.path))
        self.assertNothingMounted()

    def test_exception_unmounts(self) -> None:
        mp = self.path("mnt")
        os.mkdir(mp)
        with self.assertRaises(Boom):
            with wsnap.mount(self.data, mp):
                self.assertTrue(is_mounted(mp))
                raise Boom()
        self.assertNothingMounted()

    def test_busy_at_exit_is_detached(self) -> None:
        mp = self.path("mnt")
        os.mkdir(mp)
        f = None
        try:
            with wsnap.mount(self.archive, mp) as m:
                f = open(os.path.join(mp, "README.md"), "rb")
                with self.assertRaises(wsnap.WsnapIOError) as cm:
                    m.unmount()
                self.assertEqual(cm.exception.errno, errno.EBUSY)
                self.assertTrue(is_mounted(mp))
            self.assertNothingMounted()
        finally:
            if f:
                f.close()

    def test_explicit_unmount_and_policy(self) -> None:
        mp = self.path("mnt")
        os.mkdir(mp)
        m = wsnap.mount(self.archive, mp, skip=["src"])
        try:
            self.assertNotIn("src", os.listdir(mp))
        finally:
            m.unmount()
        self.assertTrue(m.closed)
        m.__exit__(None, None, None)  # a second take-down does nothing
        self.assertNothingMounted()

    def test_rejected_mounts_nothing(self) -> None:
        with mock.patch.object(tempfile, "tempdir", self.tmp):
            before = sorted(os.listdir(self.tmp))
            with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                wsnap.mount(EVIL)
            self.assertEqual(str(cm.exception), "unsafe tar member '../evil': parent traversal")
            self.assertEqual(sorted(os.listdir(self.tmp)), before)
        self.assertNothingMounted()

    def test_missing_archive(self) -> None:
        mp = self.path("mnt")
        os.mkdir(mp)
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.mount(self.path("nope.tar"), mp)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertNothingMounted()


class Hydrate(MountCase):
    def test_write_diff_pack_discard(self) -> None:
        ws = self.path("ws")
        with wsnap.hydrate(self.archive, ws) as w:
            self.assertEqual(w.path, ws)
            self.assertEqual(read_tree(ws), read_tree(self.exported))
            self.assertEqual(w.diff(), [])
            with open(os.path.join(ws, "src/main.py"), "a") as f:
                f.write("print('more')\n")
            os.unlink(os.path.join(ws, "secret.txt"))
            with open(os.path.join(ws, "NEW"), "w") as f:
                f.write("new\n")
            got = [(c.kind, c.path) for c in w.diff()]
            self.assertEqual(got, [("A", "NEW"), ("D", "secret.txt"), ("M", "src/main.py")])
            out = self.path("next.tar")
            w.pack(out)
            self.assertTrue(is_mounted(ws))  # pack leaves it mounted
        self.assertNothingMounted()
        self.assertFalse(os.path.exists(self.state_dir(ws)))
        self.assertEqual(wsnap.check(out).members, NMEMBERS)  # -1 +1
        self.assertEqual([(c.kind, c.path) for c in wsnap.diff(self.archive, out)], got)

    def test_exception_unmounts_everything(self) -> None:
        ws = self.path("ws")
        with self.assertRaises(Boom):
            with wsnap.hydrate(self.data, ws):
                self.assertTrue(is_mounted(ws))
                self.assertNotEqual(len([p for p, _ in mounts() if p.startswith(self.tmp)]), 0)
                raise Boom()
        self.assertNothingMounted()
        self.assertFalse(os.path.exists(self.state_dir(ws)))

    def test_busy_at_exit_is_detached(self) -> None:
        ws = self.path("ws")
        f = None
        try:
            with wsnap.hydrate(self.archive, ws) as w:
                f = open(os.path.join(ws, "README.md"), "rb")
                with self.assertRaises(wsnap.WsnapIOError) as cm:
                    w.discard()
                self.assertEqual(cm.exception.errno, errno.EBUSY)
                self.assertFalse(w.closed)
            self.assertTrue(w.closed)
        finally:
            if f:
                f.close()
        self.assertNothingMounted()

    def test_upper_directory_is_kept(self) -> None:
        ws, upper = self.path("ws"), self.path("upper")
        with wsnap.hydrate(self.archive, ws, upper) as w:
            self.assertEqual(w.upper, upper)
            with open(os.path.join(ws, "kept.txt"), "w") as f:
                f.write("kept\n")
        self.assertNothingMounted()
        self.assertEqual(os.listdir(upper), ["kept.txt"])
        with wsnap.hydrate(self.archive, ws, upper=upper) as w:
            self.assertEqual([(c.kind, c.path) for c in w.diff()], [("A", "kept.txt")])
        self.assertNothingMounted()

    def test_from_streams(self) -> None:
        ws = self.path("ws")
        with wsnap.hydrate(io.BytesIO(self.data), ws) as w:
            os.unlink(os.path.join(ws, "data.bin"))
            self.assertEqual([(c.kind, c.path) for c in w.diff()], [("D", "data.bin")])
            self.assertEqual([(c.kind, c.path) for c in w.diff()], [("D", "data.bin")])
        with pipe_reader(self.data) as pipe:
            with wsnap.hydrate(pipe, ws) as w:
                self.assertEqual(read_tree(ws), read_tree(self.exported))
                with self.assertRaises(ValueError):
                    w.diff()  # a pipe cannot be read again
                w.pack(self.path("p.tar"))
        self.assertEqual(wsnap.diff(self.archive, self.path("p.tar")), [])
        self.assertNothingMounted()

    def test_policy_carries_to_diff_and_pack(self) -> None:
        data = tar_bytes([("a", "file", b"a", 0o644), ("ext", "symlink", "/etc/hostname", 0o777)])
        ws = self.path("ws")
        with self.assertRaises(wsnap.UnsafeTarMemberError):
            wsnap.hydrate(data, ws)
        self.assertNothingMounted()
        with wsnap.hydrate(data, ws, allow_external_symlinks=True) as w:
            self.assertEqual(w.diff(), [])
            w.pack(self.path("o.tar"))
            with self.assertRaises(wsnap.UnsafeTarMemberError):
                w.pack(self.path("o2.tar"), allow_external_symlinks=False)
        self.assertEqual(wsnap.check(self.path("o.tar"), allow_external_symlinks=True).symlinks, 1)

    def test_rejected_and_unreadable_hydrate_nothing(self) -> None:
        ws = self.path("ws")
        for arch, member in ((EVIL, "../evil"), (b"junk" * 300, "<tar>")):
            with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                wsnap.hydrate(arch, ws)
            self.assertEqual(cm.exception.member, member)
            self.assertFalse(os.path.exists(self.state_dir(ws)))
        self.assertNothingMounted()

    def test_workspace_not_empty(self) -> None:
        ws = self.path("ws")
        os.mkdir(ws)
        self.write("ws/here", b"h")
        with self.assertRaises(wsnap.WsnapIOError) as cm:
            wsnap.hydrate(self.archive, ws)
        self.assertEqual(cm.exception.errno, errno.ENOTEMPTY)
        self.assertIn("--force", cm.exception.hint)
        with wsnap.hydrate(self.archive, ws, force=True):
            self.assertFalse(os.path.exists(os.path.join(ws, "here")))
        self.assertTrue(os.path.exists(os.path.join(ws, "here")))
        self.assertNothingMounted()

    def test_closed_workspace(self) -> None:
        w = wsnap.hydrate(self.archive, self.path("ws"))
        w.discard()
        self.assertNothingMounted()
        with self.assertRaises(ValueError):
            w.diff()
        with self.assertRaises(ValueError):
            w.pack(self.path("o.tar"))


if __name__ == "__main__":
    unittest.main()
