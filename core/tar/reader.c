/*
 * The tar reader (reader.h): libarchive's tar parser, fed through our own
 * read callbacks so that the raw header bytes of every member can be seen.
 *
 * Two layouts:
 *  - direct: an uncompressed regular file. The tar-only "inner" reader pulls
 *    the file through rd_direct_read (pread) and skips member data with
 *    rd_direct_skip (no read at all), so the cost grows with the members;
 *  - piped: anything compressed, or a pipe. An "outer" libarchive reader
 *    (the five decompressors + the raw format) decodes the input; the inner
 *    reader pulls the decoded bytes through rd_piped_read; with keep_data
 *    they are also written to an unlinked "spill" file, whose offsets equal
 *    stream offsets. After the tar end the outer stream is drained to its
 *    very end, so a bad trailer or a truncated stream is seen; libarchive
 *    does not check the gzip trailer, so its CRC-32 and length are checked
 *    here, and only zero padding may follow a compressed stream.
 *
 * Invariants:
 *  - the window holds stream bytes [win_off, win_off + win_len): while a
 *    header is being parsed, everything from archive_read_header_position()
 *    on is kept (bounded by WSNAP_READER_MAX_HEADER_BYTES); otherwise only
 *    the latest client buffer. Memory is bounded whatever the input;
 *  - each member's header region [header position, data offset) is walked
 *    block by block here (rd_scan_region): extension headers, then exactly
 *    one main header, whose raw typeflag is reported. Anything libarchive
 *    would have glossed over (bad pax records, special headers it swallows,
 *    an ambiguous layout) ends the read as '<tar>' invalid tar stream.
 *    "Ambiguous" means that libarchive and Python's tarfile (the reference
 *    the policy restates) would see different members: 'V' and 'A' headers,
 *    data on directories, links, devices and FIFOs, a global pax header
 *    that sets names, sizes or sparse maps, an extension header repeated
 *    for one member, a member named (or linked) both by a GNU long name
 *    and by pax, a prefix field only one of them joins, a number field
 *    only one of them can parse, a sparse map they lay out differently,
 *    typeflag NUL with a trailing '/' that only libarchive sees;
 *  - numbers are read from the raw header where libarchive would saturate
 *    them (base-256 beyond int64) or get them wrong (negative fractional
 *    pax times): what overflows is an invalid stream;
 *  - the read runs in the "C" locale (uselocale, this thread only), so that
 *    libarchive never converts names: they come out as their raw bytes. The
 *    only libarchive warning accepted is the "can't be converted" one that
 *    this produces for non-ASCII pax names.
 */
#include "reader.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes per read of a plain file, and per read of a compressed input. */
#define RD_DIRECT_CHUNK (1u << 20)
#define RD_OUTER_CHUNK	(256u << 10)
/* Most decoded bytes handed to the inner reader at once (piped). */
#define RD_PIPED_CHUNK (256u << 10)
/* Progress is reported about this often (bytes of input). */
#define RD_PROGRESS_STEP (4u << 20)
/* Most runs of one sparse file (a map needs more header bytes than this
 * allows anyway; the bound keeps the allocation obvious). */
#define RD_MAX_SPARSE_RUNS (WSNAP_READER_MAX_HEADER_BYTES / 8)

#define RD_BLOCK 512u

struct rd_outbuf {
	unsigned char *data;
	size_t len;
	uint64_t off; /* input offset of data[0] */
};

struct rd_pax {
	bool has_mtime;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	bool has_path, has_linkpath, has_sparse_name;
	bool has_size;
	uint64_t size;
	/* GNU sparse: 1.0 (major, minor), 0.1 (map), 0.0 (numblocks, then
	 * offset / numbytes pairs); GNU.sparse.size goes with 0.0 and 0.1 */
	bool has_major, has_minor;
	bool has_sparse_size, has_numblocks, sparse_pending;
	uint64_t numblocks;
	unsigned n_map, n_offset, n_numbytes;
};

/* CRC-32 (IEEE 802.3, as gzip), eight bytes per step. */
struct rd_crc {
	uint32_t t[8][256];
	uint32_t crc;
};

static void rd_crc_init(struct rd_crc *c)
{
	uint32_t n, k, v;

	for (n = 0; n < 256; n++) {
		v = n;
		for (k = 0; k < 8; k++)
			v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
		c->t[0][n] = v;
	}
	for (n = 0; n < 256; n++)
		for (k = 1; k < 8; k++)
			c->t[k][n] = c->t[0][c->t[k - 1][n] & 0xff] ^
				     (c->t[k - 1][n] >> 8);
	c->crc = 0xffffffffu;
}

static uint32_t rd_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void rd_crc_update(struct rd_crc *c, const unsigned char *p, size_t n)
{
	uint32_t v = c->crc;

	for (; n >= 8; p += 8, n -= 8) {
		uint32_t a = rd_le32(p) ^ v, b = rd_le32(p + 4);

		v = c->t[7][a & 0xff] ^ c->t[6][(a >> 8) & 0xff] ^
		    c->t[5][(a >> 16) & 0xff] ^ c->t[4][a >> 24] ^
		    c->t[3][b & 0xff] ^ c->t[2][(b >> 8) & 0xff] ^
		    c->t[1][(b >> 16) & 0xff] ^ c->t[0][b >> 24];
	}
	while (n--)
		v = c->t[0][(v ^ *p++) & 0xff] ^ (v >> 8);
	c->crc = v;
}

struct rd {
	int fd;
	bool direct;   /* plain regular file read in place */
	bool regular;  /* fd is a regular file (pread from offset 0) */
	uint64_t size; /* regular file size at the start */
	uint64_t in_pos;
	uint64_t input_bytes; /* bytes read from fd */
	uint64_t next_progress;
	const struct wsnap_reader_opts *opts;

