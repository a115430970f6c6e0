# SPDX-License-Identifier: MIT
"""Mounts that must come down: :func:`mount` and :func:`hydrate`.

Both return at once with the mount ready (the binary returns only once it
answers) and give an object that is also a context manager: leaving the
``with`` block unmounts, also when it is left by an exception, and a mount
that is still busy then (a file left open in it) is detached lazily, so
that nothing stays mounted. Outside a ``with`` block, call
:meth:`Mount.unmount` or :meth:`Workspace.discard` yourself.

Both need FUSE (``/dev/fuse``, see :func:`fuse_available`); hydrate also
needs an overlay (the kernel's as root, else fuse-overlayfs). The archive
may be a path, bytes or a binary file object (streamed to standard input;
the binary keeps what it needs of a stream for the life of the mount).
"""

from __future__ import annotations

import errno as _errno
import os
import tempfile
from types import TracebackType
from typing import Any, Dict, List, Optional, Sequence, Type, TypeVar

from . import _cli, api
from ._cli import Archive, PathArg, Source
from ._options import merged, policy_options
from .errors import WsnapIOError
from .types import Change

__all__ = ["fuse_available", "mount", "hydrate", "Mount", "Workspace"]


def fuse_available() -> bool:
    """Whether this process can use FUSE: ``/dev/fuse`` exists and opens
    for reading and writing (a container may show the node but deny it)."""
    try:
        fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def _take_down(path: str, discard: bool) -> None:
    """Unmounts path; a busy mount is detached lazily instead."""
    try:
        api.unmount(path, discard=discard)
    except WsnapIOError as e:
        if e.errno != _errno.EBUSY:
            raise
        api.unmount(path, lazy=True, discard=discard)


_H = TypeVar("_H", bound="_Held")


def diff_since(archive: Archive, source: Source, path: str, policy: Dict[str, Any],
               **opts: Any) -> List[Change]:
    """wsnap diff of archive (read again: source rewound) and path."""
    if not source.rewind():
        raise ValueError(
            "diff() reads the archive again: hydrate from a path, "
            "bytes or a seekable file object"
        )
    return api.diff(archive, path, **opts, **policy)


class _Held:
    """What Mount, Workspace and the sandbox's workspace share: a path, and
    a with-block at whose end _close() takes it down, once."""

    path: str
    closed: bool

    def __enter__(self: "_H") -> "_H":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if not self.closed:
            self._close(lazy_if_busy=True)

    def _close(self, lazy_if_busy: bool, lazy: bool = False) -> None:
        raise NotImplementedError

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        state = "closed" if self.closed else "mounted"
        return f"<{type(self).__name__} {self.path!r} {state}>"


class Mount(_Held):
    """A read-only snapshot mounted at :attr:`path` (``wsnap mount``)."""

    def __init__(self, path: str, made_dir: bool) -> None:
        self.path = path
        self.closed = False
        self._made_dir = made_dir

    def unmount(self, *, lazy: bool = False) -> None:
        """Unmounts (WsnapIOError with errno EBUSY while busy, unless
        lazy). A mountpoint that mount() made is removed."""
        self._close(lazy_if_busy=False, lazy=lazy)

    def _close(self, lazy_if_busy: bool, lazy: bool = False) -> None:
        if lazy_if_busy:
            _take_down(self.path, discard=False)
        else:
            api.unmount(self.path, lazy=lazy)
        self.closed = True
        if self._made_dir:
            try:
                os.rmdir(self.path)
            except OSError:
                pass  # a lazy unmount may still hold it; never more than rmdir


def mount(
    archive: Archive,
    mountpoint: Optional[PathArg] = None,
    *,
    options: Sequence[str] = (),
    **policy: Any,
) -> Mount:
    """Validates archive and mounts it read-only (``wsnap mount``).

    mountpoint is an existing empty directory; without one, a fresh
    directory is made (``tempfile.mkdtemp``) and removed at unmount.
    options are FUSE mount options (``-o``: ``"allow_other"``,
    ``"uid=1000"``, ...). A rejected archive raises UnsafeTarMemberError
    with nothing mounted; a mount failure raises WsnapIOError.

    Use as ``with wsnap.mount(archive) as m: ... m.path ...``.
    """
    src = Source(archive)
    opts = policy_options(policy, "mount")
    for o in options:
        opts.extend(["-o", o])
    made = mountpoint is None
    path = tempfile.mkdtemp(prefix="wsnap-mount-") if made else os.path.abspath(
        _cli.path_arg(mountpoint)  # type: ignore[arg-type]
    )
    try:
        _cli.call("mount", opts, [src.arg, path], source=src)
    except BaseException:
        if made:
            os.rmdir(path)
        raise
    return Mount(path, made)


