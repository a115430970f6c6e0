/* SPDX-License-Identifier: MIT */
/*
 * The header region of a member (header.h): the raw header blocks from the
 * member's header position to its data, walked block by block, with the
 * number fields and pax records parsed from the bytes themselves. It knows
 * the tar format and the readers whose views must agree (libarchive, which
 * builds the member, Python's tarfile, the reference the policy restates,
 * and GNU tar); it knows nothing of libarchive's API or of the input.
 *
 * Invariants:
 *  - a region is extension headers, then exactly one main header, then
 *    only what that header announces (GNU sparse extension blocks, or a
 *    pax 1.0 sparse map). Anything libarchive would have glossed over (bad
 *    pax records, special headers it swallows, an ambiguous layout) makes
 *    the walk fail, which the reader reports as '<tar>' invalid tar stream.
 *    "Ambiguous" means that the readers would see different members: 'V'
 *    and 'A' headers, a global pax header that sets names, sizes or sparse
 *    maps, an extension header repeated for one member, a member named (or
 *    linked) both by a GNU long name and by pax, a prefix field only some
 *    of them join, a number field they parse differently, a sparse map
 *    they lay out differently (GNU tar extracting it included: rd_run), a
 *    byte of an extension body's padding that is not zero, a long name
 *    without its NUL, a pax key after blanks, GNU sparse entries in a GNU
 *    header that is not 'S'  (member.c checks the rest:
 *    data behind members that are not regular files, names ending in '/'
 *    on regular files, where a sparse map ends);
 *  - numbers are read from the raw header where libarchive would saturate
 *    them (base-256 beyond int64) or get them wrong (negative fractional
 *    pax times): what overflows is an invalid stream;
 *  - nothing here allocates or reads past the region it is given.
 */
#include "header.h"

#include <limits.h>
#include <string.h>
#include "array.h"

/* ---- numbers ------------------------------------------------------------ */

bool wsnap_tar_all_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * A number field as libarchive and tarfile both read it: base-256 marked
 * 0x80 or 0xff (tarfile knows no other marker), or octal digits between
 * blanks, ended by a NUL or the end of the field. libarchive reads octal
 * up to the first non-digit; tarfile takes the field up to its first NUL
 * and hands it to Python's int(s, 8), which takes "0o17", "1_0" or "+7"
 * and refuses "12x". A header tarfile refuses ends its archive there,
 * silently: the members after it would be seen by libarchive alone. GNU
 * tar skips one leading NUL and reads on ("\0" "0001000" is 512 to it, 0
 * to the others): a field that starts with NUL must be all NUL.
 */
static bool rd_tar_field_ok(const unsigned char *f, size_t n)
{
	size_t i = 0;

	if (f[0] == '\0')
		return wsnap_tar_all_zero(f, n);
	if (f[0] & 0x80)
		return f[0] == 0x80 || f[0] == 0xff;
	while (i < n && (f[i] == ' ' || f[i] == '\t'))
		i++;
	while (i < n && f[i] >= '0' && f[i] <= '7')
		i++;
	while (i < n && (f[i] == ' ' || f[i] == '\t'))
		i++;
	return i == n || f[i] == '\0';
}

/* The number fields tarfile reads in every header block: mode, uid, gid,
 * size, mtime, chksum, devmajor, devminor. */
static bool rd_header_fields_ok(const unsigned char *h)
{
	static const unsigned short fields[][2] = {
		{WSNAP_TAR_OFF(mode), WSNAP_TAR_LEN(mode)},
		{WSNAP_TAR_OFF(uid), WSNAP_TAR_LEN(uid)},
		{WSNAP_TAR_OFF(gid), WSNAP_TAR_LEN(gid)},
		{WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size)},
		{WSNAP_TAR_OFF(mtime), WSNAP_TAR_LEN(mtime)},
		{WSNAP_TAR_OFF(chksum), WSNAP_TAR_LEN(chksum)},
		{WSNAP_TAR_OFF(devmajor), WSNAP_TAR_LEN(devmajor)},
		{WSNAP_TAR_OFF(devminor), WSNAP_TAR_LEN(devminor)},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (!rd_tar_field_ok(h + fields[i][0], fields[i][1]))
			return false;
	return true;
}

/*
 * A ustar numeric field: octal (leading blanks allowed, ends at the first
 * non-digit, as libarchive reads it) or base-256. Negative values and
 * values above INT64_MAX are refused (returns false).
 */
