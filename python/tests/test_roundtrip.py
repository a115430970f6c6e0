# SPDX-License-Identifier: MIT
"""The round trip of an agent sandbox: hydrate -> modify -> diff -> pack ->
check -> export with wsnap, against the same scenario done the SDK's way,
with tarfile extraction under filter="data" and a tarfile persist."""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import unittest
from typing import List, Tuple

import wsnap

from .support import TmpCase, Tree, read_tree, sample_bytes

HAS_DATA_FILTER = hasattr(tarfile, "data_filter")
NO_FILTER = (
    "tarfile has no filter='data' (Python 3.11.4+ or 3.12+): "
    "the comparison with tarfile extraction is skipped"
)


def modify(root: str) -> None:
    """What the agent does in the workspace; the same on every side."""
    j = lambda *p: os.path.join(root, *p)  # noqa: E731
    with open(j("src/main.py"), "a") as f:
        f.write("print('changed')\n")
    with open(j("src/new.py"), "w") as f:
        f.write("NEW = 1\n")
    os.unlink(j("secret.txt"))
    os.chmod(j("bin/run"), 0o700)
    os.unlink(j("link-to-readme"))
    with open(j("link-to-readme"), "w") as f:
        f.write("a file now\n")
    os.mkdir(j("newdir"))
    with open(j("newdir/x"), "wb") as f:
        f.write(b"\x00\x01binary")
    shutil.rmtree(j("src/pkg"))
    os.rename(j("data.bin"), j("moved.bin"))
    os.symlink("src/main.py", j("link-new"))
    os.rmdir(j("empty"))
    with open(j("empty"), "w") as f:
        f.write("")


#: What modify() changes, as wsnap diff lists it.
EXPECTED = [
    ("M", "bin/run"),
    ("D", "data.bin"),
    ("T", "empty"),
    ("A", "link-new"),
    ("T", "link-to-readme"),
    ("A", "moved.bin"),
    ("A", "newdir"),
    ("A", "newdir/x"),
    ("D", "secret.txt"),
    ("M", "src/main.py"),
    ("A", "src/new.py"),
    ("D", "src/pkg"),
    ("D", "src/pkg/__init__.py"),
    ("D", "src/pkg/util.py"),
]


def tree_diff(a: Tree, b: Tree) -> List[Tuple[str, str]]:
    """A/D/M/T between two trees read from disk, in Python, sorted by path
    bytewise like wsnap's."""
    out = []
    for p in sorted(set(a) | set(b), key=os.fsencode):
        if p not in b:
            out.append(("D", p))
        elif p not in a:
            out.append(("A", p))
        elif a[p][0] != b[p][0]:
            out.append(("T", p))
        elif a[p] != b[p] and a[p][0] != "dir":
            out.append(("M", p))
        elif a[p][0] == "dir" and a[p][1] != b[p][1]:
            out.append(("M", p))
    return out


def tarfile_extract(archive: str, dest: str) -> None:
    """The SDK's hydrate: extraction with tarfile's data filter."""
    os.mkdir(dest)
    with tarfile.open(archive) as t:
        t.extractall(dest, filter="data")  # type: ignore[call-arg]


def tarfile_persist(root: str, out: str) -> None:
    """The SDK's persist: the workspace tarred as it is."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        t.add(root, arcname=".")


class RoundTrip(TmpCase):
    def setUp(self) -> None:
        super().setUp()
        self.require_fuse()
        self.archive = self.write("snap.tar", sample_bytes())
        self.umask = os.umask(0o022)  # what extraction leaves depends on it
        self.addCleanup(os.umask, self.umask)

    def wsnap_round_trip(self) -> Tuple[List[wsnap.Change], str, Tree]:
        """hydrate -> modify -> diff -> pack -> check -> export; returns the
        changes, the next snapshot and the tree exported from it."""
        ws, nxt, out = self.path("ws"), self.path("next.tar"), self.path("out-wsnap")
        with wsnap.hydrate(self.archive, ws) as w:
            first = read_tree(ws)
            modify(ws)
            changes = w.diff()
            w.pack(nxt)
        self.assertNothingMounted()
        summary = wsnap.check(nxt)
        wsnap.export(nxt, out)
        tree = read_tree(out)
        kinds = [v[0] for v in tree.values()]
        self.assertEqual((summary.files, summary.symlinks, summary.directories),
                         (kinds.count("file"), kinds.count("symlink"), kinds.count("dir")))
        self.first = first
        return changes, nxt, tree

    def test_wsnap_round_trip(self) -> None:
        changes, nxt, tree = self.wsnap_round_trip()
        self.assertEqual([(c.kind, c.path) for c in changes], EXPECTED)
        by = {c.path: c for c in changes}
        self.assertEqual((by["bin/run"].old.mode, by["bin/run"].new.mode), (0o755, 0o700))
        self.assertEqual(by["link-new"].new.target, "src/main.py")
        self.assertEqual(by["empty"].old.type, "dir")
        self.assertEqual(by["empty"].new.type, "file")
        # the next snapshot differs from the first exactly by those changes
        self.assertEqual(wsnap.diff(self.archive, nxt), changes)
        self.assertEqual(tree["src/main.py"][2], b"print('hello')\nprint('changed')\n")
        self.assertEqual(tree["bin/run"][1], 0o700)
        self.assertEqual(tree["link-new"], ("symlink", 0, "src/main.py"))
        self.assertNotIn("src/pkg", tree)

    @unittest.skipUnless(HAS_DATA_FILTER, NO_FILTER)
    def test_same_as_tarfile_with_data_filter(self) -> None:
        changes, nxt, tree = self.wsnap_round_trip()
        # the SDK's way: extract, modify, persist with tarfile, extract again
        b0, b1, bn = self.path("b-first"), self.path("b-ws"), self.path("b-next")
        tarfile_extract(self.archive, b0)
        tarfile_extract(self.archive, b1)
        self.assertEqual(self.first, read_tree(b0), "hydrated workspace != tarfile extraction")
        modify(b1)
        self.assertEqual(tree_diff(read_tree(b0), read_tree(b1)),
                         [(c.kind, c.path) for c in changes])
        # wsnap's diff of the plain directory (a full walk) says the same
        self.assertEqual(wsnap.diff(self.archive, b1), changes)
        b_tar = self.path("b-next.tar")
        tarfile_persist(b1, b_tar)
        tarfile_extract(b_tar, bn)
        self.assertEqual(tree, read_tree(bn))
        # and the two next snapshots hold the same tree, by wsnap's reading
        self.assertEqual(wsnap.diff(nxt, b_tar), [])
        # the modes are those both sanitize to
        for rel, (kind, mode, _) in tree.items():
            if kind == "file":
                self.assertEqual(mode & ~0o755, 0, rel)
                self.assertEqual(mode & 0o600, 0o600, rel)
                self.assertTrue(mode & stat.S_IXUSR or not mode & 0o111, rel)


if __name__ == "__main__":
    unittest.main()
