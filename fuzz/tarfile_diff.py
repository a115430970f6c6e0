#!/usr/bin/env python3
"""Differential check: wsnap against Python's tarfile (the reference's
reader) over fuzz corpora.

    python3 fuzz/tarfile_diff.py WSNAP DIR...

For every input of the DIRs (without the fuzzers' "WSNP" options prefix)
that 'wsnap ls --json' accepts and tarfile can read (tarfile has no zstd or
lz4), both must see the same members: same normalized path, type, size,
symlink target and presented mode (policy.md 7.6); and 'wsnap export'
must write every file with the bytes tarfile reads for it. A member only one of
them sees, or sees differently, is an archive that a check on one side and
an extraction on the other would read differently: the checked snapshot
would not be the one extracted. Prints each difference; exits 1 if any.
Inputs wsnap refuses are not compared (being stricter is the point).
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile


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
                contents[k] = t.extractfile(m).read()
            else:
                v = ("other", None, None, None)
            view[k] = v
    return view, contents


def compare_bytes(wsnap, path, contents, scratch):
    """exports the archive and compares every file with tarfile's bytes"""
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
                    return "%r: exported bytes differ from tarfile's" % (
                        k[:80])
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    return None


def compare(ws, tf):
    for k, v in tf.items():
        if k not in ws:
            return "only tarfile sees %r %r" % (k[:80], v)
        if ws[k] != v:
            return "%r: wsnap %r, tarfile %r" % (k[:80], ws[k], v)
    for k in ws:
        if k not in tf and not any(x.startswith(k + "/") for x in tf):
            return "only wsnap sees %r" % k[:80]
    return None


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    wsnap, dirs = sys.argv[1], sys.argv[2:]
    seen = accepted = compared = diffs = 0
    scratch = tempfile.mkdtemp(prefix="tarfile_diff.")
    try:
        diffs, seen, accepted, compared = walk(wsnap, dirs, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("tarfile_diff: %d inputs, %d accepted by wsnap, %d compared, "
          "%d differences" % (seen, accepted, compared, diffs))
    return 1 if diffs else 0


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
            try:
                tf, contents = tarfile_view(data)
            except (tarfile.TarError, EOFError, OSError, ValueError):
                continue  # zstd, lz4, or something only tarfile refuses
            compared += 1
            why = compare(ws, tf) or compare_bytes(wsnap, p, contents,
                                                   scratch)
            if why:
                diffs += 1
                print("DIFF %s: %s" % (p, why))
    return diffs, seen, accepted, compared


if __name__ == "__main__":
    sys.exit(main())
