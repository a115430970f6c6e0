# SPDX-License-Identifier: MIT
"""The one place that knows how the ``wsnap`` binary talks.

Everything else in the package calls :func:`call` with a subcommand, its
options and its operands, and gets back the JSON records the binary printed
or one of the exceptions of :mod:`wsnap.errors`. This module:

* finds the binary: ``$WSNAP_BIN``, else ``wsnap`` on ``PATH``;
* streams an archive given as bytes or a binary file object to the binary's
  standard input (operand ``-``), and the binary's standard output to a
  writable file object (``pack DIR -``), never through a temporary file;
* asks for ``--json`` where the subcommand's ``--help`` lists it. Today
  that is check, ls, export and diff; mount, hydrate, unmount, pack and
  strip-prefix have no ``--json`` yet, and for them the outcome is the exit
  status plus the one ``wsnap: <message>`` line on standard error
  (``doc/cli.md``). When the binary gains ``--json`` there, it is picked up
  from ``--help`` and its error record is read instead, with no change
  elsewhere;
* maps the exit status to the exception (2 usage, 3 rejected, 4 I/O).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import threading
from decimal import Decimal
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import (
    UnsafeTarMemberError,
    WsnapError,
    WsnapIOError,
    WsnapUsageError,
)

#: An archive: a path, its bytes, or a binary file object open for reading.
Archive = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
#: A path on disk (``str`` or :class:`os.PathLike`).
PathArg = Union[str, "os.PathLike[str]"]

_CHUNK = 1 << 16

EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_IO = 4


def binary() -> str:
    """The wsnap binary to run: ``$WSNAP_BIN``, else ``wsnap`` on PATH.

    Raises FileNotFoundError when there is neither.
    """
    env = os.environ.get("WSNAP_BIN")
    if env:
        return env
    found = shutil.which("wsnap")
    if not found:
        raise FileNotFoundError(
            "wsnap binary not found: set WSNAP_BIN or put wsnap on PATH"
        )
    return found


def path_arg(p: PathArg) -> str:
    """A path as an operand: ``-`` would mean standard input, so a file
    named ``-`` is passed as ``./-``."""
    if isinstance(p, (bytes, bytearray, memoryview)):
        raise TypeError("paths are str or os.PathLike, not bytes")
    s = os.fspath(p)
    if not isinstance(s, str):
        raise TypeError("paths are str or os.PathLike[str]")
    if s == "":
        raise ValueError("empty path")
    return "./-" if s == "-" else s


def _is_stream(obj: Any) -> bool:
    return hasattr(obj, "read") and not isinstance(obj, (str, bytes))


#: Where an archive is written: a path, or a binary file object.
Output = Union[str, "os.PathLike[str]", IO[bytes]]


def output(out: Output) -> Tuple[str, Optional[IO[bytes]]]:
    """The operand for out and the stream that standard output goes to:
    (path, None), or ('-', out) for a binary file object."""
    if isinstance(out, (str, os.PathLike)):
        return path_arg(out), None
    if not hasattr(out, "write") or isinstance(out, io.TextIOBase):
        raise TypeError("out is a path or a binary file object open for writing")
    return "-", out


class Source:
    """An archive operand: a path (passed as is) or bytes / a binary file
    object (passed as ``-`` and fed to standard input).

    A file object is read from its current position; :meth:`rewind` puts a
    seekable one back there, so that it can be fed again (a workspace's
    ``diff()`` reads the archive a second time).
    """

    def __init__(self, archive: Archive) -> None:
        self.data: Optional[bytes] = None
        self.stream: Optional[IO[bytes]] = None
        self.path: Optional[str] = None
        self._start: Optional[int] = None
        if isinstance(archive, (bytes, bytearray, memoryview)):
            self.data = bytes(archive)
        elif _is_stream(archive):
            if isinstance(archive, io.TextIOBase):
                raise TypeError("an archive file object must be binary")
            self.stream = archive  # type: ignore[assignment]
            try:
                if archive.seekable():  # type: ignore[union-attr]
                    self._start = archive.tell()  # type: ignore[union-attr]
            except (AttributeError, OSError, ValueError):
                self._start = None
        else:
            self.path = path_arg(archive)  # type: ignore[arg-type]

    @property
    def arg(self) -> str:
        return self.path if self.path is not None else "-"

    @property
    def piped(self) -> bool:
        return self.path is None

    def rewind(self) -> bool:
        """Makes the source readable again from the start; False when it
        cannot be (a file object that is not seekable)."""
        if self.stream is None:
            return True
        if self._start is None:
            return False
        self.stream.seek(self._start)
        return True

    def feed(self, pipe: IO[bytes]) -> None:
        """Writes the archive to pipe, then closes it. The binary may stop
        reading early (a rejection found in the first headers): a broken
        pipe ends the feed quietly."""
        try:
            if self.data is not None:
                view = memoryview(self.data)
                for off in range(0, len(view), _CHUNK):
                    pipe.write(view[off : off + _CHUNK])
            else:
                assert self.stream is not None
                while True:
                    chunk = self.stream.read(_CHUNK)
                    if not chunk:
                        break
                    if not isinstance(chunk, (bytes, bytearray, memoryview)):
                        raise TypeError("an archive file object must be binary")
                    pipe.write(chunk)
        except BrokenPipeError:
            pass
        finally:
            try:
                pipe.close()
            except BrokenPipeError:
                pass


@dataclasses.dataclass
class Result:
    """What one run of the binary gave."""

    argv: List[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    json: bool
    records: List[Dict[str, Any]]


_help_cache: Dict[Tuple[str, str], str] = {}


def _help(cmd: str) -> str:
    """``wsnap CMD --help``, once per binary and subcommand."""
    exe = binary()
    key = (exe, cmd)
    if key not in _help_cache:
        r = subprocess.run(
            [exe, cmd, "--help"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        _help_cache[key] = r.stdout.decode("utf-8", "replace")
    return _help_cache[key]


def has_option(cmd: str, option: str) -> bool:
    """Whether ``wsnap CMD --help`` lists option (``--json``, ``--discard``)."""
    pattern = r"(?<![\w-])" + re.escape(option) + r"(?![\w-])"
    return re.search(pattern, _help(cmd)) is not None


def _pump(src: IO[bytes], out: List[bytes]) -> None:
    out.append(src.read())


def _run(
    argv: List[str],
    source: Optional[Source],
    sink: Optional[IO[bytes]],
) -> Tuple[int, bytes, bytes]:
    """Runs argv with source on standard input and standard output into
    sink (or captured); returns (status, stdout, stderr)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if source is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    feed_error: List[BaseException] = []
    err: List[bytes] = []

    def feed() -> None:
        assert source is not None and proc.stdin is not None
        try:
            source.feed(proc.stdin)
        except BaseException as e:  # re-raised below, after the wait
            feed_error.append(e)

    threads = [threading.Thread(target=_pump, args=(proc.stderr, err))]
    if source is not None:
        threads.append(threading.Thread(target=feed))
    for t in threads:
        t.daemon = True
        t.start()
    out = b""
    try:
        assert proc.stdout is not None
        if sink is None:
            out = proc.stdout.read()
        else:
            while True:
                chunk = proc.stdout.read(_CHUNK)
                if not chunk:
                    break
                sink.write(chunk)
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for t in threads:
            t.join()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    if feed_error:
        raise feed_error[0]
    return proc.returncode, out, b"".join(err)