static bool rd_tar_number(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] & 0x40)
			return false; /* negative */
		v = f[0] & 0x3f;
		for (i = 1; i < n; i++) {
			if (v > ((uint64_t)INT64_MAX >> 8))
				return false;
			v = (v << 8) | f[i];
		}
		*out = v;
		return true;
	}
	while (i < n && (f[i] == ' ' || f[i] == '\t'))
		i++;
	if (i < n && (f[i] == '-' || f[i] == '+'))
		return false;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0'); /* 12 digits fit */
	*out = v;
	return true;
}

/* Decimal digits only, at most INT64_MAX. */
static bool rd_dec(const unsigned char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		unsigned d;

		if (p[i] < '0' || p[i] > '9')
			return false;
		d = (unsigned)(p[i] - '0');
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/*
 * A pax time: -?digits(.digits*)?, seconds within int64, fraction to nine
 * digits. The result is the instant floored to whole seconds, as struct
 * timespec has it: "-1.5" is sec -2, nsec 500000000. (libarchive applies
 * the sign to the seconds only and reports sec -1, nsec 500000000, that
 * is -0.5 s, and "-0.5" as +0.5 s; tarfile reads -1.5.)
 */
static bool rd_pax_time(const unsigned char *p, size_t n, int64_t *sec,
			uint32_t *nsec)
{
	const unsigned char *dot = memchr(p, '.', n);
	size_t ilen = dot ? (size_t)(dot - p) : n, i;
	bool neg = false;
	uint32_t frac = 0, scale = 100000000;
	uint64_t v;

	if (ilen && p[0] == '-') {
		neg = true;
		p++;
		ilen--;
		n--;
	}
	if (!rd_dec(p, ilen, &v))
		return false;
	for (i = ilen + 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		frac += (uint32_t)(p[i] - '0') * scale;
		scale /= 10;
	}
	*sec = neg ? -(int64_t)v : (int64_t)v;
	*nsec = frac;
	if (neg && frac) {
		/* v <= INT64_MAX: -v - 1 >= INT64_MIN */
		*sec -= 1;
		*nsec = 1000000000u - frac;
	}
	return true;
}

/*
 * One more run of a sparse map: off, len (both at most INT64_MAX). GNU tar
 * extracts each run from blocks of its own (it reads a run's data from the
 * next block, and its writer pads every run to whole blocks), libarchive
 * and tarfile from the bytes right after the previous run's: they agree
 * only when every run with data but the last fills whole blocks. A run
 * with data after one that ended inside a block is refused. (Where the
 * last run ends is checked against the real size by member.c.)
 */
static bool rd_run(struct wsnap_tar_runs *rr, uint64_t off, uint64_t len)
{
	rr->n++;
	rr->end = off + len; /* two int64 values: no overflow in uint64 */
	if (!len)
		return true;
	if (rr->unaligned)
		return false;
	rr->unaligned = len % WSNAP_TAR_BLOCK != 0;
	return true;
}

/*
 * GNU.sparse.map: comma-separated decimal numbers, offset and length of
 * each run, so an even count. (libarchive and tarfile both drop a last odd
 * number; a map that does not say what it means is refused.)
 */
static bool rd_sparse_map_01(const unsigned char *p, size_t n,
			     struct wsnap_tar_runs *rr)
{
	size_t count = 0;
	uint64_t off = 0;

	while (n > 0) {
		const unsigned char *c = memchr(p, ',', n);
		size_t len = c ? (size_t)(c - p) : n;
		uint64_t v;

		if (!rd_dec(p, len, &v))
			return false;
		if (++count % 2)
			off = v;
		else if (!rd_run(rr, off, v))
			return false;
		if (!c)
			return count % 2 == 0;
		p += len + 1;
		n -= len + 1;
		if (n == 0)
			return false; /* trailing comma */
	}
	return false;
}

/* ---- header region ------------------------------------------------------ */

static bool rd_key_is(const unsigned char *k, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(k, s, n) == 0;
}

static bool rd_key_in(const unsigned char *k, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (rd_key_is(k, n, *list))
			return true;
	return false;
}

/*
 * Checks one pax attribute of an 'x' (or 'g' when global) header and
 * records what the walk needs. Numbers that are sizes, counts, ids or
 * offsets must be plain non-negative decimals within int64; times may be
 * negative; names must not hold NUL.
 */
static const char *rd_pax_attr(struct wsnap_tar_pax *px, bool global,
			       const unsigned char *k, size_t kn,
			       const unsigned char *v, size_t vn)
{
	static const char *const numbers[] = {
		"uid",
		"gid",
		"SCHILY.dev",
		"SCHILY.ino",
		"SCHILY.nlink",
		"SCHILY.devmajor",
		"SCHILY.devminor",
		"SCHILY.realsize",
		"GNU.sparse.realsize",
		NULL,
	};
	static const char *const times[] = {"mtime", "atime", "ctime",
					    "LIBARCHIVE.creationtime", NULL};
	static const char *const names[] = {"path", "linkpath",
					    "GNU.sparse.name", NULL};
	static const char sparse[] = "GNU.sparse.";
	uint64_t num;
	int64_t sec;
	uint32_t nsec;

	if (global && kn >= sizeof(sparse) - 1 &&
	    memcmp(k, sparse, sizeof(sparse) - 1) == 0)
		return "is a sparse layout in a global header";
	if (rd_key_is(k, kn, "mtime")) {
		if (!rd_pax_time(v, vn, &px->mtime_sec, &px->mtime_nsec))
			return "is not a number";
		px->has_mtime = true;
	} else if (rd_key_is(k, kn, "size")) {
		if (global)
			return "is in a global header";
		if (!rd_dec(v, vn, &num))
			return "is not a number";
		px->has_size = true;
		px->size = num;
	} else if (rd_key_is(k, kn, "GNU.sparse.major")) {
		/* tarfile compares the text: "01" is no 1.0 to it */
		if (!rd_key_is(v, vn, "1"))
			return "is not 1";
		px->has_major = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.minor")) {
		if (!rd_key_is(v, vn, "0"))
			return "is not 0";
		px->has_minor = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.map")) {
		/* libarchive adds the runs of both maps, tarfile keeps the
		 * last map; GNU tar takes as many runs as numblocks, given
		 * before, says (and fails on more) */
		if (px->n_map++ || !px->has_numblocks ||
		    !rd_sparse_map_01(v, vn, &px->runs) ||
		    px->runs.n > px->numblocks)
			return "is a sparse map tar readers read differently";
	} else if (rd_key_is(k, kn, "GNU.sparse.size")) {
		if (!rd_dec(v, vn, &num))
			return "is not a number";
		px->has_sparse_size = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.numblocks")) {
		/* libarchive drops an offset it has not paired yet */
		if (px->n_offset || px->n_numbytes || px->has_numblocks ||
		    !rd_dec(v, vn, &px->numblocks))
			return "is a sparse map tar readers read differently";
		px->has_numblocks = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.offset")) {
		/*
		 * 0.0 pairs: libarchive pairs each offset with the next
		 * numbytes (a second offset replaces the first), tarfile
		 * zips the list of offsets with the list of numbytes: they
		 * agree on strictly alternating pairs only.
		 */
		if (!px->has_numblocks || px->sparse_pending ||
		    !rd_dec(v, vn, &px->offset))
			return "is a sparse map tar readers read differently";
		px->sparse_pending = true;
		px->n_offset++;
	} else if (rd_key_is(k, kn, "GNU.sparse.numbytes")) {
		if (!px->sparse_pending || !rd_dec(v, vn, &num) ||
		    !rd_run(&px->runs, px->offset, num))
			return "is a sparse map tar readers read differently";
		px->sparse_pending = false;
		px->n_numbytes++;
	} else if (rd_key_is(k, kn, "SUN.holesdata")) {
		return "is a sparse map libarchive reads, tarfile not";
	} else if (rd_key_in(k, kn, numbers)) {
		if (!rd_dec(v, vn, &num))
			return "is not a number";
	} else if (rd_key_in(k, kn, times)) {
		if (!rd_pax_time(v, vn, &sec, &nsec))
			return "is not a number";
	} else if (rd_key_in(k, kn, names)) {
		/*
		 * A global name would rename every later member in tarfile
		 * while libarchive ignores global headers: ambiguous.
		 */
		if (global)
			return "is a name in a global header";
		if (memchr(v, '\0', vn))
			return "holds a NUL";
		/* an empty value: libarchive keeps the header's name,
		 * tarfile takes the empty one */
		if (vn == 0)
			return "is empty";
		/*
		 * libarchive names a member by GNU.sparse.name whatever
		 * the order, tarfile by the later of it and path. bsdtar
		 * writes path first (the same name); GNU tar's sparse 0.1
		 * writes path second, its "GNUSparseFile.N/..." name, which
		 * tarfile then reports: refused.
		 */
		if (rd_key_is(k, kn, "path") && px->has_sparse_name)
			return "comes after GNU.sparse.name";
		if (rd_key_is(k, kn, "path"))
			px->has_path = true;
		else if (rd_key_is(k, kn, "linkpath"))
			px->has_linkpath = true;
		else
			px->has_sparse_name = true;
	}
	return NULL;
}

/*
 * Parses a pax body strictly: every record is "<len> <key>=<value>\n" with
 * len counting the whole record, and the records fill the body exactly.
 * (libarchive only warns, and then ignores the rest.) The key starts right
 * after the one space: GNU tar skips any blanks there, the others take
 * them into the key ("13  path=abc\n" renames a member for GNU tar only).
 * A key may come twice: libarchive, tarfile and GNU tar all keep the last
 * value (the sparse keys, which they do not, are checked on their own).
 */
static bool rd_pax_parse(const unsigned char *p, size_t n, bool global,
			 struct wsnap_tar_pax *px, struct wsnap_tar_scan *s)
{
	const char *why;

	while (n > 0) {
		size_t i = 0, len = 0, rest;
		const unsigned char *key, *eq;

		while (i < n && p[i] >= '0' && p[i] <= '9') {
			len = len * 10 + (size_t)(p[i] - '0');
			if (len > n)
				return false;
			i++;
		}
		if (i == 0 || i >= n || p[i] != ' ' || len < i + 4 || len > n ||
		    p[len - 1] != '\n')
			return false;
		key = p + i + 1;
		rest = len - i - 2; /* key=value without the newline */
		eq = memchr(key, '=', rest);
		if (!eq || eq == key || *key == ' ' || *key == '\t' ||
		    memchr(key, '\0', (size_t)(eq - key)))
			return false;
		why = rd_pax_attr(px, global, key, (size_t)(eq - key), eq + 1,
				  rest - (size_t)(eq - key) - 1);
		if (why) {
			s->why = why;
			s->why_key = key;
			s->why_key_len = (size_t)(eq - key);
			return false;
		}
		p += len;
		n -= len;
	}
	return true;
}

static bool rd_is_gnu_magic(const unsigned char *h)
{
	return memcmp(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
		      WSNAP_TAR_MAGIC_LEN) == 0;
}

/*
 * A signed number field (mtime) that does not fit int64: only base-256
 * can be that long. libarchive saturates such a value, tarfile keeps it.
 */
static bool rd_tar_signed_fits(const unsigned char *f, size_t n)
{
	unsigned char fill = f[0] & 0x40 ? 0xff : 0x00;
	size_t i;

	if (!(f[0] & 0x80) || n <= 8)
		return true;
	/* the value has 8n - 1 bits: all above the low 63 are the sign */
	if ((f[0] & 0x7f) != (fill & 0x7f))
		return false;
	for (i = 1; i < n - 8; i++)
		if (f[i] != fill)
			return false;
	return (f[n - 8] & 0x80) == (fill & 0x80);
}

/*
 * Old GNU sparse entries (struct wsnap_tar_sparse). libarchive
 * reads them up to the first whose offset starts with NUL, GNU tar up to
 * the first whose length does, tarfile reads all four of the header, and
 * those of an extension block that have both an offset and a length. So:
 * past the first NUL offset only zero bytes; before it a length that is
 * not empty, numbers all read alike, within int64 (libarchive would
 * saturate a larger one); in an extension block no data at offset 0; runs
 * as rd_run has them. *used is the number of entries read.
 */
static bool rd_gnu_sparse_entries(const unsigned char *e, size_t count,
				  bool ext, struct wsnap_tar_runs *rr,
				  size_t *used)
{
	const size_t entry = sizeof(struct wsnap_tar_sparse);
	const size_t ol = WSNAP_TAR_SPARSE_LEN(offset);
	const size_t no = WSNAP_TAR_SPARSE_OFF(numbytes);
	const size_t nl = WSNAP_TAR_SPARSE_LEN(numbytes);
	uint64_t off, len;

	for (*used = 0; *used < count && e[0]; ++*used, e += entry)
		if (!e[no] || !rd_tar_field_ok(e, ol) ||
		    !rd_tar_field_ok(e + no, nl) ||
		    !rd_tar_number(e, ol, &off) ||
		    !rd_tar_number(e + no, nl, &len) || (ext && !off && len) ||
		    !rd_run(rr, off, len))
			return false;
	return wsnap_tar_all_zero(e, entry * (count - *used));
}

/*
 * An old GNU sparse member ('S', GNU magic): the header's map, the real
 * size (tarfile takes an empty one as 0, libarchive the size field), and
 * the extension blocks chained by isextended, which must be all of the
 * region after the main header. GNU tar reads the next extension block
 * only after a block whose entries are all used (libarchive and tarfile
 * follow isextended whatever the entries), and extracts a map without
 * entries as an empty file (tarfile: as zeros, libarchive: as the data).
 */
static bool rd_scan_gnu_sparse(const unsigned char *ext, size_t tail,
			       const unsigned char *h,
			       struct wsnap_tar_runs *rr)
{
	const unsigned char *rs = h + WSNAP_TAR_OFF(gnu.realsize);
	const size_t rl = WSNAP_TAR_LEN(gnu.realsize);
	unsigned char more = h[WSNAP_TAR_OFF(gnu.isextended)];
	uint64_t realsize;
	size_t n = 0, used;

	if (!rd_is_gnu_magic(h) ||
	    !rd_gnu_sparse_entries(h + WSNAP_TAR_OFF(gnu.sparse),
				   WSNAP_TAR_GNU_SPARSE_N, false, rr, &used) ||
	    used == 0 || (more && used < WSNAP_TAR_GNU_SPARSE_N) || !rs[0] ||
	    !rd_tar_field_ok(rs, rl) || !rd_tar_number(rs, rl, &realsize))
		return false;
	while (more) {
		const unsigned char *b = ext + WSNAP_TAR_BLOCK * n;

		if (WSNAP_TAR_BLOCK * (n + 1) > tail ||
		    !rd_gnu_sparse_entries(b + WSNAP_TAR_EXT_OFF(sparse),
					   WSNAP_TAR_GNU_EXT_SPARSE_N, true, rr,
					   &used))
			return false;
		more = b[WSNAP_TAR_EXT_OFF(isextended)];
		if (more && used < WSNAP_TAR_GNU_EXT_SPARSE_N)
			return false;
		n++;
	}
	return tail == WSNAP_TAR_BLOCK * n;
}

/*
 * A pax 1.0 sparse map, the n bytes that lead the data area: the number
 * of runs, then an offset and a length for each, one decimal number a
 * line, and zeros to the end of its last block. libarchive skips lines
 * that start with '#' and takes an empty line for 0, tarfile and GNU tar
 * fail on both: digits only. At least one run (GNU tar extracts none as
 * an empty file), runs as rd_run has them.
 */
static bool rd_sparse_map_10(const unsigned char *p, size_t n,
			     struct wsnap_tar_runs *rr)
{
	uint64_t count = 0, v, off = 0, i = 0;
	size_t pos = 0;

	for (;;) {
		const unsigned char *nl = memchr(p + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (p + pos)) : 0;

		if (!nl || !rd_dec(p + pos, len, &v))
			return false;
		pos += len + 1;
		if (i == 0)
			count = v;
		else if (i % 2)
			off = v;
		else if (!rd_run(rr, off, v))
			return false;
		if (i++ == 2 * count)
			break;
	}
	return count > 0 && n - pos < WSNAP_TAR_BLOCK &&
	       wsnap_tar_all_zero(p + pos, n - pos);
}

/* Occurrences of a string in n bytes. */
static size_t rd_count(const unsigned char *p, size_t n, const char *needle)
{
	size_t k = strlen(needle), count = 0;
	const unsigned char *q;

	while ((q = memmem(p, n, needle, k)) != NULL) {
		count++;
		n -= (size_t)(q - p) + k;
		p = q + k;
	}
	return count;
}

/*
 * The GNU sparse formats of a pax header, as both readers see them: one
 * format at most (tarfile tries 0.1, then 0.0, then 1.0; libarchive
 * applies them all); 0.0 pairs complete and as many as numblocks, and the
 * body (padding included) holds no other "GNU.sparse.offset=" or
 * "GNU.sparse.numbytes=" text, since tarfile finds the pairs by a regular
 * expression over the raw block; GNU.sparse.size only with a 0.0 or 0.1
 * map (tarfile takes it for a 0.0 map of holes only).
 */
static bool rd_pax_sparse_agree(const struct wsnap_tar_pax *px,
				const unsigned char *body, size_t padded)
{
	unsigned formats = (px->n_offset > 0) + (px->n_map > 0) +
			   (px->has_major || px->has_minor);

	if (formats > 1 || px->sparse_pending)
		return false;
	if (px->n_offset &&
	    (px->n_offset != px->numblocks || !px->has_sparse_size))
		return false;
	if (px->has_sparse_size && !px->n_offset && !px->n_map)
		return false;
	return rd_count(body, padded, "GNU.sparse.offset=") == px->n_offset &&
	       rd_count(body, padded, "GNU.sparse.numbytes=") == px->n_numbytes;
}

/*
 * The prefix field of a main header whose name comes from
 * the header itself. libarchive joins it to the name only under a POSIX
 * ustar magic ("ustar" and anything but GNU's "ustar  \0"), GNU tar only
 * under "ustar\0" exactly; tarfile joins it whatever the magic, except on
 * GNU 'S' headers, whose bytes there are GNU fields. Where one joins and
 * another does not, the names differ (a v7 header named 'passwd' with
 * prefix '../../etc', a GNU incremental header whose atime tarfile takes
 * as a directory, a "ustarX" magic whose prefix GNU tar drops).
 */
static bool rd_prefix_ambiguous(const unsigned char *h)
{
	if (!h[WSNAP_TAR_OFF(prefix)] ||
	    h[WSNAP_TAR_OFF(typeflag)] == WSNAP_TAR_GNU_SPARSE)
		return false;
	/* "ustar" with its NUL: the whole magic field */
	return memcmp(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_USTAR_MAGIC,
		      WSNAP_TAR_LEN(magic)) != 0;
}

/*
 * A GNU long name ('L') or link name ('K') body: the name, a NUL, and only
 * NULs up to the size. libarchive reads the size's bytes up to the first
 * NUL; tarfile and GNU tar read the whole padded body up to its first NUL,
 * so a name without a NUL within the size would run on for them.
 */
static bool rd_gnu_long_ok(const unsigned char *p, size_t n)
{
	const unsigned char *nul = memchr(p, '\0', n);

	return nul && wsnap_tar_all_zero(nul, n - (size_t)(nul - p));
}

/*
 * After the walk: what readers would each make of the member's names.
 * libarchive keeps one buffer per kind of GNU long name and applies each
 * kind after the headers that follow it, so of two 'L' (or 'K') records
 * it takes the last, tarfile the first (two 'x' headers, where libarchive
 * keeps the last body only and tarfile merges both, are refused by the
 * walk). An 'L' and a pax path are read
 * differently by GNU tar and by libarchive / tarfile (and the same goes
 * for 'K' and linkpath): a member named twice is refused, in either
 * order. (A pax path with GNU.sparse.name: see rd_pax_attr.)
 */
static bool rd_names_agree(const struct wsnap_tar_scan *s)
{
	unsigned names =
		s->n_longname + (s->pax.has_path || s->pax.has_sparse_name);

	if (s->n_longname > 1 || s->n_longlink > 1)
		return false;
	if (names > 1 || s->n_longlink + s->pax.has_linkpath > 1)
		return false;
	return names || !rd_prefix_ambiguous(s->main);
}

/*
 * GNU sparse entries in a GNU header that is not 'S': libarchive's
 * header_gnutar reads them whatever the typeflag, so a '0' member with
 * an offset in sparse[0] becomes a sparse file of the realsize to it,
 * while tarfile and GNU tar read the plain file of the size field (found
 * by hand: a '0' header, 3 bytes of data, a run {2, 3} and realsize 5 was
 * a 5-byte file to wsnap and a 3-byte one to tarfile).
 */
static bool rd_gnu_stray_sparse(const unsigned char *h)
{
	return h[WSNAP_TAR_OFF(typeflag)] != WSNAP_TAR_GNU_SPARSE &&
	       rd_is_gnu_magic(h) && h[WSNAP_TAR_OFF(gnu.sparse)] != '\0';
}

/*
 * Walks a member's header region: extension headers ('x', 'X', 'g', 'L',
 * 'K') with their bodies, then the main header; after it only GNU sparse
 * extension blocks or a pax 1.0 sparse map may follow. Returns false when
 * the region is not exactly that, or readers would disagree on it.
 */
bool wsnap_tar_scan_region(const unsigned char *p, size_t len,
			   struct wsnap_tar_pax *global,
			   struct wsnap_tar_scan *s)
{
	size_t pos = 0;

	memset(s, 0, sizeof(*s));
	for (;;) {
		const unsigned char *h = p + pos, *body;
		uint64_t size, padded;
		char tf;

		if (len - pos < WSNAP_TAR_BLOCK || !rd_header_fields_ok(h))
			return false;
		tf = (char)h[WSNAP_TAR_OFF(typeflag)];
		if (tf != WSNAP_TAR_PAX && tf != WSNAP_TAR_SOLARIS_PAX &&
		    tf != WSNAP_TAR_PAX_GLOBAL &&
		    tf != WSNAP_TAR_GNU_LONGNAME &&
		    tf != WSNAP_TAR_GNU_LONGLINK) {
			/* 'V' and 'A' are swallowed by libarchive but are
			 * members to other readers: ambiguous, refused. */
			if (tf == WSNAP_TAR_GNU_VOLHDR ||
			    tf == WSNAP_TAR_SOLARIS_ACL)
				return false;
			s->main = h;
			pos += WSNAP_TAR_BLOCK;
			break;
		}
		if (!rd_tar_number(h + WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size),
				   &size))
			return false;
		padded = (size + WSNAP_TAR_BLOCK - 1) &
			 ~(uint64_t)(WSNAP_TAR_BLOCK - 1);
		if (padded > len - pos - WSNAP_TAR_BLOCK)
			return false;
		body = h + WSNAP_TAR_BLOCK;
		/* libarchive and GNU tar read size bytes of a body, tarfile
		 * the whole padded blocks (a pax record or the rest of a
		 * name in the padding is read by tarfile alone) */
		if (!wsnap_tar_all_zero(body + size, (size_t)(padded - size)))
			return false;
		if (tf == WSNAP_TAR_GNU_LONGNAME ||
		    tf == WSNAP_TAR_GNU_LONGLINK) {
			if (!rd_gnu_long_ok(body, (size_t)size))
				return false;
			if (tf == WSNAP_TAR_GNU_LONGNAME)
				s->n_longname++;
			else
				s->n_longlink++;
		} else if (tf == WSNAP_TAR_PAX_GLOBAL) {
			if (!rd_pax_parse(body, (size_t)size, true, global, s))
				return false;
		} else if (s->n_pax++ ||
			   !rd_pax_parse(body, (size_t)size, false, &s->pax,
					 s) ||
			   !rd_pax_sparse_agree(&s->pax, body,
						(size_t)padded)) {
			return false;
		}
		pos += WSNAP_TAR_BLOCK + (size_t)padded;
	}
	s->tail = len - pos;
	if (!rd_names_agree(s) || rd_gnu_stray_sparse(s->main))
		return false;
	if (!rd_tar_number(s->main + WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size),
			   &s->stored) ||
	    !rd_tar_signed_fits(s->main + WSNAP_TAR_OFF(mtime),
				WSNAP_TAR_LEN(mtime)))
		return false;
	if (s->pax.has_size)
		s->stored = s->pax.size;
	s->runs = s->pax.runs; /* 0.0 or 0.1, if any */
	if (s->main[WSNAP_TAR_OFF(typeflag)] == WSNAP_TAR_GNU_SPARSE)
		return rd_scan_gnu_sparse(p + pos, s->tail, s->main, &s->runs);
	if (s->pax.has_major || s->pax.has_minor) {
		/* pax sparse 1.0: the map leads the data area */
		if (!s->pax.has_major || !s->pax.has_minor)
			return false;
		s->map = s->tail;
		return s->tail % WSNAP_TAR_BLOCK == 0 && s->tail <= s->stored &&
		       rd_sparse_map_10(p + pos, s->tail, &s->runs);
	}
	return s->tail == 0;
}

bool wsnap_tar_name_field_is_dir(const unsigned char *h)
{
	const char *name = (const char *)h + WSNAP_TAR_OFF(name);

	return name[0] && name[strnlen(name, WSNAP_TAR_LEN(name)) - 1] == '/';
}
