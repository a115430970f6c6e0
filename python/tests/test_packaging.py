# SPDX-License-Identifier: MIT
"""The package builds and installs offline: the in-tree backend's wheel holds
every module and py.typed, and 'pip install --no-index' of python/ gives an
importable wsnap that runs the binary."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import unittest
import zipfile

from .support import TmpCase, tar_bytes

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_backend():
    spec = importlib.util.spec_from_file_location(
        "wsnap_build", os.path.join(HERE, "build_backend", "wsnap_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def has_pip() -> bool:
    return subprocess.run([sys.executable, "-m", "pip", "--version"],
                          capture_output=True).returncode == 0


class Packaging(TmpCase):
    def test_wheel_contents(self) -> None:
        backend = load_backend()
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        name = backend.build_wheel(self.tmp)
        self.assertEqual(name, "wsnap-0.1.0-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(self.tmp, name)) as z:
            names = set(z.namelist())
            record = z.read("wsnap-0.1.0.dist-info/RECORD").decode()
            meta = z.read("wsnap-0.1.0.dist-info/METADATA").decode()
        modules = {f"wsnap/{f}" for f in os.listdir(os.path.join(HERE, "wsnap"))
                   if f.endswith(".py") or f == "py.typed"}
        self.assertIn("wsnap/py.typed", modules)
        self.assertTrue(modules <= names, modules - names)
        self.assertIn("Requires-Python: >=3.9", meta)
        for n in names - {"wsnap-0.1.0.dist-info/RECORD"}:
            self.assertIn(n + ",sha256=", record)
        self.assertEqual(backend.build_wheel(self.tmp), name)  # reproducible

    @unittest.skipUnless(has_pip(), "pip is not available to this python")
    def test_pip_install_offline(self) -> None:
        target = self.path("site")
        p = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir",
             "--disable-pip-version-check", "--target", target, HERE],
            capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(os.path.join(target, "wsnap", "py.typed")))
        env = dict(os.environ, PYTHONPATH=target)
        p = subprocess.run(
            [sys.executable, "-c",
             "import wsnap, sys; print(wsnap.__file__); "
             "print(wsnap.check(sys.stdin.buffer).members)"],
            input=tar_bytes([("a", "file", b"a", 0o644)]),
            capture_output=True, env=env, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        where, members = p.stdout.decode().split()
        self.assertTrue(where.startswith(target), where)
        self.assertEqual(members, "1")


if __name__ == "__main__":
    unittest.main()
