/*
 * The input side of the tar reader: how the bytes of the tar stream reach
 * libarchive's tar parser (the "inner" reader) through our own read
 * callbacks, so that the raw header bytes of every member can be seen.
 *
 * Two layouts:
 *  - direct: an uncompressed regular file. The inner reader pulls the file
 *    through rd_direct_read (pread) and skips member data with
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
 *  - the outer reader's two client buffers are the latest two reads of the
 *    input, so the bytes just past the end of a compressed stream (its
 *    trailer, and what follows it) are still at hand when it ends;
 *  - an error inside a callback is recorded once (wsnap_reader_io) and the
 *    callback returns ARCHIVE_FATAL; nothing here prints.
 */
#include "tar_private.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes per read of a plain file, and per read of a compressed input. */
#define RD_DIRECT_CHUNK (1u << 20)
#define RD_OUTER_CHUNK	(256u << 10)
/* Most decoded bytes handed to the inner reader at once (piped). */
#define RD_PIPED_CHUNK (256u << 10)
/* Progress is reported about this often (bytes of input). */
#define RD_PROGRESS_STEP (4u << 20)

/* CRC-32 (IEEE 802.3, as gzip), eight bytes per step. */
struct wsnap_reader_crc {
	uint32_t t[8][256];
	uint32_t crc;
};

static void rd_crc_init(struct wsnap_reader_crc *c)
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

static void rd_crc_update(struct wsnap_reader_crc *c, const unsigned char *p,
			  size_t n)
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

enum wsnap_status wsnap_reader_io(struct wsnap_reader *r, int errnum,
				  const char *what)
{
	if (!r->io_failed) {
		r->io_failed = true;
		wsnap_error_io(r->err, errnum, NULL, "%s", what);
	}
	return WSNAP_IO;
}

/* The status of a failed libarchive call: an I/O error a callback met,
 * else an invalid stream. */
enum wsnap_status wsnap_reader_fail(struct wsnap_reader *r)
{
	if (r->io_failed)
		return WSNAP_IO;
	return wsnap_error_stream(r->err);
}

static void rd_progress(struct wsnap_reader *r, uint64_t done)
{
	if (!r->opts->progress || done < r->next_progress)
		return;
	r->next_progress = done + RD_PROGRESS_STEP;
	r->opts->progress(r->opts->progress_ctx, done,
			  r->regular ? r->size : 0);
}

/* Reads up to len bytes of the input at in_pos (pread for a regular file,
 * read otherwise); fills the buffer unless the input ends. */
