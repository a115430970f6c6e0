/* SPDX-License-Identifier: MIT */
/*
 * The input side of the tar reader: how the bytes of the tar stream reach
 * libarchive's tar parser (the "inner" reader) through our own read
 * callbacks, so that the raw header bytes of every member can be seen.
 *
 * Two layouts:
 *  - direct: an uncompressed regular file. The inner reader pulls the file
 *    through rd_direct_read (pread) and skips member data with
 *    rd_direct_skip (no read at all), so the cost grows with the members;
 *  - piped: anything compressed, or a pipe. A decoder (decode.c: ours for
 *    gzip, liblzma for xz, an "outer" libarchive reader for the rest)
 *    decodes the input; the inner reader pulls the decoded bytes through
 *    rd_piped_read; with keep_data they are also written to an unlinked
 *    "spill" file, whose offsets equal stream offsets, unless the stream
 *    is seekable (gzip in a regular file: seek points are recorded
 *    instead, and the data is read in place later). After the tar end
 *    the rest of the stream is decoded to its very end, so a bad trailer
 *    or a truncated stream is seen, but no further than
 *    WSNAP_READER_MAX_TRAILING_BYTES past the end-of-archive marker:
 *    beyond that the stream is invalid (a plain file is measured by its
 *    size), so what follows the marker
 *    costs bounded work whatever it decodes to.
 *
 * Invariants:
 *  - the window holds stream bytes [win_off, win_off + win_len): while a
 *    header is being parsed, everything from archive_read_header_position()
 *    on is kept (bounded by WSNAP_READER_MAX_HEADER_BYTES); otherwise only
 *    the latest client buffer. Memory is bounded whatever the input;
 *  - only what the inner reader pulls is spilled: nothing after the tar
 *    end but the rest of the last chunk it asked for;
 *  - an error inside a callback is recorded once (wsnap_reader_io) and the
 *    callback returns ARCHIVE_FATAL; nothing here prints.
 */
#include "tar_private.h"

#include "archive_dl.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes per read of a plain file. */
#define RD_DIRECT_CHUNK (1u << 20)
/* Most decoded bytes handed to the inner reader at once (piped). */
#define RD_PIPED_CHUNK (256u << 10)
/* Progress is reported about this often (bytes of input). */
#define RD_PROGRESS_STEP (4u << 20)

enum wsnap_status wsnap_reader_io(struct wsnap_reader *r, int errnum,
				  const char *what)
{
	if (!r->io_failed) {
		r->io_failed = true;
		wsnap_error_io(r->err, errnum, NULL, "%s", what);
	}
	return WSNAP_IO;
}

void wsnap_reader_progress(struct wsnap_reader *r, uint64_t done)
{
	if (!r->opts->progress || done < r->next_progress)
		return;
	r->next_progress = done + RD_PROGRESS_STEP;
	r->opts->progress(r->opts->progress_ctx, done,
			  r->regular ? r->size : 0);
}

