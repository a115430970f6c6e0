# SPDX-License-Identifier: MIT
"""Raw tar crafting for wsnap's test corpora (python3 only, no libraries).

Builds tar streams byte by byte so that anything can be made: bad checksums,
base-256 numbers, malformed pax records, chained GNU long names, sparse maps
in any order. Used by tests/data/make_malformed.py, fuzz/make_corpus.py and
the limit tests. Everything is deterministic (fixed mtimes, no host data) so
that regenerating the corpora gives the same bytes.

Field offsets are those of POSIX ustar and of the old GNU header
(https://www.gnu.org/software/tar/manual/html_node/Standard.html).
"""

import bz2
import gzip
import lzma
import struct
import subprocess
import zlib

BLOCK = 512
MTIME = 1764410400  # 2025-11-29 10:00:00 UTC, as in the docs

# ustar field offsets and widths
NAME, NAME_W = 0, 100
MODE, MODE_W = 100, 8
UID, UID_W = 108, 8
GID, GID_W = 116, 8
SIZE, SIZE_W = 124, 12
MTIME_OFF, MTIME_W = 136, 12
CHKSUM, CHKSUM_W = 148, 8
TYPEFLAG = 156
LINKNAME, LINKNAME_W = 157, 100
MAGIC = 257
UNAME, GNAME = 265, 297
PREFIX, PREFIX_W = 345, 155
# old GNU header: sparse map and real size
GNU_SPARSE = 386  # 4 entries of (offset[12], numbytes[12])
GNU_ISEXTENDED = 482
GNU_REALSIZE = 483

USTAR_MAGIC = b"ustar\x0000"
GNU_MAGIC = b"ustar  \x00"


def b(s):
    """bytes of a str (UTF-8, surrogateescape so any byte can be named)"""
    if isinstance(s, bytes):
        return s
    return s.encode("utf-8", "surrogateescape")


def octal(n, width):
    """n as width-1 octal digits and a NUL"""
    s = b"%0*o" % (width - 1, n)
    if len(s) > width - 1:
        raise ValueError("%d does not fit %d octal digits" % (n, width - 1))
    return s + b"\0"


def octal_full(n, width):
    """n as width octal digits without terminator (GNU tar does this)"""
    s = b"%0*o" % (width, n)
    if len(s) > width:
        raise ValueError("does not fit")
    return s


def base256(n, width):
    """GNU base-256: first byte 0x80 (positive) or 0xff (negative), then
    big-endian two's complement. Values beyond the field are cut to it, so
    2**63 and more can be written into a 12-byte field."""
    if n < 0:
        v = (1 << (8 * width)) + n
        raw = v.to_bytes(width, "big")
        return b"\xff" + raw[1:]
    raw = n.to_bytes(width, "big")
    if raw[0] != 0:
        raise ValueError("too big for base-256 field")
    return b"\x80" + raw[1:]


def put(block, off, data, width=None):
    data = b(data)
    if width is not None and len(data) > width:
        raise ValueError("field overflow at %d" % off)
    block[off:off + len(data)] = data


def checksum(block):
    """the unsigned header sum with the checksum field as spaces"""
    return sum(block[:CHKSUM]) + 8 * 32 + sum(block[CHKSUM + CHKSUM_W:])


def set_checksum(block, value=None):
    if value is None:
        value = checksum(block)
    block[CHKSUM:CHKSUM + CHKSUM_W] = b"%06o\0 " % value


def header(name, typeflag=b"0", mode=0o644, size=0, mtime=MTIME,
           linkname=b"", prefix=b"", magic=USTAR_MAGIC, uid=0, gid=0,
           fields=None, chksum=None):
    """One 512-byte header. Numeric arguments may be bytes (used raw).
    fields: {offset: bytes} written last, before the checksum. chksum:
    None for the right one, an int to force a value, b'...' raw bytes."""
    h = bytearray(BLOCK)
    put(h, NAME, name, NAME_W)

    def num(off, width, v):
        put(h, off, v if isinstance(v, (bytes, bytearray)) else
            octal(v, width), width)

    num(MODE, MODE_W, mode)
    num(UID, UID_W, uid)
    num(GID, GID_W, gid)
    num(SIZE, SIZE_W, size)
    num(MTIME_OFF, MTIME_W, mtime)
    put(h, TYPEFLAG, typeflag, 1)
    put(h, LINKNAME, linkname, LINKNAME_W)
    put(h, MAGIC, magic, 8)
    put(h, PREFIX, prefix, PREFIX_W)
    for off, v in (fields or {}).items():
        put(h, off, v)
    if isinstance(chksum, (bytes, bytearray)):
        put(h, CHKSUM, chksum, CHKSUM_W)
    else:
        set_checksum(h, chksum)
    return bytes(h)


def pad(data):
    data = b(data)
    return data + b"\0" * (-len(data) % BLOCK)


def member(name, data=b"", typeflag=b"0", **kw):
    """header plus padded data; size defaults to len(data)"""
    data = b(data)
    kw.setdefault("size", len(data))
    return header(name, typeflag, **kw) + pad(data)


