# SPDX-License-Identifier: MIT
"""A drop-in for an agent sandbox's hydrate/persist (``doc/python.md``).

A sandbox backend of the OpenAI Agents SDK persists its workspace to a tar
and hydrates it by extracting that tar (``safe_extract_tarfile``). Here::

    ws = hydrate_workspace(archive, root)      # mount, or a safe export
    ...                                        # the agent works in root
    persist_workspace(root, out, skip=[...])   # the next snapshot
    ws.discard()                               # or: with hydrate_workspace(...)

:func:`hydrate_workspace` mounts a writable workspace at root (nothing is
copied: files are read from the archive when first opened) where FUSE is
available, and otherwise exports the archive safely into root, the same
result as the SDK's extraction; :attr:`SandboxWorkspace.mode` says which it
did and :attr:`SandboxWorkspace.reason` why. Rejections raise
:class:`wsnap.UnsafeTarMemberError`, the SDK's own shape.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional

from . import api
from ._cli import Archive, PathArg, Source
from ._options import merged
from .mounts import Workspace, _Held, diff_since, fuse_available, hydrate
from .types import Change

__all__ = ["SandboxWorkspace", "hydrate_workspace", "persist_workspace"]

log = logging.getLogger("wsnap")

MOUNTED = "mount"
EXPORTED = "export"


class SandboxWorkspace(_Held):
    """The workspace :func:`hydrate_workspace` made at :attr:`root`.

    :attr:`mode` is ``"mount"`` (a hydrated overlay: a mount until
    :meth:`discard`) or ``"export"`` (plain files, as extraction leaves
    them); :attr:`reason` says why an export was done. :meth:`diff` and
    :meth:`pack` work alike in both modes. Also a context manager that
    discards on leaving.
    """

    def __init__(
        self,
        root: str,
        mode: str,
        reason: Optional[str],
        workspace: Optional[Workspace],
        archive: Archive,
        source: Source,
        policy: Dict[str, Any],
    ) -> None:
        self.root = self.path = root
        self.mode = mode
        self.reason = reason
        self.workspace = workspace
        self.policy = policy
        self.closed = False
        self._archive = archive
        self._source = source

    @property
    def mounted(self) -> bool:
        """True while root is a mount."""
        return self.mode == MOUNTED and not self.closed

    def diff(self, **opts: Any) -> List[Change]:
        """The changes made in root since it was hydrated."""
        if self.workspace is not None:
            return self.workspace.diff(**opts)
        return diff_since(self._archive, self._source, self.root, merged(self.policy, opts))

    def pack(self, out: api.Output, **opts: Any) -> None:
        """Packs root into out (see :func:`persist_workspace`)."""
        persist_workspace(self.root, out, **{**self.policy, **opts})

    def discard(self) -> None:
        """A mount is taken down with its unpacked changes, leaving root an
        empty directory; an export is left as it is (plain files that the
        backend removes as it would after extraction)."""
        self._close(lazy_if_busy=False)

    def _close(self, lazy_if_busy: bool, lazy: bool = False) -> None:
        if self.workspace is not None and not self.workspace.closed:
            self.workspace._close(lazy_if_busy, lazy)
        self.closed = True

    def __repr__(self) -> str:
        return f"<SandboxWorkspace {self.root!r} mode={self.mode}>"


def hydrate_workspace(
    archive: Archive,
    root: PathArg,
    *,
    mount: bool = True,
    **policy: Any,
) -> SandboxWorkspace:
    """Hydrates the workspace at root from archive (a path, bytes or a
    binary file object, as the SDK's ``hydrate_workspace(data)`` gets it).

    With mount (the default) and FUSE available, root becomes a writable
    workspace over the snapshot (:func:`wsnap.hydrate`; root empty or
    missing). Otherwise the archive is exported into root
    (:func:`wsnap.export`): validated whole first, nothing written outside
    root. The result's ``mode`` says which was done; a fallback is also
    logged (logger ``wsnap``, level INFO). Policy keywords as for
    :func:`wsnap.check`.
    """
    src = Source(archive)
    root_abs = os.path.abspath(os.fspath(root))
    kept: Archive = os.path.abspath(src.path) if src.path is not None else archive
    reason = None
    if not mount:
        reason = "mount=False"
    elif not fuse_available():
        reason = "/dev/fuse is not available"
    if reason is None:
        ws = hydrate(archive, root_abs, **policy)
        return SandboxWorkspace(root_abs, MOUNTED, None, ws, kept, src, dict(policy))
    log.info("wsnap: exporting %s into %s (%s)", src.arg, root_abs, reason)
    api.export(archive, root_abs, **policy)
    return SandboxWorkspace(root_abs, EXPORTED, reason, None, kept, src, dict(policy))


def persist_workspace(
    root: PathArg,
    out: api.Output,
    *,
    skip: Any = (),
    compress: Optional[str] = None,
    **policy: Any,
) -> None:
    """Packs the workspace at root into out (a path, or a binary file
    object that receives the tar stream), leaving out what is within each
    path of skip (as the SDK's persist skips its relpaths). root may be a
    mounted workspace (its merged view is packed; it stays mounted) or a
    plain directory. The result passes :func:`wsnap.check` under the same
    policy keywords."""
    api.pack(root, out, compress=compress, skip=skip or None, **policy)
