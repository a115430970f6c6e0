# SPDX-License-Identifier: MIT
"""The exceptions of the wsnap package.

Every failure of the ``wsnap`` binary becomes one of these, chosen by its
exit status (``doc/cli.md``): 2 is a :class:`WsnapUsageError`, 3 an
:class:`UnsafeTarMemberError`, 4 a :class:`WsnapIOError`; anything else
(a signal, an unexpected status) is a plain :class:`WsnapError`. The
message is the binary's own, without its ``wsnap: `` prefix.
"""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = [
    "WsnapError",
    "UnsafeTarMemberError",
    "WsnapIOError",
    "WsnapUsageError",
]


class WsnapError(Exception):
    """A failure reported by the ``wsnap`` binary.

    Attributes:
        message: the binary's message (``str(err)`` for every class but
            :class:`UnsafeTarMemberError`, whose text follows the SDK).
        returncode: the binary's exit status (negative for a signal).
        command: the argument vector that was run.
        hint: the binary's ``wsnap: hint: ...`` line, without the prefix,
            when it printed one (an option that would let the archive
            through, ``--lazy`` for a busy mount, ...), else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        returncode: Optional[int] = None,
        command: Optional[Sequence[str]] = None,
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.command = list(command) if command is not None else None
        self.hint = hint


class UnsafeTarMemberError(WsnapError, ValueError):
    """The archive was rejected (exit status 3).

    The shape of the OpenAI Agents SDK's ``UnsafeTarMemberError``: a
    ``ValueError`` with ``.member`` and ``.reason`` whose message is
    ``unsafe tar member '<member>': <reason>`` (the member as Python's
    ``repr`` shows it). A stream that cannot be read as tar is member
    ``'<tar>'``, reason ``'invalid tar stream'`` (``doc/policy.md``).
    """

    def __init__(
        self,
        *,
        member: str,
        reason: str,
        returncode: Optional[int] = 3,
        command: Optional[Sequence[str]] = None,
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(
            f"unsafe tar member {member!r}: {reason}",
            returncode=returncode,
            command=command,
            hint=hint,
        )
        self.member = member
        self.reason = reason


class WsnapIOError(WsnapError, OSError):
    """An I/O or system error (exit status 4): a file that cannot be read,
    a destination that cannot be written, no space, a mount failure, a busy
    mount.

    ``.errno`` is the error number when the binary named it (its message
    ends in the system's text for it, or its JSON carries ``errno``), else
    ``None``; ``str(err)`` is always the binary's message.
    """

    def __init__(
        self,
        message: str,
        *,
        errno: Optional[int] = None,
        returncode: Optional[int] = 4,
        command: Optional[Sequence[str]] = None,
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(
            message, returncode=returncode, command=command, hint=hint
        )
        # Only errno: with strerror set too, OSError.__str__ would reword
        # the message as '[Errno N] ...'.
        self.errno = errno  # type: ignore[assignment]


class WsnapUsageError(WsnapError, ValueError):
    """The binary refused its command line (exit status 2): an option value
    it does not accept (``max_members=-1``), a missing operand."""
