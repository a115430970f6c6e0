# SPDX-License-Identifier: MIT
"""wsnap for Python: validated tar snapshots of workspaces, mounted,
hydrated, compared and packed by the ``wsnap`` binary.

Every function runs the binary (``$WSNAP_BIN``, else ``wsnap`` on PATH)
and reads its ``--json`` output, or its exit status and one-line message
where a subcommand has no ``--json`` yet; nothing here judges an archive
itself. Archives are paths, bytes or binary file objects (streamed to the
binary's standard input). Failures raise :class:`UnsafeTarMemberError`
(rejected; the OpenAI Agents SDK's shape), :class:`WsnapIOError` or
:class:`WsnapUsageError`, all :class:`WsnapError`.

    import wsnap
    with wsnap.hydrate("snap.tar", "ws") as ws:
        ...                       # change files under ws/
        print(ws.diff())          # [Change(kind='A', path='new.txt', ...)]
        ws.pack("next.tar")

The drop-in for an agent sandbox's hydrate/persist is :mod:`wsnap.sandbox`;
see ``doc/python.md``.
"""

from __future__ import annotations

from ._cli import Archive, binary
from .api import check, diff, export, ls, pack, strip_prefix, unmount
from .errors import UnsafeTarMemberError, WsnapError, WsnapIOError, WsnapUsageError
from .mounts import Mount, Workspace, fuse_available, hydrate, mount
from .types import Change, ExportSummary, Member, Node, Summary

__version__ = "0.1.0"

__all__ = [
    "Archive",
    "Change",
    "ExportSummary",
    "Member",
    "Mount",
    "Node",
    "Summary",
    "UnsafeTarMemberError",
    "Workspace",
    "WsnapError",
    "WsnapIOError",
    "WsnapUsageError",
    "binary",
    "check",
    "diff",
    "export",
    "fuse_available",
    "hydrate",
    "ls",
    "mount",
    "pack",
    "strip_prefix",
    "unmount",
]
