# SPDX-License-Identifier: MIT
"""wsnap.sandbox: hydrate_workspace mounts where FUSE is available and
exports where it is not (saying which), and both give the same diff and
the same persisted snapshot."""

from __future__ import annotations

import io
import os
import unittest
from unittest import mock

import wsnap
from wsnap import sandbox

from .support import TmpCase, is_mounted, read_tree, sample_bytes, tar_bytes

EVIL = tar_bytes([("../evil", "file", b"x", 0o644)])


def work(root: str) -> None:
    with open(os.path.join(root, "README.md"), "a") as f:
        f.write("more\n")
    os.makedirs(os.path.join(root, "node_modules/dep"))
    with open(os.path.join(root, "node_modules/dep/index.js"), "w") as f:
        f.write("x\n")
    os.unlink(os.path.join(root, "data.bin"))


WANT = [("M", "README.md"), ("D", "data.bin"), ("A", "node_modules"),
        ("A", "node_modules/dep"), ("A", "node_modules/dep/index.js")]


class Sandbox(TmpCase):
    def setUp(self) -> None:
        super().setUp()
        self.data = sample_bytes()

    def session(self, **kw) -> sandbox.SandboxWorkspace:
        """hydrate, work, check diff and persist; returns the workspace,
        still open, and leaves the snapshot in self.out."""
        root = self.path("workspace")
        ws = sandbox.hydrate_workspace(io.BytesIO(self.data), root, **kw)
        self.addCleanup(ws.discard)
        self.assertEqual(ws.root, root)
        self.assertEqual(read_tree(root), read_tree(self.reference()))
        work(root)
        self.assertEqual([(c.kind, c.path) for c in ws.diff()], WANT)
        self.out = self.path(f"next-{ws.mode}.tar")
        sandbox.persist_workspace(root, self.out, skip=["node_modules"])
        self.assertEqual([(c.kind, c.path) for c in wsnap.diff(self.data, self.out)],
                         [("M", "README.md"), ("D", "data.bin")])
        return ws

    def reference(self) -> str:
        ref = self.path("reference")
        if not os.path.exists(ref):
            wsnap.export(self.data, ref)
        return ref

    def test_mount(self) -> None:
        self.require_fuse()
        ws = self.session()
        self.assertEqual((ws.mode, ws.reason), ("mount", None))
        self.assertTrue(ws.mounted)
        self.assertTrue(is_mounted(ws.root))
        ws.discard()
        self.assertFalse(ws.mounted)
        self.assertNothingMounted()
        self.assertEqual(os.listdir(ws.root), [])

    def test_fallback_without_fuse(self) -> None:
        with mock.patch.object(sandbox, "fuse_available", return_value=False):
            with self.assertLogs("wsnap", "INFO") as logs:
                ws = self.session()
        self.assertEqual(ws.mode, "export")
        self.assertEqual(ws.reason, "/dev/fuse is not available")
        self.assertIn("/dev/fuse is not available", logs.output[0])
        self.assertFalse(ws.mounted)
        self.assertNothingMounted()
        ws.discard()
        self.assertIn("README.md", os.listdir(ws.root))  # plain files stay

    def test_mount_false_and_same_snapshot_either_way(self) -> None:
        self.require_fuse()
        ws = self.session(mount=False)
        self.assertEqual((ws.mode, ws.reason), ("export", "mount=False"))
        exported = self.out
        ws.discard()
        os.rename(ws.root, self.path("old"))
        ws = self.session()
        self.assertEqual(ws.mode, "mount")
        self.assertEqual(wsnap.diff(exported, self.out), [])
        ws.discard()
        self.assertNothingMounted()

    def test_with_block_and_stream_out(self) -> None:
        self.require_fuse()
        buf = io.BytesIO()
        with self.assertRaises(KeyError):
            with sandbox.hydrate_workspace(self.data, self.path("w")) as ws:
                work(ws.root)
                ws.pack(buf, skip=["node_modules"])
                raise KeyError("agent failed")
        self.assertNothingMounted()
        self.assertEqual(len(wsnap.diff(self.write("s.tar", self.data), buf.getvalue())), 2)

    def test_rejected_in_both_modes(self) -> None:
        for kw in ({}, {"mount": False}):
            with self.subTest(**kw):
                root = self.path("w")
                with self.assertRaises(wsnap.UnsafeTarMemberError) as cm:
                    sandbox.hydrate_workspace(EVIL, root, **kw)
                self.assertEqual(str(cm.exception), "unsafe tar member '../evil': parent traversal")
                self.assertFalse(os.path.exists(root) and os.listdir(root))
        self.assertNothingMounted()

    def test_persist_a_plain_directory(self) -> None:
        root = self.reference()
        out = self.path("p.tar.gz")
        sandbox.persist_workspace(root, out)
        self.assertEqual(wsnap.check(out).compression, "gzip")
        self.assertEqual(wsnap.diff(self.data, out), [])
        buf = io.BytesIO()
        sandbox.persist_workspace(root, buf, skip=["src", "bin"])
        names = {m.path for m in wsnap.ls(buf.getvalue())}
        self.assertFalse(any(n.startswith(("src", "bin")) for n in names))
        self.assertIn("README.md", names)


if __name__ == "__main__":
    unittest.main()