def file(name, data=b"", mode=0o644, **kw):
    return member(name, data, b"0", mode=mode, **kw)


def dir(name, mode=0o755, **kw):
    return member(name, b"", b"5", mode=mode, **kw)


def symlink(name, target, **kw):
    return member(name, b"", b"2", mode=0o777, linkname=target, **kw)


def hardlink(name, target, **kw):
    return member(name, b"", b"1", linkname=target, **kw)


def end(blocks=2):
    return b"\0" * (BLOCK * blocks)


def pax_record(key, value):
    """one 'LEN key=value\\n' record with the right LEN"""
    body = b" " + b(key) + b"=" + b(value) + b"\n"
    n = len(body)
    digits = len(str(n))
    while len(str(n + digits)) != digits:
        digits += 1
    return str(n + digits).encode() + body


def pax(records, name=b"./PaxHeaders/x", typeflag=b"x", **kw):
    """an extended header: records is a list of (key, value) pairs or raw
    bytes used as the header's data"""
    if isinstance(records, (bytes, bytearray)):
        data = bytes(records)
    else:
        data = b"".join(pax_record(k, v) for k, v in records)
    return member(name, data, typeflag, **kw)


def gnu_long(name, typeflag=b"L", nul=True, **kw):
    """a GNU ././@LongLink record carrying name (L) or link name (K)"""
    data = b(name) + (b"\0" if nul else b"")
    kw.setdefault("magic", GNU_MAGIC)
    return member(b"././@LongLink", data, typeflag, mode=0o644, **kw)


def _num12(v):
    """a 12-byte numeric field: octal for an int, raw for bytes"""
    return v if isinstance(v, (bytes, bytearray)) else octal(v, 12)


def gnu_sparse(name, runs, realsize, data, extended=None, **kw):
    """an old-GNU sparse member ('S'): up to 4 runs in the header, the rest
    in extension blocks of 21 runs (extended=list of run lists, or None to
    split automatically). Runs are written as given, in any order."""
    head, rest = runs[:4], runs[4:]
    fields = {}
    for i, (off, n) in enumerate(head):
        fields[GNU_SPARSE + 24 * i] = _num12(off)
        fields[GNU_SPARSE + 24 * i + 12] = _num12(n)
    if extended is None:
        extended = [rest[i:i + 21] for i in range(0, len(rest), 21)]
    if extended:
        fields[GNU_ISEXTENDED] = b"\1"
    fields[GNU_REALSIZE] = _num12(realsize)
    kw.setdefault("magic", GNU_MAGIC)
    kw.setdefault("size", len(data))
    out = header(name, b"S", fields=fields, **kw)
    for i, ext in enumerate(extended):
        blk = bytearray(BLOCK)
        for j, (off, n) in enumerate(ext):
            blk[24 * j:24 * j + 12] = _num12(off)
            blk[24 * j + 12:24 * j + 24] = _num12(n)
        if i + 1 < len(extended):
            blk[504] = 1
        out += bytes(blk)
    return out + pad(data)


def pax_sparse_10(name, runs, realsize, data, map_text=None):
    """a pax 1.0 sparse member: the map is decimal lines at the start of
    the data (map_text overrides it), then the runs' bytes"""
    if map_text is None:
        lines = [str(len(runs))]
        for off, n in runs:
            lines += [str(off), str(n)]
        map_text = ("\n".join(lines) + "\n").encode()
    body = pad(map_text) + data
    recs = [("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"),
            ("GNU.sparse.name", name),
            ("GNU.sparse.realsize", str(realsize))]
    return pax(recs) + member(b"GNUSparseFile.0/" + b(name)[-80:], body)


def pax_sparse_01(name, runs, realsize, data, map_value=None):
    """a pax 0.1 sparse member: GNU.sparse.map="off,len,off,len..." """
    if map_value is None:
        map_value = ",".join("%d,%d" % r for r in runs)
    recs = [("GNU.sparse.size", str(realsize)),
            ("GNU.sparse.numblocks", str(len(runs))),
            ("GNU.sparse.map", map_value), ("GNU.sparse.name", name)]
    return pax(recs) + member(b"GNUSparseFile.0/" + b(name)[-80:], data)


# ---------------------------------------------------------------- compression

def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def bz(data):
    return bz2.compress(data, 9)


def xz(data):
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64)


def _tool(argv, data):
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def zst(data):
    """zstd with a content checksum (so a flipped one must be caught)"""
    return _tool(["zstd", "-q", "-c", "-19", "--check", "--no-progress"],
                 data)


def lz4(data):
    """lz4 frame with a content checksum"""
    return _tool(["lz4", "-q", "-c", "-9"], data)



def zstd_skippable(data, nibble=0):
    """a zstd (and lz4) skippable frame holding data"""
    return ((0x184D2A50 | nibble).to_bytes(4, "little") +
            len(data).to_bytes(4, "little") + data)

