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
 *    block by block (header.c, wsnap_tar_scan_region): extension headers,
 *    then exactly one main header, whose raw typeflag is reported; what
 *    libarchive would gloss over, or what libarchive and Python's tarfile
 *    would read differently, ends the read as '<tar>' invalid tar stream;
 *  - the read runs in the "C" locale (uselocale, this thread only), so that
 *    libarchive never converts names: they come out as their raw bytes. The
 *    only libarchive warning accepted is the "can't be converted" one that
 *    this produces for non-ASCII pax names.
 */
#include "reader.h"

#include "header.h"

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

struct rd_outbuf {
	unsigned char *data;
	size_t len;
	uint64_t off; /* input offset of data[0] */
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
	struct wsnap_tar_pax global;

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

static enum wsnap_raw_type rd_classify(char tf, const unsigned char *h)
{
	switch (tf) {
	case WSNAP_TAR_REG:
	case WSNAP_TAR_CONT:
	case WSNAP_TAR_GNU_SPARSE:
		return WSNAP_RAW_FILE;
	case WSNAP_TAR_AREG:
		/* as Python's tarfile: an old-style regular file whose name
		 * field ends in '/' is a directory (rd_member refuses a
		 * final name ending in '/' otherwise) */
		if (wsnap_tar_name_field_is_dir(h))
			return WSNAP_RAW_DIR;
		return WSNAP_RAW_FILE;
	case WSNAP_TAR_DIR:
		return WSNAP_RAW_DIR;
	case WSNAP_TAR_SYM:
		return WSNAP_RAW_SYMLINK;
	case WSNAP_TAR_LNK:
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

/* The only libarchive warning accepted: a name it could not convert to
 * (errno EILSEQ: libarchive's ARCHIVE_ERRNO_FILE_FORMAT on Linux)
 * the (C) locale, which leaves the raw bytes in the entry. */
static bool rd_is_charset_warning(struct archive *a)
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
	struct wsnap_tar_scan s;
	const char *name = archive_entry_pathname(e);
	la_int64_t esize = archive_entry_size(e);
	char tf;

	if (r->region_lost || r->too_big || hp < 0 || fb < hp ||
	    (uint64_t)hp < r->win_off ||
	    (uint64_t)fb > r->win_off + r->win_len ||
	    (uint64_t)(fb - hp) > WSNAP_READER_MAX_HEADER_BYTES)
		return wsnap_error_stream(r->err);
	if (!wsnap_tar_scan_region(r->win + (hp - (int64_t)r->win_off),
				   (size_t)(fb - hp), &r->global, &s))
		return wsnap_error_stream(r->err);
	if (!name || esize < 0 || s.stored > (uint64_t)INT64_MAX - (uint64_t)fb)
		return wsnap_error_stream(r->err);

	memset(m, 0, sizeof(*m));
	tf = (char)s.main[WSNAP_TAR_OFF(typeflag)];
	m->name = name;
	m->name_len = strlen(name);
	m->typeflag = tf;
	/*
	 * Typeflag NUL and a name ending in '/' from a long name, a pax
	 * path or the prefix: libarchive makes it a directory, tarfile
	 * (which looks at the name field only) a regular file.
	 */
	if (tf == WSNAP_TAR_AREG && m->name_len &&
	    name[m->name_len - 1] == '/' &&
	    !wsnap_tar_name_field_is_dir(s.main))
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
		if (tf == WSNAP_TAR_CHR || tf == WSNAP_TAR_BLK ||
				    tf == WSNAP_TAR_FIFO
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
		    !wsnap_tar_all_zero(b->data + (from - b->off),
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
		if (!wsnap_tar_all_zero(buf, (size_t)n))
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
		if (ret != ARCHIVE_OK &&
		    !(ret == ARCHIVE_WARN && rd_is_charset_warning(inner)))
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
