# SPDX-License-Identifier: MIT
"""What the wsnap functions return: plain frozen dataclasses built from the
binary's ``--json`` records (``doc/cli.md``).

Names (``path``, ``target``) are ``str`` exactly as the JSON gives them:
valid UTF-8 as is, each byte that is not valid UTF-8 as the lone surrogate
``\\udcXX`` that :func:`os.fsdecode` produces, so :func:`os.fsencode`
gives back the bytes of the archive.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any, Dict, Mapping, Optional

__all__ = ["Summary", "ExportSummary", "Member", "Node", "Change"]



def _raw() -> Any:
    """The ``raw`` field: the whole record, left out of == and repr."""
    return dataclasses.field(default_factory=dict, compare=False, repr=False)


def _mode(value: Any) -> int:
    """``"0755"`` -> 0o755."""
    return int(str(value), 8)


def _ns(value: Any) -> int:
    """Seconds (a JSON number, read exactly as a Decimal) -> nanoseconds."""
    return int(Decimal(value) * 1000000000)


@dataclasses.dataclass(frozen=True)
class Summary:
    """``wsnap check --json``: what the validated archive holds.

    ``raw`` is the whole JSON record, for keys newer binaries add.
    """

    members: int
    directories: int
    implicit_directories: int
    files: int
    symlinks: int
    bytes: int
    compression: Optional[str]
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> "Summary":
        return cls(
            members=int(rec["members"]),
            directories=int(rec["directories"]),
            implicit_directories=int(rec.get("implicit_directories", 0)),
            files=int(rec["files"]),
            symlinks=int(rec["symlinks"]),
            bytes=int(rec["bytes"]),
            compression=rec.get("compression"),
            raw=dict(rec),
        )


@dataclasses.dataclass(frozen=True)
class ExportSummary:
    """``wsnap export --json``: what was written to ``dest``.

    ``created`` is true when ``dest`` did not exist (it was built under a
    temporary name and renamed into place); ``directories_kept`` counts
    directories that were already there, ``replaced`` the entries that
    were in the way and were replaced.
    """

    dest: str
    created: bool
    members: int
    directories: int
    directories_kept: int
    files: int
    symlinks: int
    replaced: int
    bytes: int
    raw: Dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> "ExportSummary":
        return cls(
            dest=str(rec["dest"]),
            created=bool(rec["created"]),
            members=int(rec["members"]),
            directories=int(rec["directories"]),
            directories_kept=int(rec["directories_kept"]),
            files=int(rec["files"]),
            symlinks=int(rec["symlinks"]),
            replaced=int(rec["replaced"]),
            bytes=int(rec["bytes"]),
            raw=dict(rec),
        )


@dataclasses.dataclass(frozen=True)
class Member:
    """One line of ``wsnap ls --json``: a member as a mount presents it.

    ``type`` is ``"file"``, ``"dir"`` or ``"symlink"``; ``mode`` the
    permission bits as presented (``0o644``); ``mtime`` seconds as a float
    and ``mtime_ns`` the same instant exactly, in nanoseconds; ``target``
    is set for symlinks only.
    """

    path: str
    type: str
    mode: int
    size: int
    mtime: float
    mtime_ns: int
    target: Optional[str] = None

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"

    @property
    def is_file(self) -> bool:
        return self.type == "file"

    @property
    def is_symlink(self) -> bool:
        return self.type == "symlink"

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> "Member":
        return cls(
            path=rec["path"],
            type=rec["type"],
            mode=_mode(rec["mode"]),
            size=int(rec["size"]),
            mtime=float(rec["mtime"]),
            mtime_ns=_ns(rec["mtime"]),
            target=rec.get("target"),
        )


@dataclasses.dataclass(frozen=True)
class Node:
    """One side of a :class:`Change`: type, mode as presented, size, and
    the target of a symlink."""

    type: str
    mode: int
    size: int
    target: Optional[str] = None

    @classmethod
    def from_json(cls, rec: Optional[Mapping[str, Any]]) -> "Optional[Node]":
        if rec is None:
            return None
        return cls(
            type=rec["type"],
            mode=_mode(rec["mode"]),
            size=int(rec["size"]),
            target=rec.get("target"),
        )


@dataclasses.dataclass(frozen=True)
class Change:
    """One line of ``wsnap diff --json``.

    ``kind`` is the JSON's ``change``: ``"A"`` only in B, ``"D"`` only in
    A, ``"M"`` same type but different content, mode or target, ``"T"``
    type changed. ``old`` is the A side (``None`` for ``"A"``), ``new`` the
    B side (``None`` for ``"D"``).
    """

    kind: str
    path: str
    old: Optional[Node]
    new: Optional[Node]

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> "Change":
        return cls(
            kind=rec["change"],
            path=rec["path"],
            old=Node.from_json(rec.get("old")),
            new=Node.from_json(rec.get("new")),
        )