def _records(stdout: bytes, strict: bool) -> List[Dict[str, Any]]:
    """The JSON lines of stdout, numbers with a fraction read exactly. A
    line that is not JSON raises when strict (the run succeeded: its output
    must be whole), else is left out (a failed run may stop mid-line)."""
    recs = []
    for line in stdout.decode("utf-8", "surrogateescape").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line, parse_float=Decimal)
        except ValueError:
            if strict:
                raise WsnapError(f"wsnap printed a line that is not JSON: {line!r}")
            continue
        if isinstance(rec, dict):
            recs.append(rec)
    return recs


def call(
    cmd: str,
    options: Sequence[str] = (),
    operands: Sequence[str] = (),
    *,
    source: Optional[Source] = None,
    sink: Optional[IO[bytes]] = None,
    ok: Sequence[int] = (0,),
    want_json: bool = True,
) -> Result:
    """Runs ``wsnap CMD [--json] OPTIONS -- OPERANDS``.

    source feeds standard input (an operand ``-``); sink receives standard
    output (then no ``--json`` is asked, the output being the data).
    Returns the result when the status is one of ok, else raises the
    exception of the status. ``records`` holds the JSON lines when
    ``--json`` was used.
    """
    if source is not None and not source.piped:
        source = None
    use_json = want_json and sink is None and has_option(cmd, "--json")
    argv = [binary(), cmd]
    if use_json:
        argv.append("--json")
    argv.extend(options)
    argv.append("--")
    argv.extend(operands)
    status, out, err = _run(argv, source, sink)
    records = _records(out, status in ok) if use_json else []
    res = Result(argv, status, out, err, use_json, records)
    if status not in ok:
        raise error_for(res)
    return res


