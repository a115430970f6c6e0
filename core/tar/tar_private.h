/*
 * The state of one wsnap_reader_run, shared by the files of the tar reader:
 * reader.c (the driver), input.c (the input side: layouts, windows, read
 * callbacks, decompression checks, the spill file) and member.c (members
 * from their headers). header.c does not need it. Internal to core/tar:
 * nothing outside this directory includes it.
 *
 * Invariants:
 *  - the window holds stream bytes [win_off, win_off + win_len): while a
 *    header is being parsed (in_header), everything from
 *    archive_read_header_position() on is kept, bounded by
 *    WSNAP_READER_MAX_HEADER_BYTES (too_big past it, region_lost if any of
 *    it went); otherwise only the latest client buffer;
 *  - the first I/O error is the one reported: wsnap_reader_io sets err and
 *    io_failed once, and every later failure of a libarchive call then
 *    reports WSNAP_IO (wsnap_reader_fail), not an invalid stream;
 *  - everything allocated here is owned by the state and released by
 *    wsnap_reader_input_release (input side) and the driver (runs).
 */
#ifndef WSNAP_TAR_PRIVATE_H
#define WSNAP_TAR_PRIVATE_H

#include <archive.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "header.h"
#include "reader.h"

/* An outer (compressed input) client buffer. */
struct wsnap_reader_outbuf {
	unsigned char *data;
	size_t len;
	uint64_t off; /* input offset of data[0] */
};

struct wsnap_reader_crc; /* CRC-32 of a gzip stream (input.c) */

struct wsnap_reader {
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
	/* the two latest outer client buffers */
	struct wsnap_reader_outbuf obuf[2];
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
	struct wsnap_reader_crc *crc;

	/* per-member scratch */
	struct wsnap_sparse_run *runs;
	size_t runs_cap;
};

/* ---- input.c ------------------------------------------------------------ */

/* Records the first I/O error (errnum, what) on r->err; returns WSNAP_IO. */
enum wsnap_status wsnap_reader_io(struct wsnap_reader *r, int errnum,
				  const char *what);

/* The status of a failed libarchive call: an I/O error a callback met,
 * else an invalid stream. */
enum wsnap_status wsnap_reader_fail(struct wsnap_reader *r);

/*
 * Opens the outer reader over r->fd (the decompressors and the raw
 * format); *compression is the filter found, a static string. Errors: an
 * invalid stream (also an empty input, several layers of compression),
 * WSNAP_IO.
 */
enum wsnap_status wsnap_reader_outer_open(struct wsnap_reader *r,
					  const char **compression);

/*
 * Chooses the layout once the compression is known: direct for a plain
 * regular file (the outer reader is dropped), piped otherwise (the gzip
 * CRC and, with keep_data, the spill file are set up). Errors: WSNAP_IO.
 */
enum wsnap_status wsnap_reader_layout(struct wsnap_reader *r,
				      const char *compression);

/* Opens the inner (tar) reader over the layout's read callbacks into *out,
 * which the caller frees with archive_read_free even on error. */
enum wsnap_status wsnap_reader_inner_open(struct wsnap_reader *r,
					  struct archive **out);

/*
 * Piped layout, after the tar end: decodes the rest of the stream, checks
 * the gzip trailer and that only zero padding follows a compressed stream.
 * Errors: an invalid stream, WSNAP_IO.
 */
enum wsnap_status wsnap_reader_drain(struct wsnap_reader *r, bool compressed);

/* Frees what the input side holds (outer reader, buffers, window, CRC) and
 * closes the spill file unless it was handed over (spill_fd -1). */
void wsnap_reader_input_release(struct wsnap_reader *r);

/* ---- member.c ----------------------------------------------------------- */

/*
 * Reads every member of the open inner reader, builds its struct
 * wsnap_raw_member and calls fn; the tar part, common to both layouts.
 * Returns WSNAP_OK at the tar end, the callback's status unchanged, or the
 * error met (an invalid stream, WSNAP_IO).
 */
enum wsnap_status wsnap_reader_members(struct wsnap_reader *r,
				       struct archive *inner,
				       wsnap_reader_fn fn, void *ctx);

#endif