ssize_t wsnap_reader_input_read(struct wsnap_reader *r, unsigned char *buf,
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
	wsnap_reader_progress(r, r->in_pos);
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

		if (hp >= 0)
			hp += r->la_shift;

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

bool wsnap_reader_cancelled(struct wsnap_reader *r)
{
	if (!r->opts->cancel ||
	    !atomic_load_explicit(r->opts->cancel, memory_order_relaxed))
		return false;
	wsnap_reader_io(r, ECANCELED, "read cancelled");
	return true;
}

/*
 * After a hand-over (tar_private.h): the dummy block first, then the
 * window's bytes that the walker read and libarchive has not had. True
 * when one of them is the client buffer (*n bytes at *buf).
 */
static bool rd_handover_read(struct wsnap_reader *r, const void **buf,
			     la_ssize_t *n)
{
	if (r->la_dummy) {
		r->la_dummy = false;
		*buf = r->dummy;
		*n = (la_ssize_t)r->dummy_len;
		return true;
	}
	if (r->replay) {
		*buf = r->win + (r->win_len - r->replay);
		*n = (la_ssize_t)r->replay;
		r->replay = 0;
		return true;
	}
	return false;
}

/* Direct layout: the inner reader's read callback. */
static la_ssize_t rd_direct_read(struct archive *a, void *ctx, const void **buf)
{
	struct wsnap_reader *r = ctx;
	la_ssize_t hn;
	ssize_t n;

	if (rd_handover_read(r, buf, &hn))
		return hn;
	if (wsnap_reader_cancelled(r) ||
	    !rd_window_prepare(r, a, RD_DIRECT_CHUNK))
		return ARCHIVE_FATAL;
	n = wsnap_reader_input_read(r, r->win + r->win_len, RD_DIRECT_CHUNK);
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
	wsnap_reader_progress(r, r->in_pos);
	return (la_int64_t)n;
}

bool wsnap_reader_spill(struct wsnap_reader *r, const unsigned char *p,
			size_t len)
{
	while (r->spill_fd >= 0 && len > 0) {
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

/* Piped layout: the inner reader's read callback. */
static la_ssize_t rd_piped_read(struct archive *a, void *ctx, const void **buf)
{
	struct wsnap_reader *r = ctx;
	la_ssize_t hn;
	size_t n;

	if (rd_handover_read(r, buf, &hn))
		return hn;
	if (wsnap_reader_cancelled(r) ||
	    !rd_window_prepare(r, a, RD_PIPED_CHUNK))
		return ARCHIVE_FATAL;
	if (!wsnap_decoder_next(r))
		return ARCHIVE_FATAL;
	n = r->pend_len < RD_PIPED_CHUNK ? r->pend_len : RD_PIPED_CHUNK;
	if (n) {
		memcpy(r->win + r->win_len, r->pend, n);
		if (!wsnap_reader_spill(r, r->pend, n))
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

/*
 * Chooses the layout (see the top of this file) once the compression of
 * the input is known.
 */
enum wsnap_status wsnap_reader_layout(struct wsnap_reader *r,
				      const char *compression)
{
	if (r->regular && strcmp(compression, "none") == 0) {
		/* plain file: read it in place, skip data by seeking */
		wsnap_decoder_release(r);
		r->direct = true;
		r->in_pos = 0;
		r->win_off = 0;
		r->win_len = 0;
		return WSNAP_OK;
	}
	/* gzip in a regular file is read in place from its seek points; xz
	 * and zstd where their blocks or frames will do */
	r->seekable =
		r->regular && !r->opts->no_seek &&
		(strcmp(compression, "gzip") == 0 || wsnap_decoder_may_seek(r));
	if (r->opts->keep_data && !r->seekable) {
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
		return wsnap_reader_fail(r, a);
	return WSNAP_OK;
}

static enum wsnap_status rd_trailing(struct wsnap_reader *r, uint64_t tar_end)
{
	return wsnap_reader_invalid(
		r,
		"more than %llu bytes follow the "
		"end-of-archive marker at byte %llu",
		(unsigned long long)WSNAP_READER_MAX_TRAILING_BYTES,
		(unsigned long long)tar_end);
}

/*
 * After the tar end: the bytes after the end-of-archive marker (policy.md
 * section 5: data there is ignored, and the work it costs is bounded). A
 * plain file is measured by its size. A piped stream is decoded on, but
 * stops being decoded once more than the bound follows the marker (3 KB of
 * bzip2 decode to gigabytes of zeros): its trailer can then not be reached,
 * so the archive cannot be shown to end cleanly and is refused. An honest
 * archive is padded to its record size (10 KiB for GNU tar and tarfile),
 * far below the bound, so its trailer is always checked.
 */
enum wsnap_status wsnap_reader_drain(struct wsnap_reader *r, uint64_t tar_end)
{
	const uint64_t max = WSNAP_READER_MAX_TRAILING_BYTES;

	if (r->direct)
		return tar_end > r->size || r->size - tar_end > max
			       ? rd_trailing(r, tar_end)
			       : WSNAP_OK;
	r->pend_len = 0;
	for (;;) {
		if (tar_end > r->stream_bytes ||
		    r->stream_bytes - tar_end > max)
			return rd_trailing(r, tar_end);
		if (r->dec.eof)
			break;
		if (!wsnap_decoder_next(r))
			return wsnap_reader_fail(r, r->dec.outer);
		r->pend_len = 0;
	}
	return wsnap_decoder_finish(r);
}

void wsnap_reader_input_release(struct wsnap_reader *r)
{
	wsnap_decoder_release(r);
	wsnap_spans_release(&r->spans);
	if (r->spill_fd >= 0)
		close(r->spill_fd);
	r->spill_fd = -1;
	free(r->obuf[0].data);
	free(r->obuf[1].data);
	free(r->win);
}