# -- errors -----------------------------------------------------------------

_PREFIX = "wsnap: "
_errnos: Dict[str, int] = {}


def _errno_of(message: str) -> Optional[int]:
    """The errno whose text ends message ('...: No such file or
    directory'), as the binary appends strerror() to I/O messages."""
    if not _errnos:
        for n in range(1, 256):
            text = os.strerror(n)
            if not text.startswith("Unknown error"):
                _errnos.setdefault(text, n)
    head, sep, tail = message.rpartition(": ")
    return _errnos.get(tail) if sep else None


def _stderr_lines(stderr: bytes) -> Tuple[Optional[str], Optional[str]]:
    """(message, hint) from the binary's 'wsnap: ...' lines."""
    message = hint = None
    for line in stderr.decode("utf-8", "replace").splitlines():
        if not line.startswith(_PREFIX):
            continue
        text = line[len(_PREFIX) :]
        if text.startswith("hint: "):
            hint = hint or text[len("hint: ") :]
        elif text.startswith("detail: "):
            continue
        elif message is None:
            message = text.lstrip("\r")
    return message, hint


def _parse_rejection(text: str) -> Optional[Tuple[str, str]]:
    """(member, reason) of "unsafe tar member '<m>': <reason>", the member
    quoted like Python's repr (policy.md section 2). Names with bytes that
    are not UTF-8 read back as U+00XX here; the JSON record is exact."""
    head = "unsafe tar member "
    if not text.startswith(head):
        return None
    s = text[len(head) :]
    if not s or s[0] not in "'\"":
        return None
    i = 1
    while i < len(s) and s[i] != s[0]:
        i += 2 if s[i] == "\\" else 1
    if i >= len(s) or not s[i + 1 :].startswith(": "):
        return None
    try:
        member = ast.literal_eval(s[: i + 1])
    except (SyntaxError, ValueError):
        return None
    reason = s[i + 3 :]
    # targets in reasons are escaped like names, without quotes
    if "\\" in reason:
        try:
            reason = ast.literal_eval("'" + reason.replace("'", "\\'") + "'")
        except (SyntaxError, ValueError):
            pass
    return member, reason


def _usage_text(text: str, cmd: str) -> str:
    """'check: option ... (see 'wsnap check --help')' -> 'option ...',
    the text of the JSON record."""
    if text.startswith(cmd + ": "):
        text = text[len(cmd) + 2 :]
    for tail in (f" (see 'wsnap {cmd} --help')", " (see 'wsnap --help')"):
        if text.endswith(tail):
            text = text[: -len(tail)]
    return text


def error_for(res: Result) -> WsnapError:
    """The exception for a run that failed: from its JSON error record
    when there is one, else from its exit status and stderr line."""
    cmd = res.argv[1] if len(res.argv) > 1 else ""
    text, hint = _stderr_lines(res.stderr)
    rec = next((r for r in res.records if r.get("ok") is False), None)
    common: Dict[str, Any] = {"returncode": res.returncode, "command": res.argv}
    if rec is not None:
        hint = rec.get("hint") or hint
        kind = rec.get("error")
        if kind == "rejected":
            return UnsafeTarMemberError(
                member=rec["member"], reason=rec["reason"], hint=hint, **common
            )
        message = str(rec.get("message", text or ""))
        if kind == "usage":
            return WsnapUsageError(message, hint=hint, **common)
        if kind == "io":
            errno = rec.get("errno")
            if not isinstance(errno, int):
                errno = _errno_of(message)
            return WsnapIOError(message, errno=errno, hint=hint, **common)
    rc = res.returncode
    if rc < 0:
        return WsnapError(f"wsnap {cmd} killed by signal {-rc}", hint=hint, **common)
    if text is None:
        text = f"wsnap {cmd} exited with status {rc}"
    if rc == EXIT_REJECTED:
        parsed = _parse_rejection(text)
        if parsed:
            return UnsafeTarMemberError(
                member=parsed[0], reason=parsed[1], hint=hint, **common
            )
    elif rc == EXIT_USAGE:
        return WsnapUsageError(_usage_text(text, cmd), hint=hint, **common)
    elif rc == EXIT_IO:
        return WsnapIOError(text, errno=_errno_of(text), hint=hint, **common)
    return WsnapError(text, hint=hint, **common)