	/* window over the (decoded) stream, see the invariants */
	unsigned char *win;
	size_t win_cap;
	size_t win_len;
	uint64_t win_off;
	bool in_header;
	bool region_lost; /* a header region was skipped over */
	bool too_big;	  /* a header region exceeded the bound */

	/* piped layout */
	struct archive *outer;
	struct rd_outbuf obuf[2]; /* the two latest outer client buffers */
	int ocur;
	const unsigned char *pend; /* decoded bytes not yet in the window */
	size_t pend_len;
	bool outer_eof;
	bool outer_failed;
	uint64_t stream_bytes; /* decoded bytes taken from the outer reader */
	int spill_fd;

	/* first I/O error met inside a callback (status WSNAP_IO) */
	struct wsnap_error *err;
	bool io_failed;

	/* attributes of the global pax headers seen so far */
	struct rd_pax global;

	/* gzip: CRC-32 of the decoded stream (libarchive does not check
	 * the gzip trailer) */
	struct rd_crc *crc;

	/* per-member scratch */
	struct wsnap_sparse_run *runs;
	size_t runs_cap;
};

static enum wsnap_status rd_io(struct rd *r, int errnum, const char *what)
{
	if (!r->io_failed) {
		r->io_failed = true;
		wsnap_error_io(r->err, errnum, NULL, "%s", what);
	}
	return WSNAP_IO;
}

/* The status of a failed libarchive call: an I/O error a callback met,
 * else an invalid stream. */
static enum wsnap_status rd_fail(struct rd *r)
{
	if (r->io_failed)
		return WSNAP_IO;
	return wsnap_error_stream(r->err);
}

static void rd_progress(struct rd *r, uint64_t done)
{
	if (!r->opts->progress || done < r->next_progress)
		return;
	r->next_progress = done + RD_PROGRESS_STEP;
	r->opts->progress(r->opts->progress_ctx, done,
			  r->regular ? r->size : 0);
}

/* Reads up to len bytes of the input at in_pos (pread for a regular file,
 * read otherwise); fills the buffer unless the input ends. */
static ssize_t rd_input_read(struct rd *r, unsigned char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (r->regular)
			n = pread(r->fd, buf + got, len - got,
				  (off_t)(r->in_pos + got));
		else
			n = read(r->fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rd_io(r, errno, "cannot read archive");
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (r->regular)
			break; /* a short pread of a file is its end */
	}
	r->in_pos += got;
	r->input_bytes += got;
	rd_progress(r, r->in_pos);
	return (ssize_t)got;
}

/*
 * Makes room for at least want more bytes in the window, dropping what no
 * longer needs keeping. Returns false (and flags why) past the bound.
 */
static bool rd_window_prepare(struct rd *r, struct archive *inner, size_t want)
{
	uint64_t end = r->win_off + r->win_len;
	uint64_t keep = end;
	size_t drop;

	if (r->in_header) {
		int64_t hp = archive_read_header_position(inner);

		if (hp >= 0 && (uint64_t)hp < r->win_off)
			r->region_lost = true;
		else if (hp >= 0 && (uint64_t)hp < end)
			keep = (uint64_t)hp;
	}
	drop = (size_t)(keep - r->win_off);
	if (drop) {
		memmove(r->win, r->win + drop, r->win_len - drop);
		r->win_len -= drop;
		r->win_off = keep;
	}
	if (r->win_len > WSNAP_READER_MAX_HEADER_BYTES) {
		r->too_big = true;
		return false;
	}
	if (r->win_cap - r->win_len < want) {
		size_t cap = r->win_len + want;
		unsigned char *p = realloc(r->win, cap);

		if (!p) {
			rd_io(r, ENOMEM, "out of memory");
			return false;
		}
		r->win = p;
		r->win_cap = cap;
	}
	return true;
}

/* Direct layout: the inner reader's read callback. */
static la_ssize_t rd_direct_read(struct archive *a, void *ctx, const void **buf)
{
	struct rd *r = ctx;
	ssize_t n;

	if (!rd_window_prepare(r, a, RD_DIRECT_CHUNK))
		return ARCHIVE_FATAL;
	n = rd_input_read(r, r->win + r->win_len, RD_DIRECT_CHUNK);
	if (n < 0)
		return ARCHIVE_FATAL;
	*buf = r->win + r->win_len;
	r->win_len += (size_t)n;
	return n;
}

/*
 * Direct layout: skips member data by moving the position, clamped to the
 * file size, so that a truncated member is a short skip and libarchive
 * reports truncation rather than a clean end.
 */
static la_int64_t rd_direct_skip(struct archive *a, void *ctx,
				 la_int64_t request)
{
	struct rd *r = ctx;
	uint64_t n = request > 0 ? (uint64_t)request : 0;

	if (r->in_pos >= r->size)
		n = 0;
	else if (n > r->size - r->in_pos)
		n = r->size - r->in_pos;
	if (r->in_header && n)
		r->region_lost = true;
	r->in_pos += n;
	r->win_off = r->in_pos;
	r->win_len = 0;
	rd_progress(r, r->in_pos);
	return (la_int64_t)n;
}

/* Piped layout: the outer reader's read callback (two alternating buffers,
 * so that bytes past the end of a compressed stream can be checked). */
