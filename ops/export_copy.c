/* SPDX-License-Identifier: MIT */
/*
 * Regular files of the export (policy.md 7.5, 7.8): creating one, copying
 * a member's data into it, then its mode and mtime.
 *
 * Invariants:
 *  - A file is created with O_CREAT | O_EXCL | O_NOFOLLOW at 0600 in the
 *    descriptor of its parent (export_dirs.c): never through a symlink,
 *    never onto an existing entry (which is unlinked first, not opened).
 *  - Order of 7.5: all data, then fchmod of the still-open descriptor to the
 *    sanitized mode, then the mtime, then close. A failure before the
 *    fchmod (disk full, archive changed) leaves a private partial file 0600,
 *    never one with its final permissions.
 *  - The data read is the data validated: a short read, a missing extent or
 *    a stream that goes backwards is 'archive changed since it was read'
 *    (EIO), never a silently short file. Holes stay holes (a trailing one
 *    by ftruncate). With an index from a sidecar, every run is checked
 *    against its digests (wsnap_index_verify) before it is copied.
 *  - Every buffer has a fixed size (COPY_BUF_SIZE, WINDOW_SIZE,
 *    STREAM_READ_SIZE), whatever the member sizes; copy_file_range goes in
 *    COPY_RANGE_CHUNK pieces so that a huge file stays interruptible.
 *  - Small runs are written from a read-ahead window of the data stream
 *    (one pread serves many small files, pass 1 following archive order);
 *    larger ones by copy_file_range, falling back for good to pread/pwrite
 *    when the pair of descriptors does not support it.
 */
#include "export_private.h"
#include "fsutil.h"

#include "archive_dl.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_OPEN_FLAGS                                                        \
	(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)

/* pread/pwrite fallback buffer. */
#define COPY_BUF_SIZE (256u << 10)
/* Data runs up to SMALL_RUN bytes are written from a window of the data
 * stream read ahead WINDOW_SIZE bytes at a time: pass 1 follows archive
 * order, so one pread serves many small files, and a write from memory is
 * cheaper than a copy_file_range per file. */
#define SMALL_RUN   (64u << 10)
#define WINDOW_SIZE (1u << 20)
/* copy_file_range chunk (keeps a huge file interruptible). */
#define COPY_RANGE_CHUNK (64u << 20)

/*
 * A compressed archive decompressed a second time (WSNAP_EXPORT_INPUT):
 * libarchive's raw format behind the decompression filters yields the tar
 * stream itself, block by block, in order. Pass 1 asks for data at
 * increasing offsets, so reading only forward is enough.
 */
struct exp_stream {
	struct archive *a;
	int fd;
	uint64_t in_off; /* next offset to read in the compressed file */
	char *inbuf;
	const char *blk; /* current block of the decompressed stream */
	size_t blk_len;
	uint64_t blk_pos; /* its offset in the decompressed stream */
};

/* ---- buffers --------------------------------------------------------- */

int wsnap_export_copy_init(struct exp *x)
{
	x->buf = malloc(COPY_BUF_SIZE);
	x->win = malloc(WINDOW_SIZE);
	x->win_off = 0;
	x->win_len = 0;
	return x->buf && x->win ? 0 : -1;
}

/* ---- data runs ------------------------------------------------------- */

/* True when copy_file_range cannot do this pair of descriptors at all. */
static bool copy_range_unsupported(int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP ||
	       e == EBADF || e == ETXTBSY || e == EPERM;
}

static enum wsnap_status write_at(struct exp *x, int fd,
				  const struct wsnap_node *n, const char *p,
				  size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t w;

		WSNAP_RETRY_EINTR(w, pwrite(fd, p, len, (off_t)off));
		if (w < 0)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot write");
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return WSNAP_OK;
}

/* Reads up to len bytes of the data at phys: from the descriptor, or the
 * index's stream when there is none. The bytes read, or -1 with errno. */
