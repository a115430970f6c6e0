# SPDX-License-Identifier: MIT
"""Keyword arguments -> command-line options, named like the CLI's.

The policy options of ``doc/policy.md`` section 6, as every function that
reads an archive takes them:

==========================  ==========================================
keyword                     option
==========================  ==========================================
allow_external_symlinks     ``--allow-external-symlinks`` (bool)
no_symlinks                 ``--no-symlinks`` (bool)
skip                        ``--skip P`` (a path or a list of them)
root_name                   ``--root-name R``
reject_paths                ``--reject-path R`` (a list)
reject_symlinks             ``--reject-symlink P`` (a list)
max_members                 ``--max-members N``
max_total_size              ``--max-total-size BYTES``
max_file_size               ``--max-file-size BYTES``
max_path_length             ``--max-path-length BYTES``
max_depth                   ``--max-depth N``
==========================  ==========================================

A limit is an int, or a string the CLI reads (``"64G"``, ``"unlimited"``);
``None`` or ``False`` leaves an option at its default. Values are checked by
the binary: one it refuses raises :class:`wsnap.WsnapUsageError`.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping

_FLAGS = {
    "allow_external_symlinks": "--allow-external-symlinks",
    "no_symlinks": "--no-symlinks",
}
_LISTS = {
    "skip": "--skip",
    "reject_paths": "--reject-path",
    "reject_symlinks": "--reject-symlink",
}
_VALUES = {
    "root_name": "--root-name",
    "max_members": "--max-members",
    "max_total_size": "--max-total-size",
    "max_file_size": "--max-file-size",
    "max_path_length": "--max-path-length",
    "max_depth": "--max-depth",
}

#: The names of the policy keyword arguments.
POLICY_KEYWORDS = frozenset(_FLAGS) | frozenset(_LISTS) | frozenset(_VALUES)


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        raise TypeError(f"{name} takes a number or a string, not a bool")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (str, os.PathLike)):
        s = os.fspath(value)
        if isinstance(s, str):
            return s
    raise TypeError(f"{name} takes a str, not {type(value).__name__}")


def _items(name: str, value: Any) -> Iterable[Any]:
    if isinstance(value, (str, os.PathLike)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{name} takes a path or a list of paths") from None


def check_keywords(kwargs: Mapping[str, Any], allowed: Iterable[str], func: str) -> None:
    """Raises TypeError for a keyword func does not take, as Python does."""
    extra = sorted(set(kwargs) - set(allowed))
    if extra:
        raise TypeError(f"{func}() got an unexpected keyword argument {extra[0]!r}")


def policy_options(kwargs: Mapping[str, Any], func: str) -> List[str]:
    """The ``--name=value`` options for the policy keywords in kwargs (any
    other keyword is a TypeError)."""
    check_keywords(kwargs, POLICY_KEYWORDS, func)
    out: List[str] = []
    for name in sorted(kwargs):
        value = kwargs[name]
        if value is None or value is False:
            continue
        if name in _FLAGS:
            if value is not True:
                raise TypeError(f"{name} takes a bool")
            out.append(_FLAGS[name])
        elif name in _LISTS:
            out.extend(f"{_LISTS[name]}={_text(name, v)}" for v in _items(name, value))
        else:
            out.append(f"{_VALUES[name]}={_text(name, value)}")
    return out


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> Dict[str, Any]:
    """base with override's keywords on top."""
    d = dict(base)
    d.update(override)
    return d