def decompresses(name, data):
    """True when the reference tool for name's extension accepts data
    whole (used to prove that a corrupted stream is really corrupt)"""
    ext = name.rsplit(".", 1)[1]
    tool = {"gz": ["gzip", "-t"], "bz2": ["bzip2", "-t"], "xz": ["xz", "-t"],
            "zst": ["zstd", "-t", "-q"], "lz4": ["lz4", "-t", "-q"]}[ext]
    r = subprocess.run(tool, input=data, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


COMPRESSORS = {"gz": gz, "bz2": bz, "xz": xz, "zst": zst, "lz4": lz4}

# A zstd frame written by hand: raw blocks carry given bytes, RLE blocks
# repeat one byte up to 128 KiB per 4 bytes of input, so tens of GiB of
# zeros take about a MiB. No content checksum, no content size.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_BLOCK_MAX = 128 * 1024


def _zstd_block_header(last, btype, size):
    v = (1 if last else 0) | (btype << 1) | (size << 3)
    return struct.pack("<I", v)[:3]


def zstd_frame(parts, window=(7, 0)):
    """parts: list of ('raw', bytes) or ('rle', byte, count). The frame
    header asks for a window of (8 + mantissa) << (exponent + 7) bytes,
    window=(exponent, mantissa): 128 KiB by default."""
    blocks = []
    for p in parts:
        if p[0] == "raw":
            data = p[1]
            for i in range(0, len(data), ZSTD_BLOCK_MAX):
                chunk = data[i:i + ZSTD_BLOCK_MAX]
                blocks.append((0, len(chunk), chunk))
        else:
            byte, count = p[1], p[2]
            full, rest = divmod(count, ZSTD_BLOCK_MAX)
            blocks.extend([(1, ZSTD_BLOCK_MAX, bytes([byte]))] * full)
            if rest:
                blocks.append((1, rest, bytes([byte])))
    if not blocks:
        blocks.append((0, 0, b""))
    out = [ZSTD_MAGIC, b"\x00", bytes([window[0] << 3 | window[1]])]
    for i, (btype, size, payload) in enumerate(blocks):
        out.append(_zstd_block_header(i == len(blocks) - 1, btype, size))
        out.append(payload)
    return b"".join(out)


# ---------------------------------------------------------------- xz by hand

def _vli(n):
    """an xz variable-length integer"""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _pad4(data):
    return data + b"\0" * (-len(data) % 4)


def xz_set_dict(xz_data, props):
    """xz_data (one stream, as xz() makes it) with the LZMA2 dictionary
    size byte of its first block header set to props (30: 128 MiB, 31:
    192 MiB, 40: 4 GiB - 1) and the header's CRC32 fixed. The encoder
    cannot make such dictionaries cheaply; a decoder must still honour
    what the header declares."""
    d = bytearray(xz_data)
    at = 12  # after the stream header
    size = (d[at] + 1) * 4
    flags = d[at + 1]
    assert flags & 0x03 == 0, "one filter"
    i = at + 2
    for bit in (0x40, 0x80):  # compressed, uncompressed size
        if flags & bit:
            while d[i] & 0x80:
                i += 1
            i += 1
    assert d[i:i + 2] == b"\x21\x01", "LZMA2 with one props byte"
    d[i + 2] = props
    d[at + size - 4:at + size] = struct.pack(
        "<I", zlib.crc32(bytes(d[at:at + size - 4])))
    return bytes(d)


def xz_zeros_bomb(head, chunks, props):
    """an xz stream decoding to head (at most 64 KiB) then chunks times
    ~2 MiB of zeros, ~360 bytes per chunk: one block whose header
    declares the dictionary props byte props (40: 4 GiB), and LZMA2 chunks
    that keep the dictionary, so that a decoder without a memory limit
    fills as much dictionary as it decodes. No check."""
    raw = lzma.compress(b"\0" * (2 << 20), format=lzma.FORMAT_RAW,
                        filters=[{"id": lzma.FILTER_LZMA2,
                                  "dict_size": 1 << 20}])
    ctrl = raw[0]
    unpacked = ((ctrl & 0x1f) << 16 | raw[1] << 8 | raw[2]) + 1
    packed = (raw[3] << 8 | raw[4]) + 1
    # the first LZMA chunk again and again: state reset and props, no
    # dictionary reset (control 0xc0 instead of 0xe0)
    chunk = bytes([0xc0 | (ctrl & 0x1f)]) + raw[1:6 + packed]
    assert 0 < len(head) <= 1 << 16
    body = (b"\x01" + struct.pack(">H", len(head) - 1) + head +
            chunk * chunks + b"\0")
    usize = len(head) + unpacked * chunks
    bh = _pad4(b"\0\x00\x21\x01" + bytes([props]))
    bh = bytes([(len(bh) + 4) // 4 - 1]) + bh[1:]
    bh += struct.pack("<I", zlib.crc32(bh))
    flags = b"\x00\x00"  # check: none
    index = _pad4(b"\x00" + _vli(1) + _vli(len(bh) + len(body)) +
                  _vli(usize))
    index += struct.pack("<I", zlib.crc32(index))
    back = struct.pack("<I", len(index) // 4 - 1) + flags
    return (b"\xfd7zXZ\x00" + flags + struct.pack("<I", zlib.crc32(flags)) +
            _pad4(bh + body) + index + struct.pack("<I", zlib.crc32(back)) +
            back + b"YZ"), usize