static ssize_t data_read(struct exp *x, void *buf, size_t len, uint64_t phys)
{
	ssize_t r;

	if (x->datafd >= 0) {
		WSNAP_RETRY_EINTR(r, pread(x->datafd, buf, len, (off_t)phys));
		return r;
	}
	r = wsnap_index_read_stored(x->idx, buf, len, phys);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* A small run, through the read-ahead window. */
static enum wsnap_status copy_small(struct exp *x, int fd,
				    const struct wsnap_node *n, uint64_t phys,
				    uint64_t off, size_t len)
{
	if (phys < x->win_off || phys - x->win_off > x->win_len ||
	    len > x->win_len - (phys - x->win_off)) {
		ssize_t r;

		r = data_read(x, x->win, WINDOW_SIZE, phys);
		if (r < 0)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot read archive data");
		x->win_off = phys;
		x->win_len = (size_t)r;
		if ((size_t)r < len)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive changed since it was read");
	}
	return write_at(x, fd, n, x->win + (phys - x->win_off), len, off);
}

/* Copies len bytes from the data stream at phys to fd at off. */
static enum wsnap_status copy_run(struct exp *x, int fd,
				  const struct wsnap_node *n, uint64_t phys,
				  uint64_t off, uint64_t len)
{
	while (len > 0 && x->use_copy_range && x->datafd >= 0) {
		loff_t in = (loff_t)phys, out = (loff_t)off;
		size_t chunk = len > COPY_RANGE_CHUNK ? COPY_RANGE_CHUNK : len;
		ssize_t r = copy_file_range(x->datafd, &in, fd, &out, chunk, 0);

		if (r > 0) {
			phys += (uint64_t)r;
			off += (uint64_t)r;
			len -= (uint64_t)r;
			x->st->copy_range = true;
			continue;
		}
		if (r == 0)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive changed since it was read");
		if (errno == EINTR)
			continue;
		if (!copy_range_unsupported(errno))
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot write");
		x->use_copy_range = false;
		x->st->copy_range = false;
	}
	while (len > 0) {
		size_t chunk = len > COPY_BUF_SIZE ? COPY_BUF_SIZE : len;
		enum wsnap_status s;
		ssize_t r;

		r = data_read(x, x->buf, chunk, phys);
		if (r < 0)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot read archive data");
		if (r == 0)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive changed since it was read");
		s = write_at(x, fd, n, x->buf, (size_t)r, off);
		if (s != WSNAP_OK)
			return s;
		phys += (uint64_t)r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return WSNAP_OK;
}

/* ---- a compressed input, decompressed again ------------------------- */

#define STREAM_READ_SIZE (256u << 10)

static la_ssize_t stream_read(struct archive *a, void *ctx, const void **buf)
{
	struct exp_stream *s = ctx;
	ssize_t r;

	WSNAP_RETRY_EINTR(
		r, pread(s->fd, s->inbuf, STREAM_READ_SIZE, (off_t)s->in_off));
	if (r < 0) {
		archive_set_error(a, errno, "cannot read the archive");
		return -1;
	}
	s->in_off += (uint64_t)r;
	*buf = s->inbuf;
	return r;
}

static void stream_close(struct exp_stream *s)
{
	if (!s)
		return;
	if (s->a)
		archive_read_free(s->a);
	free(s->inbuf);
	free(s);
}

void wsnap_export_copy_release(struct exp *x)
{
	free(x->buf);
	free(x->win);
	x->buf = NULL;
	x->win = NULL;
	stream_close(x->stream);
	x->stream = NULL;
}

enum wsnap_status wsnap_export_stream_open(struct exp *x, int fd)
{
	struct exp_stream *s = calloc(1, sizeof(*s));
	struct archive_entry *e;

	if (!s || !(s->inbuf = malloc(STREAM_READ_SIZE)) ||
	    !(s->a = archive_read_new())) {
		stream_close(s);
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	}
	s->fd = fd;
	x->stream = s;
	/* the compressions the reader accepts, nothing run as a program */
	archive_read_support_filter_gzip(s->a);
	archive_read_support_filter_bzip2(s->a);
	archive_read_support_filter_xz(s->a);
	archive_read_support_filter_zstd(s->a);
	archive_read_support_filter_lz4(s->a);
	archive_read_support_format_raw(s->a);
	if (archive_read_open2(s->a, s, NULL, stream_read, NULL, NULL) !=
		    ARCHIVE_OK ||
	    archive_read_next_header(s->a, &e) != ARCHIVE_OK)
		return wsnap_export_fail_io(x, EIO, NULL,
					    "cannot read the archive again");
	return WSNAP_OK;
}

/* Makes the current block hold stream offset p; only forward. */
static enum wsnap_status stream_seek(struct exp *x, const struct wsnap_node *n,
				     uint64_t p)
{
	struct exp_stream *s = x->stream;

	while (p < s->blk_pos || p - s->blk_pos >= s->blk_len) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r;

		if (p < s->blk_pos)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive changed since it was read");
		r = archive_read_data_block(s->a, &buf, &len, &off);
		if (r != ARCHIVE_OK || off < 0)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				r == ARCHIVE_EOF
					? "archive changed since it was "
					  "read"
					: "cannot read the archive again");
		s->blk = buf;
		s->blk_len = len;
		s->blk_pos = (uint64_t)off;
	}
	return WSNAP_OK;
}

