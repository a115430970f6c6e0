#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential check: wsnap against Python's tarfile (the reference's
reader) and GNU tar over fuzz corpora.

    python3 fuzz/tarfile_diff.py WSNAP DIR...

For every input of the DIRs (without the fuzzers' "WSNP" options prefix)
that 'wsnap ls --json' accepts, the other readers must see the same
members: same normalized path, type, size, symlink target and presented
mode (policy.md 7.6). The readers:

  - tarfile (gzip, bzip2, xz; it has no zstd or lz4): its members, and
    'wsnap export' must write every file with the bytes tarfile reads;
  - GNU tar listing ('tar -tv'): its members, modes included;
  - GNU tar extracting ('tar -x' into a scratch directory): the tree it
    writes (paths, types, sizes, targets; modes aside, as they follow the
    umask and not the presented mode), and the bytes of every file, which
    must be tarfile's (or, where tarfile cannot read the input, those of
    'wsnap export').

A member only one of them sees, or sees differently, is an archive that a
check on one side and an extraction on the other would read differently:
the checked snapshot would not be the one extracted. Prints each
difference; exits 1 if any. Inputs wsnap refuses are not compared (being
stricter is the point); GNU tar failing on an input wsnap accepts is a
difference.
"""

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

# GNU tar's messages and quoting in the C locale: names are printed as C
# strings, every byte outside printable ASCII as an octal escape
C_ENV = dict(os.environ, LC_ALL="C")
# files beyond this are compared by size only (a sparse file may declare
# gigabytes that are holes)
MAX_CONTENT = 64 << 20
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def first_frame_magic(data):
    """the magic of the first frame that is not a skippable one (zstd and
    lz4 share those: magic 0x184D2A5?, a 4-byte length, the bytes)"""
    at = 0
    while (len(data) >= at + 8 and data[at + 1:at + 4] == b"\x2a\x4d\x18"
           and data[at] & 0xf0 == 0x50):
        at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
    return data[at:at + 4]
OWNER_RANGE = re.compile(r"tar: Archive value \d+ is out of [ug]id_t range ")
GNU_FAILED = "tar: Exiting with failure status due to previous errors"


def norm(name):
    return "/".join(c for c in name.split("/") if c not in ("", "."))


def file_mode(mode):
    m = mode & 0o755
    if not m & 0o100:
        m &= ~0o111
    return m | 0o600


def wsnap_view(wsnap, path):
    r = subprocess.run([wsnap, "ls", "--json", path], capture_output=True,
                       timeout=120)
    if r.returncode != 0:
        return None
    view = {}
    lines = r.stdout.decode("utf-8", "surrogateescape").split("\n")
    for line in filter(None, lines):
        o = json.loads(line)
        if "ok" in o:  # the outcome record ends the listing
            continue
        # wsnap's \udcXX for a byte that is not UTF-8 is what tarfile's
        # surrogateescape names hold too
        view[o["path"]] = (o["type"], o["size"] if o["type"] == "file" else None,
                   o.get("target"), o["mode"])
    return view


def tarfile_view(data):
    """members as tarfile reads them, and the bytes of each file"""
    view, contents = {}, {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*",
                      errorlevel=2) as t:
        for m in t:
            k = norm(m.name)
            if k == "":
                continue
            if m.isdir():
                v = ("dir", None, None, "0755")
            elif m.issym():
                v = ("symlink", None, m.linkname, "0777")
            elif m.isreg():
                v = ("file", m.size, None, "%04o" % file_mode(m.mode))
                if m.size <= MAX_CONTENT:
                    contents[k] = t.extractfile(m).read()
            else:
                v = ("other", None, None, None)
            view[k] = v
    return view, contents


# ---------------------------------------------------------------- GNU tar

def gnutar(args, path, data):
    """runs GNU tar on path: (its output, or None and why it failed). It
    detects gzip, bzip2, xz and zstd itself, lz4 has to be named, and so
    has zstd after a skippable frame (what pzstd writes: GNU tar looks
    for the frame magic at the start only, as it cannot detect lz4 at
    all; 'tar --zstd' and 'zstd -dc | tar' read it). Its exit
    status is 2 also when a uid or gid does not fit uid_t (wsnap presents
    no owners): only such messages are let through."""
    first = first_frame_magic(data)
    extra = (["-I", "lz4"] if first == LZ4_MAGIC else
             ["--zstd"] if first == ZSTD_MAGIC and first != data[:4] else [])
    r = subprocess.run(["tar"] + args + extra + ["-f", path],
                       capture_output=True, timeout=120, env=C_ENV)
    if r.returncode == 0:
        return r.stdout, None
    errors = [e for e in r.stderr.decode(errors="replace").splitlines()
              if not OWNER_RANGE.match(e) and e != GNU_FAILED]
    if errors or r.returncode != 2:
        return None, "GNU tar %s failed: %s" % (args[0], "; ".join(
            errors)[:200])
    return r.stdout, None


C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("n"): 10,
             ord("r"): 13, ord("t"): 9, ord("v"): 11}


def c_string(s, i):
    """the C string literal GNU tar's --quoting-style=c prints, its opening
    quote at s[i]: (the raw bytes, the index after the closing quote)"""
    if s[i:i + 1] != b'"':
        raise ValueError("no quoted name")
    out, i = bytearray(), i + 1
    while s[i] != ord('"'):
        c = s[i]
        i += 1
        if c != ord("\\"):
            out.append(c)
            continue
        if 48 <= s[i] <= 55:  # up to three octal digits
            j = i
            while j < i + 3 and 48 <= s[j] <= 55:
                j += 1
            out.append(int(s[i:j], 8) & 0xff)
            i = j
        else:
            out.append(C_ESCAPES.get(s[i], s[i]))
            i += 1
    return bytes(out), i + 1


def perm_bits(p):
    """the permission bits of 'rwxr-x---' (s, t: execute set too)"""
    bits = 0
    for n, ch in enumerate(p):
        if ch not in "-ST":
            bits |= 1 << (8 - n)
    return bits


def gnutar_list_view(path, data):
    """members as 'tar -tv' lists them, or the reason it failed"""
    out, why = gnutar(["--list", "--verbose", "--numeric-owner",
                       "--quoting-style=c"], path, data)
    if why:
        return None, why
    view = {}
    for line in out.splitlines():
        # perms owner size date time "name" [-> "target" | link to "..."]
        try:
            head = line[:line.index(b'"')].split()
            raw, end = c_string(line, line.index(b'"'))
            target = None
            if line[end:].startswith(b" -> "):
                target = c_string(line, end + 4)[0]
        except (ValueError, IndexError):
            return None, "GNU tar -t line not understood: %r" % line[:100]
        k = norm(raw.decode("utf-8", "surrogateescape"))
        if k == "":
            continue
        kind, perms = chr(head[0][0]), head[0][1:].decode()
        if kind == "d":
            v = ("dir", None, None, "0755")
        elif kind == "l":
            v = ("symlink", None,
                 target.decode("utf-8", "surrogateescape"), "0777")
        elif kind in "-C":
            v = ("file", int(head[2]), None,
                 "%04o" % file_mode(perm_bits(perms)))
        else:
            v = ("other", None, None, None)
        view[k] = v
    return view, None


def gnutar_extract_view(path, data, scratch):
    """the tree 'tar -x' writes (modes aside) and the bytes of its files,
    or the reason it failed"""
    dest = os.path.join(scratch, "g")
    shutil.rmtree(dest, ignore_errors=True)
    os.mkdir(dest)
    try:
        why = gnutar(["--extract", "--no-same-owner", "-C", dest], path,
                     data)[1]
        if why:
            return None, None, why
        view, contents = {}, {}
        top = os.fsencode(dest)
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                p = os.path.join(root, name)
                k = os.path.relpath(p, top).decode("utf-8",
                                                   "surrogateescape")
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    v = ("symlink", None,
                         os.readlink(p).decode("utf-8", "surrogateescape"))
                elif stat.S_ISDIR(st.st_mode):
                    v = ("dir", None, None)
                elif stat.S_ISREG(st.st_mode):
                    v = ("file", st.st_size, None)
                    if st.st_size <= MAX_CONTENT:
                        with open(p, "rb") as f:
                            contents[k] = f.read()
                else:
                    v = ("other", None, None)
                view[k] = v
        return view, contents, None
    finally:
        shutil.rmtree(dest, ignore_errors=True)


# ---------------------------------------------------------------- comparing

def compare_bytes(wsnap, path, contents, scratch):
    """exports the archive and compares every file with the given bytes"""
    dest = os.path.join(scratch, "x")
    shutil.rmtree(dest, ignore_errors=True)
    r = subprocess.run([wsnap, "export", path, dest], capture_output=True,
                       timeout=120)
    if r.returncode != 0:
        # a name the filesystem refuses (a component over 255 bytes)
        if b"File name too long" in r.stderr:
            return None
        return "export failed: %s" % r.stderr.decode(errors="replace")[:200]
    try:
        for k, want in contents.items():
            with open(os.path.join(dest, k), "rb") as f:
                if f.read() != want:
                    return "%r: exported bytes differ" % (k[:80])
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    return None


def compare(ws, other, who):
    """ws and the other reader's view agree; wsnap alone may list the
    implicit parent directories of what both see"""
    for k, v in other.items():
        if k not in ws:
            return "only %s sees %r %r" % (who, k[:80], v)
        if ws[k][:len(v)] != v:
            return "%r: wsnap %r, %s %r" % (k[:80], ws[k], who, v)
    for k in ws:
        if k not in other and not any(x.startswith(k + "/") for x in other):
            return "only wsnap sees %r (not %s)" % (k[:80], who)
    return None


def compare_contents(a, b, who):
    for k, want in a.items():
        if k in b and b[k] != want:
            return "%r: %s reads other bytes than tarfile" % (k[:80], who)
    return None


def differences(wsnap, p, data, ws, scratch):
    """the first difference between wsnap's view ws of input p and the
    other readers', or None; and whether tarfile could read it"""
    try:
        tf, tf_contents = tarfile_view(data)
    except (tarfile.TarError, EOFError, OSError, ValueError):
        tf = tf_contents = None  # zstd, lz4, or only tarfile refuses it
    gl, why = gnutar_list_view(p, data)
    if why:
        return why, tf is not None
    gx, gx_contents, why = gnutar_extract_view(p, data, scratch)
    if why:
        return why, tf is not None
    return (tf is not None and compare(ws, tf, "tarfile") or
            compare(ws, gl, "GNU tar -t") or
            compare(ws, gx, "GNU tar -x") or
            tf is not None and compare_contents(tf_contents, gx_contents,
                                                "GNU tar -x") or
            compare_bytes(wsnap, p, gx_contents if tf is None
                          else tf_contents, scratch)), tf is not None


def walk(wsnap, dirs, scratch):
    seen = accepted = compared = diffs = 0
    for d in dirs:
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            try:
                data = open(p, "rb").read()
            except FileNotFoundError:
                continue  # a running fuzzer replaced it
            if data.startswith(b"WSNP"):
                continue
            seen += 1
            ws = wsnap_view(wsnap, p)
            if ws is None:
                continue
            accepted += 1
            why, by_tarfile = differences(wsnap, p, data, ws, scratch)
            compared += by_tarfile
            if why:
                diffs += 1
                print("DIFF %s: %s" % (p, why))
    return diffs, seen, accepted, compared


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    wsnap, dirs = sys.argv[1], sys.argv[2:]
    scratch = tempfile.mkdtemp(prefix="tarfile_diff.")
    try:
        diffs, seen, accepted, compared = walk(wsnap, dirs, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("tarfile_diff: %d inputs, %d accepted by wsnap, %d also read by "
          "tarfile, all by GNU tar, %d differences" % (seen, accepted,
                                                        compared, diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
