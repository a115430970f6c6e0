# SPDX-License-Identifier: MIT
"""The PEP 517 build backend of the wsnap package, standard library only.

Why not setuptools: pip builds a package in an isolated environment into
which it installs the backend from an index, so ``pip install ./python``
with setuptools needs network (or ``--no-build-isolation``). This backend
lies in the tree (``backend-path`` in pyproject.toml) and needs nothing:
the install works offline, in any venv, on Python 3.9 and later.

It builds one pure-Python wheel of the ``wsnap`` directory (every ``.py``
file and ``py.typed``), an sdist of the tree, and editable wheels (a
``.pth`` file naming this directory, PEP 660). The metadata comes from the
``[project]`` table of pyproject.toml, read by :func:`_project`: only
``key = "string"`` lines, which is all the table uses.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "wsnap"
TAG = "py3-none-any"

# Fixed timestamp for archive entries, so that a build is reproducible.
_EPOCH = (2026, 1, 1, 0, 0, 0)


def _project() -> Dict[str, str]:
    """The ``key = "value"`` pairs of the [project] table."""
    out: Dict[str, str] = {}
    section = None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line.strip("[]").strip()
                continue
            if section != "project":
                continue
            key, sep, value = line.partition("=")
            value = value.strip()
            if not sep or len(value) < 2 or value[0] != '"' or value[-1] != '"':
                raise ValueError(f"pyproject.toml [project]: cannot read {line!r}")
            out[key.strip()] = value[1:-1]
    for key in ("name", "version"):
        if key not in out:
            raise ValueError(f"pyproject.toml [project] has no {key}")
    return out


def _dist_info(meta: Dict[str, str]) -> str:
    return f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"


def _metadata(meta: Dict[str, str]) -> bytes:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {meta['name']}",
        f"Version: {meta['version']}",
    ]
    if "description" in meta:
        lines.append(f"Summary: {meta['description']}")
    if "requires-python" in meta:
        lines.append(f"Requires-Python: {meta['requires-python']}")
    if "license" in meta:
        lines.append(f"License: {meta['license']}")
    return ("\n".join(lines) + "\n").encode()


def _package_files() -> List[str]:
    """Paths relative to HERE of what the wheel installs."""
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(HERE, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                files.append(os.path.relpath(os.path.join(dirpath, name), HERE))
    return files


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(data)}"


def _dist_info_files(meta: Dict[str, str]) -> List[Tuple[str, bytes]]:
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: wsnap_build\n"
        "Root-Is-Purelib: true\n"
        f"Tag: {TAG}\n"
    ).encode()
    return [("METADATA", _metadata(meta)), ("WHEEL", wheel)]


def _write_wheel(directory: str, entries: List[Tuple[str, bytes]]) -> str:
    meta = _project()
    info = _dist_info(meta)
    name = f"{meta['name'].replace('-', '_')}-{meta['version']}-{TAG}.whl"
    records = []
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in entries + [
            (f"{info}/{n}", d) for n, d in _dist_info_files(meta)
        ]:
            zi = zipfile.ZipInfo(arcname, _EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
            records.append(_record_line(arcname, data))
        records.append(f"{info}/RECORD,,")
        zi = zipfile.ZipInfo(f"{info}/RECORD", _EPOCH)
        zi.external_attr = 0o644 << 16
        z.writestr(zi, ("\n".join(records) + "\n").encode())
    return name


def _read(rel: str) -> bytes:
    with open(os.path.join(HERE, rel), "rb") as f:
        return f.read()


# -- PEP 517 ----------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    meta = _project()
    info = _dist_info(meta)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in _dist_info_files(meta):
        with open(os.path.join(metadata_directory, info, name), "wb") as f:
            f.write(data)
    return info


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    entries = [(rel.replace(os.sep, "/"), _read(rel)) for rel in _package_files()]
    return _write_wheel(wheel_directory, entries)


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    meta = _project()
    base = f"{meta['name'].replace('-', '_')}-{meta['version']}"
    files = ["pyproject.toml", "build_backend/wsnap_build.py"] + _package_files()
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel, data in [("PKG-INFO", _metadata(meta))] + [(f, _read(f)) for f in files]:
            ti = tarfile.TarInfo(f"{base}/{rel.replace(os.sep, '/')}")
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = int(time.mktime(_EPOCH + (0, 0, -1)))
            t.addfile(ti, io.BytesIO(data))
    return name


# -- PEP 660 ----------------------------------------------------------------


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    pth = (HERE + "\n").encode()
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", pth)])