static ssize_t rd_input_read(struct wsnap_reader *r, unsigned char *buf,
			     size_t len)
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
			wsnap_reader_io(r, errno, "cannot read archive");
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
static bool rd_window_prepare(struct wsnap_reader *r, struct archive *inner,
			      size_t want)
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
			wsnap_reader_io(r, ENOMEM, "out of memory");
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
	struct wsnap_reader *r = ctx;
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
	struct wsnap_reader *r = ctx;
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
	struct wsnap_reader *r = ctx;
	struct wsnap_reader_outbuf *b;
	ssize_t n;

	r->ocur ^= 1;
	b = &r->obuf[r->ocur];
	if (!b->data) {
		b->data = malloc(RD_OUTER_CHUNK);
		if (!b->data) {
			wsnap_reader_io(r, ENOMEM, "out of memory");
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

static bool rd_spill_write(struct wsnap_reader *r, const unsigned char *p,
			   size_t len)
{
	while (len > 0) {
		ssize_t n = write(r->spill_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			wsnap_reader_io(
				r, errno,
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
static bool rd_outer_next(struct wsnap_reader *r)
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
	struct wsnap_reader *r = ctx;
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

static int rd_open_spill(struct wsnap_reader *r)
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
		wsnap_reader_io(r, ENOMEM, "out of memory");
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
enum wsnap_status wsnap_reader_outer_open(struct wsnap_reader *r,
					  const char **compression)
{
	struct archive_entry *e;
	int code;

	r->outer = archive_read_new();
	if (!r->outer)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	if (archive_read_support_filter_gzip(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_bzip2(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_xz(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(r->outer) != ARCHIVE_OK ||
	    archive_read_support_filter_lz4(r->outer) != ARCHIVE_OK ||
	    archive_read_support_format_raw(r->outer) != ARCHIVE_OK ||
	    archive_read_set_read_callback(r->outer, rd_outer_read) !=
		    ARCHIVE_OK ||
	    archive_read_set_callback_data(r->outer, r) != ARCHIVE_OK)
		return wsnap_reader_io(r, 0, "cannot set up decompression");
	if (archive_read_open1(r->outer) != ARCHIVE_OK)
		return wsnap_reader_fail(r); /* also an empty input */
	if (archive_filter_count(r->outer) > 2)
		return wsnap_error_stream(r->err);
	code = archive_filter_code(r->outer, 0);
	*compression = rd_filter_name(code);
	if (!*compression)
		return wsnap_error_stream(r->err);
	if (archive_read_next_header(r->outer, &e) != ARCHIVE_OK)
		return wsnap_reader_fail(r);
	return WSNAP_OK;
}

/*
 * Chooses the layout (see the top of this file) once the compression of
 * the input is known.
 */
enum wsnap_status wsnap_reader_layout(struct wsnap_reader *r,
				      const char *compression)
{
	if (r->regular && strcmp(compression, "none") == 0) {
		/* plain file: read it in place, skip data by seeking */
		archive_read_free(r->outer);
		r->outer = NULL;
		r->direct = true;
		r->in_pos = 0;
		r->win_off = 0;
		r->win_len = 0;
		return WSNAP_OK;
	}
	if (strcmp(compression, "gzip") == 0) {
		r->crc = malloc(sizeof(*r->crc));
		if (!r->crc)
			return wsnap_reader_io(r, ENOMEM, "out of memory");
		rd_crc_init(r->crc);
	}
	if (r->opts->keep_data) {
		r->spill_fd = rd_open_spill(r);
		if (r->spill_fd < 0)
			return WSNAP_IO;
	}
	return WSNAP_OK;
}

enum wsnap_status wsnap_reader_inner_open(struct wsnap_reader *r,
					  struct archive **out)
{
	struct archive *a = archive_read_new();

	*out = a;
	if (!a)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_set_read_callback(a, r->direct ? rd_direct_read
							: rd_piped_read) !=
		    ARCHIVE_OK ||
	    (r->direct &&
	     archive_read_set_skip_callback(a, rd_direct_skip) != ARCHIVE_OK) ||
	    archive_read_set_callback_data(a, r) != ARCHIVE_OK)
		return wsnap_reader_io(r, 0, "cannot set up tar reader");
	if (archive_read_open1(a) != ARCHIVE_OK)
		return wsnap_reader_fail(r);
	return WSNAP_OK;
}

/* Copies input bytes [off, off + n) from the outer buffers, or from the
 * file; false if they are not at hand. */
static bool rd_input_at(struct wsnap_reader *r, uint64_t off,
			unsigned char *out, size_t n)
{
	size_t i, got = 0;

	for (i = 0; i < 2 && got < n; i++) {
		int k = r->ocur ^ 1 ^ (int)i; /* older buffer first */
		const struct wsnap_reader_outbuf *b = &r->obuf[k];
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
			wsnap_reader_io(r, errno, "cannot read archive");
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
static bool rd_gzip_trailer_ok(struct wsnap_reader *r, uint64_t used)
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
enum wsnap_status wsnap_reader_drain(struct wsnap_reader *r, bool compressed)
{
	int64_t used;
	int i;

	r->pend_len = 0;
	while (!r->outer_eof) {
		if (!rd_outer_next(r))
			return wsnap_reader_fail(r);
		r->pend_len = 0;
	}
	if (!compressed)
		return WSNAP_OK;
	/* bytes the decompressor took from the input */
	used = archive_filter_bytes(r->outer, -1);
	if (used < 0 || (uint64_t)used > r->in_pos)
		return wsnap_error_stream(r->err);
	for (i = 0; i < 2; i++) {
		const struct wsnap_reader_outbuf *b = &r->obuf[i];
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

void wsnap_reader_input_release(struct wsnap_reader *r)
{
	if (r->outer)
		archive_read_free(r->outer);
	r->outer = NULL;
	if (r->spill_fd >= 0)
		close(r->spill_fd);
	r->spill_fd = -1;
	free(r->obuf[0].data);
	free(r->obuf[1].data);
	free(r->win);
	free(r->crc);
}
