/* SPDX-License-Identifier: MIT */
/*
 * Random access to an archive's bytes, wherever they are.
 *
 * Two layers:
 *  - a source (struct wsnap_source) is the archive object as stored: a
 *    local file, or an object behind HTTP(S)/S3. It reads raw bytes at an
 *    offset and knows whether the object is still the version that was
 *    validated (a file's identity, fileid.h; a remote object's ETag);
 *  - a stream (struct wsnap_stream) is the decoded tar stream, the bytes
 *    that an index's physical offsets address: a plain archive's source as
 *    it is, or a compressed one decoded from a seek point.
 *
 * An index whose data is not a plain local descriptor (wsnap_index_data_fd)
 * reads through a stream (wsnap_index_attach_stream, index.h).
 *
 * Contract of every implementation:
 *  - pread is safe from any number of threads at once;
 *  - pread returns the bytes read (fewer than asked only at the end of the
 *    object or stream, 0 at or past it) or a negative errno;
 *  - check returns 0 while the object is the version validated, -EIO once
 *    it is not (or -errno when that cannot be told); once it has said -EIO
 *    it never says 0 again (a file's identity includes its ctime);
 *  - identity is checked in one layer, by whoever serves the bytes: check
 *    before and after they are read (wsnap_index_pread does, for every
 *    FUSE read, hydrate and export). pread itself need not check (a local
 *    file's does not: one fstat per read was four or five per FUSE read
 *    through seek points), so bytes read while the object changed may be
 *    wrong, and the check after the read is what makes them -EIO. A
 *    decoded span cached from such bytes is never served either: every
 *    later check fails;
 *  - destroy frees everything (NULL-safe through wsnap_*_free); a stream
 *    owns the source it was made over.
 */
#ifndef WSNAP_STREAM_H
#define WSNAP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wsnap_source;
/*
 * A check of bytes as they arrive from where they are stored
 * (set_data_check): [off, off + len) is data; 0, or a negative errno when
 * the bytes must not be used. Called from any thread, without locks.
 */
typedef int (*wsnap_data_check_fn)(void *ctx, uint64_t off, const void *data,
				   size_t len);

/*
 * Optional members (NULL: not offered), for sources and streams that keep
 * what they read (a remote object's chunk cache):
 *  - set_data_check makes every piece read from storage from then on pass
 *    fn before a reader waiting for the whole piece gets it (call it before
 *    the first read; the caller keeps ctx alive while the source lives);
 *  - fill reads [off, off + len) as pread would, without copying it out:
 *    once it returns 0 what holds those bytes has passed the check.
 */
struct wsnap_source_ops {
	ssize_t (*pread)(struct wsnap_source *src, void *buf, size_t len,
			 uint64_t off);
	int (*check)(struct wsnap_source *src);
	void (*destroy)(struct wsnap_source *src);
	void (*set_data_check)(struct wsnap_source *src, wsnap_data_check_fn fn,
			       void *ctx);
	int (*fill)(struct wsnap_source *src, size_t len, uint64_t off);
};

struct wsnap_source {
	const struct wsnap_source_ops *ops;
	uint64_t size; /* the object's size when it was opened */
	/* what messages call it: a path, or a URL without credentials */
	const char *label;
	/* reads cost requests over a network (a remote object): it reads
	 * ahead itself, in bytes fetched (chunks.h), and a stream over it
	 * decodes nothing ahead (spans that may never be read are bytes
	 * fetched for nothing) */
	bool fetches;
};

struct wsnap_stream;
struct wsnap_stream_ops {
	ssize_t (*pread)(struct wsnap_stream *s, void *buf, size_t len,
			 uint64_t off);
	int (*check)(struct wsnap_stream *s);
	void (*destroy)(struct wsnap_stream *s);
	/* optional, as for sources (a plain stream: its source's) */
	void (*set_data_check)(struct wsnap_stream *s, wsnap_data_check_fn fn,
			       void *ctx);
	int (*fill)(struct wsnap_stream *s, size_t len, uint64_t off);
};

struct wsnap_stream {
	const struct wsnap_stream_ops *ops;
	uint64_t size; /* decoded bytes */
};

/* ---- sources ------------------------------------------------------------ */

/*
 * A source over a local regular file: takes over fd (closed by destroy, also
 * when this fails) and records its identity once it has settled
 * (wsnap_fileid_settle); check is -EIO once the file is not that one (pread
 * does not check: see the contract above; a read that ends before the size
 * recorded is -EIO).
 * label is copied. Returns 0 and *out, or a negative errno.
 */
int wsnap_source_file(int fd, const char *label, struct wsnap_source **out);

/* A source over len bytes at data, which the caller keeps unchanged while
 * it lives (tests and fuzz targets); check always holds. Returns 0 and
 * *out, or -ENOMEM. */
int wsnap_source_memory(const void *data, size_t len,
			struct wsnap_source **out);

/* Reads exactly len bytes at off; 0, -EIO when the object ends first, or a
 * negative errno. */
int wsnap_source_read(struct wsnap_source *src, void *buf, size_t len,
		      uint64_t off);

void wsnap_source_free(struct wsnap_source *src);

/* ---- streams ------------------------------------------------------------ */

/* The stream of a plain (uncompressed) archive: the source itself. Takes
 * over src (freed on failure too). Returns 0 and *out, or -ENOMEM. */
int wsnap_stream_plain(struct wsnap_source *src, struct wsnap_stream **out);

/* Reads exactly len bytes at off of the decoded stream; 0, -EIO when it
 * ends first, or a negative errno. */
int wsnap_stream_read(struct wsnap_stream *s, void *buf, size_t len,
		      uint64_t off);

static inline int wsnap_stream_check(struct wsnap_stream *s)
{
	return s->ops->check(s);
}

void wsnap_stream_free(struct wsnap_stream *s);

#endif
