# SPDX-License-Identifier: MIT
"""What the tests share: archives built in memory with tarfile, trees read
back from disk, mounts found in /proc/self/mountinfo, and a TestCase whose
temporary directory is unmounted and removed whatever the test did.

The tests run the binary of $WSNAP_BIN (ctest sets it), else wsnap on
PATH; without either they fail, never skip.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import threading
import unittest
from typing import IO, Dict, Iterable, Iterator, List, Optional, Tuple

import wsnap

#: A fixed mtime for what tests make, so that trees compare alike.
MTIME = 1700000000


def wsnap_bin() -> str:
    return wsnap.binary()


def run_bin(*args: str, input: Optional[bytes] = None) -> subprocess.CompletedProcess:
    """The binary run directly, for comparing with what the package says."""
    return subprocess.run(
        [wsnap_bin(), *args], input=input, capture_output=True
    )


def stderr_message(proc: subprocess.CompletedProcess) -> str:
    """The first 'wsnap: ' line of a run, without the prefix."""
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("wsnap: "):
            return line[len("wsnap: ") :]
    raise AssertionError(f"no 'wsnap: ' line in {proc.stderr!r}")


# An entry of an archive to build: (name, kind, payload, mode), kind one of
# 'file' (payload: bytes), 'dir', 'symlink' (payload: target), 'fifo',
# 'hardlink' (payload: target).
Entry = Tuple[str, str, object, int]


def tar_bytes(entries: Iterable[Entry], *, compression: str = "", fmt: int = tarfile.PAX_FORMAT,
              mtime: float = MTIME) -> bytes:
    """An archive of entries, built in memory by tarfile."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + compression, format=fmt) as t:
        for name, kind, payload, mode in entries:
            ti = tarfile.TarInfo(name)
            ti.mode = mode
            ti.mtime = mtime
            data = None
            if kind == "file":
                data = payload if isinstance(payload, bytes) else str(payload).encode()
                ti.size = len(data)
            elif kind == "dir":
                ti.type = tarfile.DIRTYPE
            elif kind == "symlink":
                ti.type = tarfile.SYMTYPE
                ti.linkname = str(payload)
            elif kind == "hardlink":
                ti.type = tarfile.LNKTYPE
                ti.linkname = str(payload)
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            else:
                raise ValueError(kind)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


#: A small snapshot of a workspace: nested directories, an executable, a
#: private file, symlinks to a file and to a directory, an empty file and
#: an empty directory.
SAMPLE: List[Entry] = [
    (".", "dir", None, 0o755),
    ("README.md", "file", b"# sample\n", 0o644),
    ("src", "dir", None, 0o755),
    ("src/main.py", "file", b"print('hello')\n", 0o644),
    ("src/pkg", "dir", None, 0o755),
    ("src/pkg/__init__.py", "file", b"", 0o644),
    ("src/pkg/util.py", "file", b"def f():\n    return 1\n" * 50, 0o644),
    ("bin", "dir", None, 0o755),
    ("bin/run", "file", b"#!/bin/sh\necho run\n", 0o755),
    ("secret.txt", "file", b"private\n", 0o600),
    ("link-to-readme", "symlink", "README.md", 0o777),
    ("link-to-src", "symlink", "src/pkg", 0o777),
    ("empty", "dir", None, 0o755),
    ("data.bin", "file", bytes(range(256)) * 40, 0o644),
]


def sample_bytes(**kw) -> bytes:
    return tar_bytes(SAMPLE, **kw)


# A tree read back: rel path -> (type, permission bits, content or target).
Tree = Dict[str, Tuple[str, int, object]]


def read_tree(root: str, *, modes: bool = True) -> Tree:
    """Every entry under root (root itself left out), symlinks not
    followed; directories carry their mode, files their bytes."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            mode = stat.S_IMODE(st.st_mode) if modes else 0
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", 0, os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode, None)
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    out[rel] = ("file", mode, f.read())
            else:
                out[rel] = ("other", mode, None)
        # os.walk does not descend into symlinked directories: good
    return out


def _unescape_mountinfo(s: str) -> str:
    """Octal escapes of mountinfo ('\\040' for a space)."""
    out, i = [], 0
    while i < len(s):
        code = s[i + 1 : i + 4]
        if s[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mounts() -> List[Tuple[str, str]]:
    """(mount point, type) of every mount this process sees."""
    res = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            res.append((_unescape_mountinfo(fields[4]), fields[sep + 1]))
    return res


def mounts_under(root: str) -> List[str]:
    """Mount points at or below root."""
    root = os.path.realpath(root)
    return [p for p, _ in mounts() if p == root or p.startswith(root + "/")]


def is_mounted(path: str) -> bool:
    return os.path.realpath(path) in [p for p, _ in mounts()]


def fuse_missing_reason() -> Optional[str]:
    if not wsnap.fuse_available():
        return "/dev/fuse is missing or cannot be opened"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing"
    return None


class TmpCase(unittest.TestCase):
    """A test with self.tmp, a fresh directory that is unmounted (lazily,
    deepest mount first) and removed after the test, passed or failed."""

    def setUp(self) -> None:
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="wsnap-py-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(self._unmount_everything)

    def _unmount_everything(self) -> None:
        left = mounts_under(self.tmp)
        if not left:
            return
        # workspaces first ('wsnap unmount' takes down overlay, snapshot
        # and state), then whatever is still there
        for name in sorted(os.listdir(self.tmp)):
            if name.startswith(".") and name.endswith(".wsnap"):
                ws = os.path.join(self.tmp, name[1 : -len(".wsnap")])
                subprocess.run([wsnap_bin(), "unmount", "--lazy", ws], capture_output=True)
        for p in sorted(mounts_under(self.tmp), key=len, reverse=True):
            if subprocess.run(["fusermount3", "-uz", p], capture_output=True).returncode:
                subprocess.run(["umount", "-l", p], capture_output=True)

    def require_fuse(self) -> None:
        """Skips a test that mounts where FUSE is missing; with
        WSNAP_REQUIRE_FUSE=1 it fails instead."""
        why = fuse_missing_reason()
        if why is None:
            return
        if os.environ.get("WSNAP_REQUIRE_FUSE") == "1":
            self.fail(f"{why} and WSNAP_REQUIRE_FUSE=1")
        self.skipTest(why)

    def path(self, *parts: str) -> str:
        return os.path.join(self.tmp, *parts)

    def write(self, rel: str, data: bytes) -> str:
        p = self.path(rel)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def assertNothingMounted(self, root: Optional[str] = None) -> None:
        self.assertEqual(mounts_under(root or self.tmp), [])

#: The members of SAMPLE that count as members (the root does not).
NMEMBERS = len([e for e in SAMPLE if e[0] != "."])


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@contextlib.contextmanager
def pipe_reader(data: bytes) -> Iterator[IO[bytes]]:
    """The read end of a pipe that a thread fills with data: a file object
    that is not seekable and gives its stream once."""
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        with os.fdopen(r, "rb") as f:
            yield f
    finally:
        t.join()
