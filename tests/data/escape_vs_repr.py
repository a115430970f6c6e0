#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every code point through wsnap's escaping against Python's repr.

    escape_vs_repr.py ESCAPE_LINES

ESCAPE_LINES is the tests/unit/escape_lines.c program (ctest passes
it). policy.md section 2: a name is quoted like Python's repr of the name
decoded with surrogateescape, where each invalid byte shows as \\xHH
instead of the \\udcXX surrogate; ls and diff print the same without the
quotes. For every Unicode scalar value c this checks the names a<c>b
(quoted '...'), '<c> (quoted "..." unless c is ", then '...' with \\')
and <c>" (quoted '...'), in both quote styles and bare; and every
surrogate U+D800-U+DFFF and every byte 0x80-0xFF as the invalid bytes
they are in UTF-8.

The printability table in wsnap is generated from a Python's unicodedata
(scripts/gen_unicode.py). When this Python has another Unicode version the
comparison would be meaningless, so the test fails and says so.
"""
import re
import subprocess
import sys
import unicodedata

BATCH = 0x10000  # code points per run of the helper
MAX_REPORTS = 20


def repr_of(s):
    """policy.md's quoting of the surrogateescape-decoded name s."""
    r = repr(s)
    # a test name is one code point between ASCII letters or quotes, so a
    # \udcXX in its repr is always surrogateescape's: an invalid byte
    if "\\udc" in r:
        r = re.sub(r"\\udc([89a-f][0-9a-f])", r"\\x\1", r)
    return r


def expected(raw):
    """(repr, bare) for the bytes raw. Bare is repr without the quotes and
    with quote characters as they are: the repr of the pieces between
    quote characters, which repr leaves alone."""
    s = raw.decode("utf-8", "surrogateescape")
    r = repr_of(s)
    if "'" not in s and '"' not in s:
        return r, r[1:-1]
    return r, "".join(p if p in ("'", '"') else repr_of(p)[1:-1]
                      for p in re.split("(['\"])", s))


def names_for(cp):
    if 0xD800 <= cp <= 0xDFFF:
        enc = chr(cp).encode("utf-8", "surrogatepass")  # invalid UTF-8
    else:
        enc = chr(cp).encode("utf-8")
    return [b"a" + enc + b"b", b"'" + enc, enc + b'"']


def run_batch(helper, names):
    data = b"".join(n.hex().encode() + b"\n" for n in names)
    p = subprocess.run([helper], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        sys.exit("escape_vs_repr: %s exits %d: %s"
                 % (helper, p.returncode, p.stderr.decode(errors="replace")))
    try:
        text = p.stdout.decode("utf-8")  # strict: no invalid UTF-8 out
    except UnicodeDecodeError as e:
        sys.exit("escape_vs_repr: output is not valid UTF-8: %s" % e)
    lines = text.split("\n")
    if lines[-1] != "":
        sys.exit("escape_vs_repr: output does not end in a newline")
    return lines[0], lines[1:-1]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    helper = sys.argv[1]
    mine = unicodedata.unidata_version
    bad = checked = 0
    batches = [range(lo, lo + BATCH) for lo in range(0, 0x110000, BATCH)]
    for cps in batches:
        names = [n for cp in cps for n in names_for(cp)]
        if cps.start == 0:
            names += [bytes([b]) for b in range(0x80, 0x100)]
            names += [b"x" + bytes([b]) + b"'" for b in range(0x80, 0x100)]
        head, lines = run_batch(helper, names)
        if head != "unicode " + mine:
            sys.exit("escape_vs_repr: FAIL: wsnap's table was generated "
                     "from %s but this Python (%s) has Unicode %s; run "
                     "scripts/gen_unicode.py with this Python and commit "
                     "core/base/unicode_table.h, or run the test with the "
                     "Python the table came from"
                     % (head, sys.executable, mine))
        if len(lines) != 2 * len(names):
            sys.exit("escape_vs_repr: %d output lines for %d names"
                     % (len(lines), len(names)))
        for i, raw in enumerate(names):
            want_repr, want_bare = expected(raw)
            for got, want, kind in ((lines[2 * i], want_repr, "repr"),
                                    (lines[2 * i + 1], want_bare, "bare")):
                checked += 1
                if got == want:
                    continue
                bad += 1
                if bad <= MAX_REPORTS:
                    print("MISMATCH %s of %r: wsnap %s, Python %s"
                          % (kind, raw, ascii(got), ascii(want)))
    if bad:
        sys.exit("escape_vs_repr: FAIL: %d of %d escapings differ from "
                 "Python's repr" % (bad, checked))
    print("escape_vs_repr: %d escapings of all 0x110000 code points agree "
          "with Python %s's repr (Unicode %s)"
          % (checked, sys.version.split()[0], mine))


if __name__ == "__main__":
    main()