static enum wsnap_status copy_stream(struct exp *x, int fd,
				     const struct wsnap_node *n, uint64_t phys,
				     uint64_t off, uint64_t len)
{
	struct exp_stream *s = x->stream;
	enum wsnap_status st;

	while (len > 0) {
		size_t avail;

		st = stream_seek(x, n, phys);
		if (st != WSNAP_OK)
			return st;
		avail = s->blk_len - (size_t)(phys - s->blk_pos);
		if (avail > len)
			avail = (size_t)len;
		st = write_at(x, fd, n, s->blk + (phys - s->blk_pos), avail,
			      off);
		if (st != WSNAP_OK)
			return st;
		phys += avail;
		off += avail;
		len -= avail;
	}
	return WSNAP_OK;
}

/* All of a file's data; holes stay holes. */
static enum wsnap_status copy_data(struct exp *x, int fd, uint32_t ino,
				   const struct wsnap_node *n)
{
	uint64_t off = 0;
	bool hole_at_end = false;
	enum wsnap_status s;

	while (off < n->size) {
		struct wsnap_extent ext;
		uint64_t skip, avail;

		if (wsnap_index_extent(x->idx, ino, off, &ext) < 0 ||
		    ext.logical > off || ext.logical + ext.length <= off)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive changed since it was read");
		skip = off - ext.logical;
		avail = ext.length - skip;
		if (avail > n->size - off)
			avail = n->size - off;
		if (ext.physical >= 0 &&
		    wsnap_index_verify(x->idx, ino,
				       (uint64_t)ext.physical + skip,
				       avail) < 0)
			return wsnap_export_fail_io(
				x, EIO, n->path,
				"archive data does not match its index file");
		if (ext.physical < 0) {
			hole_at_end = true;
		} else if (x->stream) {
			hole_at_end = false;
			s = copy_stream(x, fd, n, (uint64_t)ext.physical + skip,
					off, avail);
			if (s != WSNAP_OK)
				return s;
		} else if (avail <= SMALL_RUN) {
			hole_at_end = false;
			s = copy_small(x, fd, n, (uint64_t)ext.physical + skip,
				       off, (size_t)avail);
			if (s != WSNAP_OK)
				return s;
		} else {
			hole_at_end = false;
			s = copy_run(x, fd, n, (uint64_t)ext.physical + skip,
				     off, avail);
			if (s != WSNAP_OK)
				return s;
		}
		off += avail;
		x->prog.bytes_done += avail;
	}
	if (hole_at_end && ftruncate(fd, (off_t)n->size) < 0)
		return wsnap_export_fail_io(x, errno, n->path, "cannot write");
	return WSNAP_OK;
}

/* ---- a file ---------------------------------------------------------- */

/*
 * Pass 1, a regular file: created 0600 with O_EXCL | O_NOFOLLOW, filled,
 * then fchmod to its sanitized mode on the still-open descriptor, then its
 * mtime. A failure before the fchmod leaves the partial file 0600.
 */
enum wsnap_status wsnap_export_put_file(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	struct timespec ts[2];
	enum wsnap_status s;
	int pfd, fd = -1, tries;

	pfd = wsnap_export_dir_fd(x, n->parent, n, true);
	if (pfd < 0)
		return x->err->status;
	for (tries = 0; tries < LEAF_RETRIES; tries++) {
		fd = openat(pfd, name, FILE_OPEN_FLAGS, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot create file");
		s = wsnap_export_clear_leaf(x, pfd, n);
		if (s != WSNAP_OK)
			return s;
	}
	if (fd < 0)
		return wsnap_export_fail_io(x, EAGAIN, n->path,
					    "destination keeps changing");
	s = copy_data(x, fd, ino, n);
	if (s != WSNAP_OK)
		goto out;
	if (fchmod(fd, n->mode & 07777) < 0) {
		s = wsnap_export_fail_io(x, errno, n->path, "cannot set mode");
		goto out;
	}
	node_times(n, ts);
	if (futimens(fd, ts) < 0) {
		s = wsnap_export_fail_io(x, errno, n->path, "cannot set mtime");
		goto out;
	}
	x->st->files++;
	x->st->bytes += n->size;
out:
	if (close(fd) < 0 && s == WSNAP_OK)
		s = wsnap_export_fail_io(x, errno, n->path, "cannot write");
	return s;
}
