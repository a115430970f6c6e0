# SPDX-License-Identifier: MIT
"""The subcommands that run and return: check, ls, export, diff, pack,
strip-prefix and unmount.

An archive is a path, its bytes, or a binary file object open for reading
(read from its current position to the end); bytes and file objects are
streamed to the binary's standard input, never written to a temporary file
by this package. Policy keywords are those of :mod:`wsnap._options`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from . import _cli
from ._cli import Archive, PathArg, Source
from ._options import policy_options
from .errors import WsnapError
from .types import Change, ExportSummary, Member, Summary

__all__ = ["check", "ls", "export", "diff", "pack", "strip_prefix", "unmount"]

#: Where pack and strip-prefix write: a path, or a binary file object.
Output = _cli.Output


def _last_ok(res: _cli.Result) -> Dict[str, Any]:
    for rec in reversed(res.records):
        if rec.get("ok") is True:
            return rec
    raise WsnapError(
        f"wsnap {res.argv[1]} printed no result record", command=res.argv
    )


def check(archive: Archive, **policy: Any) -> Summary:
    """Validates the whole archive (``wsnap check``) and returns its
    summary.

    Raises UnsafeTarMemberError when the archive is rejected (also for a
    stream that is not tar: member ``'<tar>'``, ``invalid tar stream``),
    WsnapIOError when it cannot be read, WsnapUsageError for an option
    value the binary refuses.
    """
    src = Source(archive)
    res = _cli.call("check", policy_options(policy, "check"), [src.arg], source=src)
    return Summary.from_json(_last_ok(res))


def ls(archive: Archive, **policy: Any) -> List[Member]:
    """The members as a mount presents them (``wsnap ls``), implicit
    directories included, the root left out, sorted bytewise by path.
    Raises as :func:`check` does."""
    src = Source(archive)
    res = _cli.call("ls", policy_options(policy, "ls"), [src.arg], source=src)
    return [Member.from_json(r) for r in res.records if "path" in r]


def export(
    archive: Archive,
    dest: PathArg,
    *,
    strip_prefix: Optional[str] = None,
    **policy: Any,
) -> ExportSummary:
    """Safe extraction (``wsnap export``, ``doc/export.md``): the whole
    archive is validated first, then written to dest without touching
    anything outside it. A dest that does not exist is built under a
    temporary name and renamed into place on success; an existing one is
    merged into. strip_prefix makes members relative to that path (a
    member outside it rejects the archive).

    Raises as :func:`check` does; an unsafe destination is an
    UnsafeTarMemberError or WsnapIOError as the binary reports it.
    """
    src = Source(archive)
    opts = policy_options(policy, "export")
    if strip_prefix is not None:
        opts.append(f"--strip-prefix={strip_prefix}")
    res = _cli.call("export", opts, [src.arg, _cli.path_arg(dest)], source=src)
    return ExportSummary.from_json(_last_ok(res))


def diff(
    a: Union[Archive, PathArg],
    b: Union[Archive, PathArg],
    *,
    mtime: bool = False,
    full: bool = False,
    **policy: Any,
) -> List[Change]:
    """Compares two snapshots (``wsnap diff``), each an archive or a
    directory, read under the policy; returns the changes from a to b
    sorted by path, empty when they are the same.

    mtime makes a different mtime a change; full reads a workspace
    hydrated from a through its overlay like any directory (by default
    only its upper directory is read). At most one side can be bytes or a
    file object (there is one standard input): two raise ValueError.
    """
    sa, sb = Source(a), Source(b)
    if sa.piped and sb.piped:
        raise ValueError(
            "diff: only one side can be bytes or a file object; "
            "give the other as a path"
        )
    opts = policy_options(policy, "diff")
    if mtime:
        opts.append("--mtime")
    if full:
        opts.append("--full")
    res = _cli.call(
        "diff",
        opts,
        [sa.arg, sb.arg],
        source=sa if sa.piped else (sb if sb.piped else None),
        ok=(0, 1),
    )
    return [Change.from_json(r) for r in res.records if "change" in r]


def pack(
    directory: PathArg,
    out: Output,
    *,
    compress: Optional[str] = None,
    **policy: Any,
) -> None:
    """Makes a snapshot of directory (``wsnap pack``): members ``.`` and
    ``./...`` sorted by name, pax format, ownership zeroed, mtimes kept,
    symlinks stored as symlinks. out is a path (compression follows its
    extension unless compress is given; replaced atomically) or a binary
    file object (the archive is streamed to it, uncompressed unless
    compress: ``"none"``, ``"gzip"``, ``"zstd"``, ``"xz"``).

    The result passes :func:`check` under the same policy keywords: a
    symlink leaving the directory is refused unless
    allow_external_symlinks, skip leaves paths out. What cannot be packed
    (a FIFO, a device) raises UnsafeTarMemberError before anything is
    written.
    """
    opts = policy_options(policy, "pack")
    if compress is not None:
        opts.append(f"--compress={compress}")
    arg, sink = _cli.output(out)
    _cli.call("pack", opts, [_cli.path_arg(directory), arg], sink=sink)

def strip_prefix(src: Archive, dst: Output, prefix: str, **policy: Any) -> None:
    """Writes an uncompressed pax tar of src whose members are relative to
    prefix (``wsnap strip-prefix``, ``doc/policy.md`` section 8). src is an
    archive as for :func:`check`; dst a path (written atomically) or a
    binary file object. A member outside prefix rejects src."""
    source = Source(src)
    opts = policy_options(policy, "strip_prefix") + [f"--prefix={prefix}"]
    arg, sink = _cli.output(dst)
    _cli.call("strip-prefix", opts, [source.arg, arg], source=source, sink=sink)

def unmount(path: PathArg, *, lazy: bool = False, discard: bool = False) -> None:
    """Takes down what :func:`wsnap.mount` or :func:`wsnap.hydrate` set up
    at path (``wsnap unmount``), also the mounts of a daemon that died.

    A busy mount raises WsnapIOError (errno EBUSY) with nothing changed,
    unless lazy. discard drops the changes of a workspace whose own upper
    directory holds them: today's binary always drops them (a fresh upper
    directory is removed at unmount); one that refuses instead gets
    ``--discard``. An upper directory given to hydrate is always kept.
    """
    opts = []
    if lazy:
        opts.append("--lazy")
    if discard and _cli.has_option("unmount", "--discard"):
        opts.append("--discard")
    _cli.call("unmount", opts, [_cli.path_arg(path)])