class Workspace(_Held):
    """A writable workspace over a snapshot (``wsnap hydrate``) at
    :attr:`path`: the snapshot is the read-only lower layer, every change
    lands in the upper directory (:attr:`upper` when one was given, else
    one of hydrate's own, removed with the changes at unmount).

    :meth:`diff` and :meth:`pack` take the workspace's policy keywords
    unless given others.
    """

    def __init__(
        self,
        path: str,
        archive: Archive,
        source: Source,
        upper: Optional[str],
        policy: Dict[str, Any],
    ) -> None:
        self.path = path
        self.upper = upper
        self.policy = policy
        self.closed = False
        self._archive = archive
        self._source = source

    def _live(self) -> None:
        if self.closed:
            raise ValueError(f"workspace {self.path!r} is no longer mounted")

    def diff(self, *, mtime: bool = False, full: bool = False, **policy: Any) -> List[Change]:
        """The changes since hydrate (``wsnap diff ARCHIVE WORKSPACE``,
        from the upper directory alone when the archive is the file
        hydrated under the same policy). The archive is read again: bytes
        are fed again, a file object is sought back to where hydrate began
        reading it; one that cannot seek raises ValueError."""
        self._live()
        return diff_since(self._archive, self._source, self.path, merged(self.policy, policy),
                          mtime=mtime, full=full)

    def pack(self, out: api.Output, *, compress: Optional[str] = None, **policy: Any) -> None:
        """Packs the workspace as it is now into out (``wsnap pack``, see
        :func:`wsnap.pack`); the workspace stays mounted."""
        self._live()
        api.pack(self.path, out, compress=compress, **merged(self.policy, policy))

    def discard(self, *, lazy: bool = False) -> None:
        """Unmounts the workspace (overlay, then snapshot, then state) and
        drops the changes that are only in its own upper directory; an
        upper directory given to hydrate is kept. Busy: WsnapIOError
        (errno EBUSY) with nothing changed, unless lazy."""
        self._close(lazy_if_busy=False, lazy=lazy)

    def _close(self, lazy_if_busy: bool, lazy: bool = False) -> None:
        if lazy_if_busy:
            _take_down(self.path, discard=True)
        else:
            api.unmount(self.path, lazy=lazy, discard=True)
        self.closed = True


def hydrate(
    archive: Archive,
    workspace: PathArg,
    upper: Optional[PathArg] = None,
    *,
    force: bool = False,
    overlay: Optional[str] = None,
    **policy: Any,
) -> Workspace:
    """A writable workspace over archive at workspace (``wsnap hydrate``).

    workspace is made when missing and must be empty unless force (its
    files are then hidden until unmounted). upper keeps the changes in
    that directory, which unmount keeps (hydrating again with it brings
    them back). overlay is ``"auto"`` (default), ``"kernel"`` or
    ``"fuse"``. A rejected archive raises UnsafeTarMemberError with
    nothing mounted.

    Use as ``with wsnap.hydrate(archive, ws) as w: ...; w.pack(out)``:
    leaving the block unmounts and drops what was not packed.
    """
    src = Source(archive)
    opts = policy_options(policy, "hydrate")
    upper_abs = None
    if upper is not None:
        upper_abs = os.path.abspath(_cli.path_arg(upper))
        opts.append(f"--upper={upper_abs}")
    if force:
        opts.append("--force")
    if overlay is not None:
        opts.append(f"--overlay={overlay}")
    path = os.path.abspath(_cli.path_arg(workspace))
    kept: Archive = archive
    if src.path is not None:
        kept = os.path.abspath(src.path)  # diff() from another cwd
    _cli.call("hydrate", opts, [src.arg, path], source=src)
    return Workspace(path, kept, src, upper_abs, dict(policy))