static la_ssize_t rd_outer_read(struct archive *a, void *ctx, const void **buf)
{
	struct rd *r = ctx;
	struct rd_outbuf *b;
	ssize_t n;

	r->ocur ^= 1;
	b = &r->obuf[r->ocur];
	if (!b->data) {
		b->data = malloc(RD_OUTER_CHUNK);
		if (!b->data) {
			rd_io(r, ENOMEM, "out of memory");
			return ARCHIVE_FATAL;
		}
	}
	b->off = r->in_pos;
	n = rd_input_read(r, b->data, RD_OUTER_CHUNK);
	if (n < 0) {
		b->len = 0;
		return ARCHIVE_FATAL;
	}
	b->len = (size_t)n;
	*buf = b->data;
	return n;
}

static bool rd_spill_write(struct rd *r, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(r->spill_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rd_io(r, errno,
			      errno == ENOSPC
				      ? "no space left writing spill file"
				      : "cannot write spill file");
			return false;
		}
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Piped layout: next decoded bytes from the outer reader into pend. */
static bool rd_outer_next(struct rd *r)
{
	const void *p;
	size_t len;
	la_int64_t off;
	int ret;

	while (!r->pend_len && !r->outer_eof) {
		ret = archive_read_data_block(r->outer, &p, &len, &off);
		if (ret == ARCHIVE_EOF) {
			r->outer_eof = true;
			break;
		}
		if (ret != ARCHIVE_OK) {
			r->outer_failed = true;
			return false;
		}
		r->pend = p;
		r->pend_len = len;
		r->stream_bytes += len;
		if (r->crc)
			rd_crc_update(r->crc, p, len);
	}
	return true;
}

/* Piped layout: the inner reader's read callback. */
static la_ssize_t rd_piped_read(struct archive *a, void *ctx, const void **buf)
{
	struct rd *r = ctx;
	size_t n;

	if (!rd_window_prepare(r, a, RD_PIPED_CHUNK))
		return ARCHIVE_FATAL;
	if (!rd_outer_next(r))
		return ARCHIVE_FATAL;
	n = r->pend_len < RD_PIPED_CHUNK ? r->pend_len : RD_PIPED_CHUNK;
	if (n) {
		memcpy(r->win + r->win_len, r->pend, n);
		if (r->spill_fd >= 0 && !rd_spill_write(r, r->pend, n))
			return ARCHIVE_FATAL;
		r->pend += n;
		r->pend_len -= n;
	}
	*buf = r->win + r->win_len;
	r->win_len += n;
	return (la_ssize_t)n;
}

/* ---- numbers ------------------------------------------------------------ */

static bool rd_all_zero(const unsigned char *p, size_t n)
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
 * silently: the members after it would be seen by libarchive alone.
 */
static bool rd_tar_field_ok(const unsigned char *f, size_t n)
{
	size_t i = 0;

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
		{100, 8},  {108, 8}, {116, 8}, {124, 12},
		{136, 12}, {148, 8}, {329, 8}, {337, 8},
	};
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
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
 * GNU.sparse.map: comma-separated decimal numbers, offset and length of
 * each run, so an even count. (libarchive and tarfile both drop a last odd
 * number; a map that does not say what it means is refused.)
 */
static bool rd_sparse_map_01(const unsigned char *p, size_t n)
{
	size_t count = 0;

	while (n > 0) {
		const unsigned char *c = memchr(p, ',', n);
		size_t len = c ? (size_t)(c - p) : n;
		uint64_t v;

		if (!rd_dec(p, len, &v))
			return false;
		count++;
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
static bool rd_pax_attr(struct rd_pax *px, bool global, const unsigned char *k,
			size_t kn, const unsigned char *v, size_t vn)
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
	uint64_t num;
	int64_t sec;
	uint32_t nsec;

	if (global && kn >= 11 && memcmp(k, "GNU.sparse.", 11) == 0)
		return false; /* a sparse layout for every member */
	if (rd_key_is(k, kn, "mtime")) {
		if (!rd_pax_time(v, vn, &px->mtime_sec, &px->mtime_nsec))
			return false;
		px->has_mtime = true;
	} else if (rd_key_is(k, kn, "size")) {
		if (global || !rd_dec(v, vn, &num))
			return false;
		px->has_size = true;
		px->size = num;
	} else if (rd_key_is(k, kn, "GNU.sparse.major")) {
		/* tarfile compares the text: "01" is no 1.0 to it */
		if (!rd_key_is(v, vn, "1"))
			return false;
		px->has_major = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.minor")) {
		if (!rd_key_is(v, vn, "0"))
			return false;
		px->has_minor = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.map")) {
		/* libarchive adds the runs of both maps, tarfile keeps the
		 * last map */
		if (px->n_map++ || !rd_sparse_map_01(v, vn))
			return false;
	} else if (rd_key_is(k, kn, "GNU.sparse.size")) {
		if (!rd_dec(v, vn, &num))
			return false;
		px->has_sparse_size = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.numblocks")) {
		/* libarchive drops an offset it has not paired yet */
		if (px->n_offset || px->n_numbytes || px->has_numblocks ||
		    !rd_dec(v, vn, &px->numblocks))
			return false;
		px->has_numblocks = true;
	} else if (rd_key_is(k, kn, "GNU.sparse.offset")) {
		/*
		 * 0.0 pairs: libarchive pairs each offset with the next
		 * numbytes (a second offset replaces the first), tarfile
		 * zips the list of offsets with the list of numbytes: they
		 * agree on strictly alternating pairs only.
		 */
		if (!px->has_numblocks || px->sparse_pending ||
		    !rd_dec(v, vn, &num))
			return false;
		px->sparse_pending = true;
		px->n_offset++;
	} else if (rd_key_is(k, kn, "GNU.sparse.numbytes")) {
		if (!px->sparse_pending || !rd_dec(v, vn, &num))
			return false;
		px->sparse_pending = false;
		px->n_numbytes++;
	} else if (rd_key_is(k, kn, "SUN.holesdata")) {
		return false; /* a sparse map libarchive reads, tarfile not */
	} else if (rd_key_in(k, kn, numbers)) {
		if (!rd_dec(v, vn, &num))
			return false;
	} else if (rd_key_in(k, kn, times)) {
		if (!rd_pax_time(v, vn, &sec, &nsec))
			return false;
	} else if (rd_key_in(k, kn, names)) {
		/*
		 * A global name would rename every later member in tarfile
		 * while libarchive ignores global headers: ambiguous.
		 */
		if (global || memchr(v, '\0', vn))
			return false;
		/* an empty value: libarchive keeps the header's name,
		 * tarfile takes the empty one */
		if (vn == 0)
			return false;
		/*
		 * libarchive names a member by GNU.sparse.name whatever
		 * the order, tarfile by the later of it and path. bsdtar
		 * writes path first (the same name); GNU tar's sparse 0.1
		 * writes path second, its "GNUSparseFile.N/..." name, which
		 * tarfile then reports: refused.
		 */
		if (rd_key_is(k, kn, "path") && px->has_sparse_name)
			return false;
		if (rd_key_is(k, kn, "path"))
			px->has_path = true;
		else if (rd_key_is(k, kn, "linkpath"))
			px->has_linkpath = true;
		else
			px->has_sparse_name = true;
	}
	return true;
}

/*
 * Parses a pax body strictly: every record is "<len> <key>=<value>\n" with
 * len counting the whole record, and the records fill the body exactly.
 * (libarchive only warns, and then ignores the rest.)
 */
static bool rd_pax_parse(const unsigned char *p, size_t n, bool global,
			 struct rd_pax *px)
{
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
		if (!eq || eq == key || memchr(key, '\0', (size_t)(eq - key)))
			return false;
		if (!rd_pax_attr(px, global, key, (size_t)(eq - key), eq + 1,
				 rest - (size_t)(eq - key) - 1))
			return false;
		p += len;
		n -= len;
	}
	return true;
}

struct rd_scan {
	const unsigned char *main; /* the main header block */
	uint64_t stored;	   /* bytes of data (size field or pax) */
	size_t tail;		   /* region bytes after the main header */
	uint64_t map;		   /* of which a pax 1.0 sparse map */
	struct rd_pax pax;	   /* the 'x' attributes */
	unsigned n_pax, n_longname, n_longlink; /* 'x'/'X', 'L', 'K' */
};

static bool rd_is_gnu_magic(const unsigned char *h)
{
	return memcmp(h + 257, "ustar  \0", 8) == 0;
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
 * Old GNU sparse entries (offset, numbytes: 12 bytes each). libarchive
 * reads them up to the first whose offset starts with NUL, tarfile reads
 * all four of the header, and those of an extension block that have both
 * an offset and a length. So: past the first NUL offset only zero bytes;
 * before it numbers both read alike, within int64 (libarchive would
 * saturate a larger one); in an extension block no data at offset 0.
 */
static bool rd_gnu_sparse_entries(const unsigned char *e, size_t count,
				  bool ext)
{
	uint64_t off, len;

	for (; count > 0 && e[0]; count--, e += 24)
		if (!rd_tar_field_ok(e, 12) || !rd_tar_field_ok(e + 12, 12) ||
		    !rd_tar_number(e, 12, &off) ||
		    !rd_tar_number(e + 12, 12, &len) || (ext && !off && len))
			return false;
	return rd_all_zero(e, 24 * count);
}

/*
 * An old GNU sparse member ('S', GNU magic): the header's map, the real
 * size (tarfile takes an empty one as 0, libarchive the size field), and
 * the extension blocks chained by isextended, which must be all of the
 * region after the main header.
 */
static bool rd_scan_gnu_sparse(const unsigned char *ext, size_t tail,
			       const unsigned char *h)
{
	unsigned char more = h[482];
	uint64_t realsize;
	size_t n = 0;

	if (!rd_is_gnu_magic(h) || !rd_gnu_sparse_entries(h + 386, 4, false) ||
	    !h[483] || !rd_tar_field_ok(h + 483, 12) ||
	    !rd_tar_number(h + 483, 12, &realsize))
		return false;
	while (more) {
		const unsigned char *b = ext + RD_BLOCK * n;

		if (RD_BLOCK * (n + 1) > tail ||
		    !rd_gnu_sparse_entries(b, 21, true))
			return false;
		more = b[504];
		n++;
	}
	return tail == RD_BLOCK * n;
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
static bool rd_pax_sparse_agree(const struct rd_pax *px,
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
 * The prefix field (bytes 345..499) of a main header whose name comes from
 * the header itself. libarchive joins it to the name only under a POSIX
 * ustar magic ("ustar" and anything but GNU's "ustar  \0"); tarfile joins
 * it whatever the magic, except on GNU 'S' headers, whose bytes there are
 * GNU fields. Where one joins and the other does not, the names differ
 * (a v7 header named 'passwd' with prefix '../../etc', or a GNU
 * incremental header whose atime tarfile takes as a directory).
 */
static bool rd_prefix_ambiguous(const unsigned char *h)
{
	if (!h[345] || h[156] == 'S')
		return false;
	return rd_is_gnu_magic(h) || memcmp(h + 257, "ustar", 5) != 0;
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
static bool rd_names_agree(const struct rd_scan *s)
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
 * Walks a member's header region: extension headers ('x', 'X', 'g', 'L',
 * 'K') with their bodies, then the main header; after it only GNU sparse
 * extension blocks or a pax 1.0 sparse map may follow. Returns false when
 * the region is not exactly that, or readers would disagree on it.
 */
static bool rd_scan_region(const unsigned char *p, size_t len,
			   struct rd_pax *global, struct rd_scan *s)
{
	size_t pos = 0;

	memset(s, 0, sizeof(*s));
	for (;;) {
		const unsigned char *h = p + pos;
		uint64_t size, padded;
		char tf;

		if (len - pos < RD_BLOCK || !rd_header_fields_ok(h))
			return false;
		tf = (char)h[156];
		if (tf != 'x' && tf != 'X' && tf != 'g' && tf != 'L' &&
		    tf != 'K') {
			/* 'V' and 'A' are swallowed by libarchive but are
			 * members to other readers: ambiguous, refused. */
			if (tf == 'V' || tf == 'A')
				return false;
			s->main = h;
			pos += RD_BLOCK;
			break;
		}
		if (!rd_tar_number(h + 124, 12, &size))
			return false;
		padded = (size + RD_BLOCK - 1) & ~(uint64_t)(RD_BLOCK - 1);
		if (padded > len - pos - RD_BLOCK)
			return false;
		if (tf == 'L')
			s->n_longname++;
		else if (tf == 'K')
			s->n_longlink++;
		else if (tf == 'g' && !rd_pax_parse(h + RD_BLOCK, (size_t)size,
						    true, global))
			return false;
		else if (tf != 'g' &&
			 (s->n_pax++ ||
			  !rd_pax_parse(h + RD_BLOCK, (size_t)size, false,
					&s->pax) ||
			  !rd_pax_sparse_agree(&s->pax, h + RD_BLOCK,
					       (size_t)padded)))
			return false;
		pos += RD_BLOCK + (size_t)padded;
	}
	s->tail = len - pos;
	if (!rd_names_agree(s))
		return false;
	if (!rd_tar_number(s->main + 124, 12, &s->stored) ||
	    !rd_tar_signed_fits(s->main + 136, 12))
		return false;
	if (s->pax.has_size)
		s->stored = s->pax.size;
	if (s->main[156] == 'S')
		return rd_scan_gnu_sparse(p + pos, s->tail, s->main);
	if (s->pax.has_major || s->pax.has_minor) {
		/* pax sparse 1.0: the map leads the data area */
		if (!s->pax.has_major || !s->pax.has_minor)
			return false;
		s->map = s->tail;
		return s->tail % RD_BLOCK == 0 && s->tail <= s->stored;
	}
	return s->tail == 0;
}

static bool rd_name_field_is_dir(const unsigned char *h)
{
	return h[0] && h[strnlen((const char *)h, 100) - 1] == '/';
}

static enum wsnap_raw_type rd_classify(char tf, const unsigned char *h)
{
	switch (tf) {
	case '0':
	case '7':
	case 'S':
		return WSNAP_RAW_FILE;
	case '\0':
		/* as Python's tarfile: an old-style regular file whose name
		 * field ends in '/' is a directory (rd_member refuses a
		 * final name ending in '/' otherwise) */
		if (rd_name_field_is_dir(h))
			return WSNAP_RAW_DIR;
		return WSNAP_RAW_FILE;
	case '5':
		return WSNAP_RAW_DIR;
	case '2':
		return WSNAP_RAW_SYMLINK;
	case '1':
		return WSNAP_RAW_HARDLINK;
	default:
		return WSNAP_RAW_OTHER;
	}
}

/*
 * The sparse map of a regular file: sorted, non-overlapping runs within
 * the size whose lengths add up to the stored data. libarchive drops runs
 * it finds invalid, so a map it trimmed no longer adds up and is refused.
 */
static bool rd_sparse_map(struct rd *r, struct archive_entry *e, uint64_t size,
			  uint64_t data_len, struct wsnap_raw_member *m)
{
	la_int64_t off, len;
	uint64_t end = 0, sum = 0;
	size_t n = 0;
	int count = archive_entry_sparse_reset(e);

	if (count <= 0)
		return data_len == size; /* not sparse after all */
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK) {
		if (off < 0 || len < 0 || (uint64_t)off < end ||
		    (uint64_t)len > size ||
		    (uint64_t)off > size - (uint64_t)len)
			return false;
		end = (uint64_t)off + (uint64_t)len;
		sum += (uint64_t)len; /* <= end <= size: no overflow */
		if (len == 0)
			continue;
		if (n == r->runs_cap) {
			size_t cap = r->runs_cap ? r->runs_cap * 2 : 16;
			struct wsnap_sparse_run *p;

			if (cap > RD_MAX_SPARSE_RUNS)
				return false;
			p = realloc(r->runs, cap * sizeof(*p));
			if (!p) {
				rd_io(r, ENOMEM, "out of memory");
				return false;
			}
			r->runs = p;
			r->runs_cap = cap;
		}
		r->runs[n].offset = (uint64_t)off;
		r->runs[n].length = (uint64_t)len;
		n++;
	}
	if (sum != data_len)
		return false;
	if (n == 0) {
		/* all holes: one empty run keeps the file marked sparse */
		if (!r->runs_cap) {
			r->runs = malloc(sizeof(*r->runs));
			if (!r->runs) {
				rd_io(r, ENOMEM, "out of memory");
				return false;
			}
			r->runs_cap = 1;
		}
		r->runs[0].offset = size;
		r->runs[0].length = 0;
		n = 1;
	}
	m->sparse = r->runs;
	m->nsparse = n;
	return true;
}

/* The only libarchive warning accepted (reader.h). */
bool wsnap_reader_charset_warning(struct archive *a)
{
	static const char mid[] = " can't be converted from ";
	static const char tail[] = " to current locale.";
	const char *msg = archive_error_string(a);
	size_t len;

	if (!msg || archive_errno(a) != EILSEQ)
		return false;
	len = strlen(msg);
	return strstr(msg, mid) && len > sizeof(tail) &&
	       memcmp(msg + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) ==
		       0;
}

/*
 * Builds the raw member of the entry libarchive just returned, from its
 * header region [hp, fb). Returns WSNAP_OK, or the error (invalid stream).
 */
static enum wsnap_status rd_member(struct rd *r, struct archive *inner,
				   struct archive_entry *e,
				   struct wsnap_raw_member *m)
{
	int64_t hp = archive_read_header_position(inner);
	int64_t fb = archive_filter_bytes(inner, 0);
	struct rd_scan s;
	const char *name = archive_entry_pathname(e);
	la_int64_t esize = archive_entry_size(e);
	char tf;

	if (r->region_lost || r->too_big || hp < 0 || fb < hp ||
	    (uint64_t)hp < r->win_off ||
	    (uint64_t)fb > r->win_off + r->win_len ||
	    (uint64_t)(fb - hp) > WSNAP_READER_MAX_HEADER_BYTES)
		return wsnap_error_stream(r->err);
	if (!rd_scan_region(r->win + (hp - (int64_t)r->win_off),
			    (size_t)(fb - hp), &r->global, &s))
		return wsnap_error_stream(r->err);
	if (!name || esize < 0 || s.stored > (uint64_t)INT64_MAX - (uint64_t)fb)
		return wsnap_error_stream(r->err);

	memset(m, 0, sizeof(*m));
	tf = (char)s.main[156];
	m->name = name;
	m->name_len = strlen(name);
	m->typeflag = tf;
	/*
	 * Typeflag NUL and a name ending in '/' from a long name, a pax
	 * path or the prefix: libarchive makes it a directory, tarfile
	 * (which looks at the name field only) a regular file.
	 */
	if (tf == '\0' && m->name_len && name[m->name_len - 1] == '/' &&
	    !rd_name_field_is_dir(s.main))
		return wsnap_error_stream(r->err);
	m->type = rd_classify(tf, s.main);
	m->mode = (uint32_t)archive_entry_perm(e) & 07777;
	m->data_offset = (uint64_t)fb;
	if (s.pax.has_mtime) {
		/* our own reading: libarchive's is wrong before 1970 */
		m->mtime_sec = s.pax.mtime_sec;
		m->mtime_nsec = s.pax.mtime_nsec;
	} else if (r->global.has_mtime) {
		/* libarchive ignores global headers; tarfile applies them */
		m->mtime_sec = r->global.mtime_sec;
		m->mtime_nsec = r->global.mtime_nsec;
	} else {
		m->mtime_sec = archive_entry_mtime(e);
		m->mtime_nsec = (uint32_t)archive_entry_mtime_nsec(e);
	}

	switch (m->type) {
	case WSNAP_RAW_FILE:
		m->size = (uint64_t)esize;
		if (!rd_sparse_map(r, e, m->size, s.stored - s.map, m))
			return r->io_failed ? WSNAP_IO
					    : wsnap_error_stream(r->err);
		break;
	case WSNAP_RAW_SYMLINK:
	case WSNAP_RAW_HARDLINK:
		m->linkname = m->type == WSNAP_RAW_SYMLINK
				      ? archive_entry_symlink(e)
				      : archive_entry_hardlink(e);
		if (!m->linkname)
			m->linkname = "";
		m->linkname_len = strlen(m->linkname);
		/*
		 * A symlink without a target: libarchive reports none at
		 * all, tarfile an empty one, and no filesystem can hold it
		 * (symlink(2) fails with ENOENT): not a readable member.
		 */
		if (m->type == WSNAP_RAW_SYMLINK && !m->linkname_len)
			return wsnap_error_stream(r->err);
		/* fall through */
	case WSNAP_RAW_DIR:
		/*
		 * libarchive skips the data of a pax directory or hardlink
		 * by its size, tarfile never does: with data the two would
		 * see different members after it.
		 */
		if (s.stored)
			return wsnap_error_stream(r->err);
		break;
	case WSNAP_RAW_OTHER:
		/* devices and FIFOs: as above; any other type: tarfile skips
		 * its data by the size, libarchive must skip the same */
		if (tf == '3' || tf == '4' || tf == '6'
			    ? s.stored != 0
			    : (uint64_t)esize != s.stored)
			return wsnap_error_stream(r->err);
		break;
	}
	return WSNAP_OK;
}

/* ---- driving the read --------------------------------------------------- */

static int rd_open_spill(struct rd *r)
{
	const char *dir = r->opts->tmpdir;
	size_t dl;
	char *path;
	int fd;

	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	dl = strlen(dir);
	path = malloc(dl + sizeof("/wsnap-spill-XXXXXX"));
	if (!path) {
		rd_io(r, ENOMEM, "out of memory");
		return -1;
	}
	memcpy(path, dir, dl);
	memcpy(path + dl, "/wsnap-spill-XXXXXX", sizeof("/wsnap-spill-XXXXXX"));
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		wsnap_error_io(r->err, errno, dir, "cannot create spill file");
		r->io_failed = true;
	} else {
		unlink(path);
	}
	free(path);
	return fd;
}

static const char *rd_filter_name(int code)
{
	switch (code) {
	case ARCHIVE_FILTER_NONE:
		return "none";
	case ARCHIVE_FILTER_GZIP:
		return "gzip";
	case ARCHIVE_FILTER_BZIP2:
		return "bzip2";
	case ARCHIVE_FILTER_XZ:
		return "xz";
	case ARCHIVE_FILTER_ZSTD:
		return "zstd";
	case ARCHIVE_FILTER_LZ4:
		return "lz4";
	default:
		return NULL;
	}
}

/*
 * Opens the outer reader: the five decompressors policy.md names (no
 * external programs), then the raw format. *compression is the filter
 * found; more than one layer of compression is not a tar stream.
 */
static enum wsnap_status rd_outer_open(struct rd *r, const char **compression)
{
	struct archive_entry *e;
	int code;

	r->outer = archive_read_new();
	if (!r->outer)
		return rd_io(r, ENOMEM, "out of memory");
	if (archive_read_support_filter_gzip(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_bzip2(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_xz(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_lz4(r->outer) != ARCHIVE_OK ||
	    archive_read_support_format_raw(r->outer) != ARCHIVE_OK ||
	    archive_read_set_read_callback(r->outer, rd_outer_read) !=
		    ARCHIVE_OK ||
	    archive_read_set_callback_data(r->outer, r) != ARCHIVE_OK)
		return rd_io(r, 0, "cannot set up decompression");
	if (archive_read_open1(r->outer) != ARCHIVE_OK)
		return rd_fail(r); /* also an empty input */
	if (archive_filter_count(r->outer) > 2)
		return wsnap_error_stream(r->err);
	code = archive_filter_code(r->outer, 0);
	*compression = rd_filter_name(code);
	if (!*compression)
		return wsnap_error_stream(r->err);
	if (archive_read_next_header(r->outer, &e) != ARCHIVE_OK)
		return rd_fail(r);
	return WSNAP_OK;
}

/* Copies input bytes [off, off + n) from the outer buffers, or from the
 * file; false if they are not at hand. */
static bool rd_input_at(struct rd *r, uint64_t off, unsigned char *out,
			size_t n)
{
	size_t i, got = 0;

	for (i = 0; i < 2 && got < n; i++) {
		int k = r->ocur ^ 1 ^ (int)i; /* older buffer first */
		const struct rd_outbuf *b = &r->obuf[k];
		uint64_t at = off + got;

		if (b->len && at >= b->off && at < b->off + b->len) {
			size_t c = (size_t)(b->off + b->len - at);

			if (c > n - got)
				c = n - got;
			memcpy(out + got, b->data + (at - b->off), c);
			got += c;
		}
	}
	if (got == n)
		return true;
	if (!r->regular)
		return false;
	while (got < n) {
		ssize_t m =
			pread(r->fd, out + got, n - got, (off_t)(off + got));

		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0) {
			rd_io(r, errno, "cannot read archive");
			return false;
		}
		if (m == 0)
			return false;
		got += (size_t)m;
	}
	return true;
}

/*
 * gzip ends with the CRC-32 and the length (mod 2^32) of what it decoded;
 * libarchive skips both unchecked. A stream of several gzip members does
 * not match the last member's trailer and is refused with the rest.
 */
static bool rd_gzip_trailer_ok(struct rd *r, uint64_t used)
{
	unsigned char t[8];

	if (used < 8 || !rd_input_at(r, used - 8, t, sizeof(t)))
		return false;
	return rd_le32(t) == (r->crc->crc ^ 0xffffffffu) &&
	       rd_le32(t + 4) == (uint32_t)r->stream_bytes;
}

/*
 * Piped layout, after the tar end: decode the rest of the stream (which
 * checks the compressed stream to its trailer), then make sure nothing but
 * zero padding follows the compressed stream in the input.
 */
static enum wsnap_status rd_drain(struct rd *r, bool compressed)
{
	int64_t used;
	int i;

	r->pend_len = 0;
	while (!r->outer_eof) {
		if (!rd_outer_next(r))
			return rd_fail(r);
		r->pend_len = 0;
	}
	if (!compressed)
		return WSNAP_OK;
	/* bytes the decompressor took from the input */
	used = archive_filter_bytes(r->outer, -1);
	if (used < 0 || (uint64_t)used > r->in_pos)
		return wsnap_error_stream(r->err);
	for (i = 0; i < 2; i++) {
		const struct rd_outbuf *b = &r->obuf[i];
		uint64_t from =
			(uint64_t)used > b->off ? (uint64_t)used : b->off;

		if (b->len && from < b->off + b->len &&
		    !rd_all_zero(b->data + (from - b->off),
				 (size_t)(b->off + b->len - from)))
			return wsnap_error_stream(r->err);
	}
	if ((uint64_t)used < r->obuf[0].off && (uint64_t)used < r->obuf[1].off)
		return wsnap_error_stream(r->err); /* cannot check: refuse */
	if (r->crc && !rd_gzip_trailer_ok(r, (uint64_t)used))
		return r->io_failed ? WSNAP_IO : wsnap_error_stream(r->err);
	for (;;) {
		unsigned char *buf = r->obuf[r->ocur].data;
		ssize_t n = rd_input_read(r, buf, RD_OUTER_CHUNK);

		if (n < 0)
			return WSNAP_IO;
		if (n == 0)
			return WSNAP_OK;
		if (!rd_all_zero(buf, (size_t)n))
			return wsnap_error_stream(r->err);
	}
}

static enum wsnap_status rd_inner_open(struct rd *r, struct archive **out)
{
	struct archive *a = archive_read_new();

	*out = a;
	if (!a)
		return rd_io(r, ENOMEM, "out of memory");
	if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_set_read_callback(a, r->direct ? rd_direct_read
							: rd_piped_read) !=
		    ARCHIVE_OK ||
	    (r->direct &&
	     archive_read_set_skip_callback(a, rd_direct_skip) != ARCHIVE_OK) ||
	    archive_read_set_callback_data(a, r) != ARCHIVE_OK)
		return rd_io(r, 0, "cannot set up tar reader");
	if (archive_read_open1(a) != ARCHIVE_OK)
		return rd_fail(r);
	return WSNAP_OK;
}

/* Reads every member and calls fn; the tar part, common to both layouts. */
static enum wsnap_status rd_members(struct rd *r, struct archive *inner,
				    wsnap_reader_fn fn, void *ctx)
{
	bool first = true;

	for (;;) {
		struct archive_entry *e;
		struct wsnap_raw_member m;
		enum wsnap_status st;
		int ret;

		/* skip the previous member's data outside the header phase,
		 * so the window never keeps it */
		if (!first && archive_read_data_skip(inner) != ARCHIVE_OK)
			return rd_fail(r);
		first = false;
		r->in_header = true;
		r->region_lost = false;
		ret = archive_read_next_header(inner, &e);
		r->in_header = false;
		if (ret == ARCHIVE_EOF)
			return r->io_failed ? WSNAP_IO : WSNAP_OK;
		if (ret != ARCHIVE_OK && !(ret == ARCHIVE_WARN &&
					   wsnap_reader_charset_warning(inner)))
			return rd_fail(r);
		st = rd_member(r, inner, e, &m);
		if (st != WSNAP_OK)
			return st;
		st = fn(ctx, &m, r->err);
		if (st != WSNAP_OK)
			return st;
	}
}

static enum wsnap_status rd_run(struct rd *r, wsnap_reader_fn fn, void *ctx,
				struct wsnap_reader_result *res)
{
	const char *compression = NULL;
	struct archive *inner = NULL;
	enum wsnap_status st;
	struct stat sb;

	if (fstat(r->fd, &sb) != 0)
		return rd_io(r, errno, "cannot stat archive");
	r->regular = S_ISREG(sb.st_mode);
	r->size = r->regular && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
	if (r->regular && r->size == 0)
		return wsnap_error_stream(r->err); /* zero bytes */

	st = rd_outer_open(r, &compression);
	if (st != WSNAP_OK)
		return st;
	res->compression = compression;
	if (r->regular && strcmp(compression, "none") == 0) {
		/* plain file: read it in place, skip data by seeking */
		archive_read_free(r->outer);
		r->outer = NULL;
		r->direct = true;
		r->in_pos = 0;
		r->win_off = 0;
		r->win_len = 0;
	} else {
		if (strcmp(compression, "gzip") == 0) {
			r->crc = malloc(sizeof(*r->crc));
			if (!r->crc)
				return rd_io(r, ENOMEM, "out of memory");
			rd_crc_init(r->crc);
		}
		if (r->opts->keep_data) {
			r->spill_fd = rd_open_spill(r);
			if (r->spill_fd < 0)
				return WSNAP_IO;
		}
	}

	st = rd_inner_open(r, &inner);
	if (st == WSNAP_OK)
		st = rd_members(r, inner, fn, ctx);
	if (inner)
		archive_read_free(inner);
	if (st != WSNAP_OK)
		return st;
	if (!r->direct) {
		st = rd_drain(r, strcmp(compression, "none") != 0);
		if (st != WSNAP_OK)
			return st;
		if (r->stream_bytes == 0)
			return wsnap_error_stream(r->err);
	}
	res->stream_bytes = r->direct ? r->size : r->stream_bytes;
	res->input_bytes = r->input_bytes;
	if (r->opts->keep_data) {
		if (r->direct) {
			res->data_fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
			if (res->data_fd < 0)
				return rd_io(r, errno, "cannot dup archive");
		} else {
			res->data_fd = r->spill_fd;
			res->spilled = true;
			r->spill_fd = -1;
		}
	}
	if (r->opts->progress)
		r->opts->progress(r->opts->progress_ctx,
				  r->direct ? r->size : r->in_pos,
				  r->regular ? r->size : 0);
	return WSNAP_OK;
}

enum wsnap_status wsnap_reader_run(int fd, const struct wsnap_reader_opts *opts,
				   wsnap_reader_fn fn, void *ctx,
				   struct wsnap_reader_result *result,
				   struct wsnap_error *err)
{
	static const struct wsnap_reader_opts defaults;
	struct wsnap_reader_result res = {.data_fd = -1, .compression = "none"};
	struct rd r;
	enum wsnap_status st;
	locale_t c_locale, old;

	memset(&r, 0, sizeof(r));
	r.fd = fd;
	r.opts = opts ? opts : &defaults;
	r.err = err;
	r.spill_fd = -1;
	r.ocur = 1;
	wsnap_error_clear(err);

	/* names must reach us as raw bytes: no locale conversion */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c_locale == (locale_t)0)
		return wsnap_error_io(err, errno, NULL, "cannot set locale");
	old = uselocale(c_locale);

	st = rd_run(&r, fn, ctx, &res);

	if (r.outer)
		archive_read_free(r.outer);
	uselocale(old);
	freelocale(c_locale);
	if (r.spill_fd >= 0)
		close(r.spill_fd);
	free(r.obuf[0].data);
	free(r.obuf[1].data);
	free(r.win);
	free(r.runs);
	free(r.crc);
	if (st != WSNAP_OK && res.data_fd >= 0) {
		close(res.data_fd);
		res.data_fd = -1;
	}
	if (result)
		*result = res;
	else if (res.data_fd >= 0)
		close(res.data_fd);
	return st;
}
