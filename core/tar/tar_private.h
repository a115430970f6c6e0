/* SPDX-License-Identifier: MIT */
/*
 * The state of one wsnap_reader_run, shared by the files of the tar reader:
 * reader.c (the driver), input.c (the input side: layouts, windows, read
 * callbacks, the spill file, the end of the stream), decode.c (the
 * decompressors of the piped layout and the checks of a compressed
 * stream's end) and member.c (members from their headers). header.c does
 * not need it. Internal to core/tar: nothing outside this directory
 * includes it.
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
#include <sys/types.h>

#include "error.h"
#include "frames.h"
#include "header.h"
#include "reader.h"

/* Most bytes of a member name quoted in a detail (diagnose.c). */
#define WSNAP_READER_NAME_MAX 128

/* An outer (compressed input) client buffer. */
struct wsnap_reader_outbuf {
	unsigned char *data;
	size_t len;
	uint64_t off; /* input offset of data[0] */
};

struct wsnap_gz;   /* the gzip decoder (decode.c) */
struct wsnap_xz;   /* the xz decoder (decode.c) */
struct wsnap_zstd; /* the zstd decoder (decode_zstd.c) */
struct wsnap_seek_table;

/* The decompressor of the piped layout (decode.c): one of outer, gz, xz
 * and zstd. */
struct wsnap_decoder {
	const char *compression; /* "none", "gzip", ... (static) */
	struct archive *outer;	 /* libarchive: bzip2, lz4, "none" */
	struct wsnap_gz *gz;	 /* ours: every member's trailer checked */
	struct wsnap_xz *xz;	 /* liblzma, with a memory limit */
	struct wsnap_zstd *zstd; /* libzstd, recording its frames */
	bool peeked; /* the outer reader has not had the first chunk yet */
	bool eof;    /* the decoded stream has ended */
	bool said;   /* it failed and recorded why (diagnose.c) */
};

struct wsnap_reader {
	int fd;
	bool direct;   /* plain regular file read in place */
	bool regular;  /* fd is a regular file (pread from offset 0) */
	bool seekable; /* piped, but read in place from seek points: no spill */
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
	struct wsnap_decoder dec;
	/* the two latest chunks of compressed input */
	struct wsnap_reader_outbuf obuf[2];
	int ocur;
	const unsigned char *pend; /* decoded bytes not yet in the window */
	size_t pend_len;
	uint64_t stream_bytes; /* decoded bytes taken from the decoder */
	int spill_fd;
	/* restart points of an xz or zstd stream (frames.h); spans_lost:
	 * too many to keep */
	struct wsnap_spans spans;
	bool spans_lost;
	enum wsnap_zstd_table zstd_table;

	/* first I/O error met inside a callback (status WSNAP_IO) */
	struct wsnap_error *err;
	bool io_failed;

	/*
	 * Hand-over from the walker (walker.c) to libarchive: libarchive's
	 * stream is our dummy header blocks (dummy_len bytes), then the
	 * stream from la_shift + dummy_len on, so stream offset =
	 * libarchive's + la_shift. la_dummy: the read callback still owes
	 * the dummy; replay: the last bytes of the window, which the walker
	 * read but libarchive has not had yet (handed over as the next
	 * client buffer). All 0 when libarchive reads from the start.
	 * back: libarchive has read a member and handed the stream back to
	 * the walker at back_at. la_pax: libarchive's format state says a
	 * pax header was seen (walker.c: the dummy then starts with an
	 * empty 'g' header to keep it so).
	 */
	bool handed;
	bool la_dummy;
	bool back;
	bool la_pax;
	unsigned char dummy[2 * WSNAP_TAR_BLOCK];
	size_t dummy_len;
	int64_t la_shift;
	size_t replay;
	uint64_t back_at;

	/* attributes of the global pax headers seen so far */
	struct wsnap_tar_pax global;

	/* per-member scratch */
	struct wsnap_sparse_run *runs;
	size_t runs_cap;

	/* for the detail of an invalid stream (diagnose.c) */
	unsigned char head[WSNAP_TAR_BLOCK]; /* first input bytes */
	size_t head_len;
	unsigned char dhead[WSNAP_TAR_BLOCK]; /* first decoded bytes */
	size_t dhead_len;
	uint64_t members;  /* members handed to the callback */
	uint64_t next_hdr; /* where the next header is due */
	char last_name[WSNAP_READER_NAME_MAX]; /* the latest member, cut */
};

/* ---- input.c ------------------------------------------------------------ */

/* Records the first I/O error (errnum, what) on r->err; returns WSNAP_IO. */
enum wsnap_status wsnap_reader_io(struct wsnap_reader *r, int errnum,
				  const char *what);

/* ---- diagnose.c --------------------------------------------------------- */

/*
 * The status of a failed libarchive call on a: an I/O error a callback
 * met, an invalid stream already recorded (by a decoder), else an invalid
 * stream whose detail says what the header due next looks like.
 */
enum wsnap_status wsnap_reader_fail(struct wsnap_reader *r, struct archive *a);

/* The same with libarchive's message msg (NULL: none), for the walker
 * (walker.c), which says what libarchive would. */
enum wsnap_status wsnap_reader_fail_msg(struct wsnap_reader *r,
					const char *msg);

/* Records an invalid stream with the detail built from fmt; returns
 * WSNAP_REJECTED. */
enum wsnap_status wsnap_reader_invalid(struct wsnap_reader *r, const char *fmt,
				       ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Once the read failed with st: when no member was read, a detail saying
 * what the input is instead of a tar stream (empty, zip, plain text, a
 * compression wsnap does not read, compressed data that is no tar).
 */
void wsnap_reader_explain(struct wsnap_reader *r, enum wsnap_status st,
			  const char *compression);

/* Keeps (a cut copy of) the name of the member just read, for a detail. */
void wsnap_reader_keep_name(struct wsnap_reader *r, const char *name,
			    size_t len);

/* Keeps the first decoded bytes (n at p) while fewer than a block are
 * kept. */
void wsnap_reader_keep_head(unsigned char *dst, size_t *dst_len,
			    const unsigned char *p, size_t n);

/* Reports progress at position done of the input (now and then). */
void wsnap_reader_progress(struct wsnap_reader *r, uint64_t done);

/* Whether the read was cancelled (reader.h); records it as an I/O
 * error. */
bool wsnap_reader_cancelled(struct wsnap_reader *r);

/* Piped layout: writes n decoded bytes at p to the spill file, if any.
 * Errors (recorded): false. */
bool wsnap_reader_spill(struct wsnap_reader *r, const unsigned char *p,
			size_t n);

/* Reads up to len bytes of the input at in_pos (pread for a regular file,
 * read otherwise); fills the buffer unless the input ends. Returns the
 * bytes read, or -1 on an I/O error (recorded). */
ssize_t wsnap_reader_input_read(struct wsnap_reader *r, unsigned char *buf,
				size_t len);

/*
 * Chooses the layout once the compression is known: direct for a plain
 * regular file (the decoder is dropped), piped otherwise (with keep_data
 * the spill file is set up). Errors: WSNAP_IO.
 */
enum wsnap_status wsnap_reader_layout(struct wsnap_reader *r,
				      const char *compression);

/* Opens the inner (tar) reader over the layout's read callbacks into *out,
 * which the caller frees with archive_read_free even on error. */
enum wsnap_status wsnap_reader_inner_open(struct wsnap_reader *r,
					  struct archive **out);

/*
 * After the tar end, which lies at tar_end in the decoded stream: at most
 * WSNAP_READER_MAX_TRAILING_BYTES may follow it (a plain file's size says;
 * the piped layout decodes the rest, stopping past the bound), then the
 * decoder checks the end of the compressed stream. Errors: an invalid
 * stream, WSNAP_IO.
 */
enum wsnap_status wsnap_reader_drain(struct wsnap_reader *r, uint64_t tar_end);

/* Frees what the input side holds (decoder, buffers, window) and closes
 * the spill file unless it was handed over (spill_fd -1). */
void wsnap_reader_input_release(struct wsnap_reader *r);

/* ---- decode.c ----------------------------------------------------------- */

/*
 * Reads the first chunk of input and opens the decoder it calls for: xz
 * (by its magic) or libarchive's outer reader; *compression is the name of
 * what was found, a static string. Errors: an invalid stream (also an
 * empty input, several layers of compression), WSNAP_IO.
 */
enum wsnap_status wsnap_decoder_open(struct wsnap_reader *r,
				     const char **compression);

/*
 * Makes r->pend hold the next decoded bytes when it is empty (pend_len 0
 * with dec.eof at the end of the stream), counting them in stream_bytes.
 * Returns false on an error: an I/O error is recorded, anything else is an
 * invalid stream (wsnap_reader_fail tells which).
 */
bool wsnap_decoder_next(struct wsnap_reader *r);

/*
 * Once the decoded stream has ended: checks what follows the compressed
 * stream in the input (zero padding only, read to the end of the input)
 * and the gzip trailer. Errors: an invalid stream, WSNAP_IO.
 */
enum wsnap_status wsnap_decoder_finish(struct wsnap_reader *r);

/* Frees the decoder; harmless when none was opened. */
void wsnap_decoder_release(struct wsnap_reader *r);

/* For the decoders of other files: the next chunk of input (NULL on an I/O
 * error, recorded), and an invalid stream with libarchive's message msg
 * (NULL: truncated) as rd_decoder_invalid words it; returns false. */
const struct wsnap_reader_outbuf *wsnap_decoder_chunk(struct wsnap_reader *r);
bool wsnap_decoder_invalid(struct wsnap_reader *r, const char *msg);

/* ---- decode_zstd.c ------------------------------------------------------ */

/* Whether the n bytes at p start a zstd stream: a zstd frame, after any
 * skippable frames (whose magic lz4 shares) that end inside them. */
bool wsnap_decoder_is_zstd(const unsigned char *p, size_t n);

/* Opens the zstd decoder over the first chunk and decodes the first bytes
 * (an empty stream, or one that holds another compression, is invalid
 * here, as libarchive's outer reader found). Errors: an invalid stream,
 * WSNAP_IO. */
enum wsnap_status
wsnap_decoder_zstd_open(struct wsnap_reader *r,
			const struct wsnap_reader_outbuf *first);
/* wsnap_decoder_next's step for zstd: the next decoded bytes into pend. */
bool wsnap_decoder_zstd_next(struct wsnap_reader *r);
void wsnap_decoder_zstd_release(struct wsnap_reader *r);
/* wsnap_decoder_may_seek for zstd (decode_spans.c). */
bool wsnap_decoder_zstd_may_seek(struct wsnap_reader *r);

/* ---- decode_xzidx.c ----------------------------------------------------- */

/*
 * Before a regular xz input is decoded: the blocks, from the streams'
 * indexes read from the end of the file, as spans (r->spans), which must
 * add up to the input's size. The pass then checks every index against
 * the blocks (liblzma's stream decoder) and the spans against the bytes
 * decoded (wsnap_decoder_finish). A file whose indexes cannot be read so
 * keeps no spans (spans_lost: it is read through a spill), which is no
 * error. Errors: WSNAP_IO (out of memory).
 */
enum wsnap_status wsnap_decoder_xz_spans(struct wsnap_reader *r);

/* ---- decode_spans.c ----------------------------------------------------- */

/*
 * At the layout's choice, for xz and zstd in a regular file: whether the
 * stream will likely be read in place, so that no spill is written: xz
 * when its indexes list two spans or more, all within the bounds of
 * seek.h (wsnap_spans_seekable); zstd when its seek table does, or else
 * when its first frame declares a content size within them (then a later
 * frame may follow). A guess that the pass proves wrong (one frame only,
 * a frame too large) gives no seek table, and the caller spills with
 * no_seek (wsnap_index_build).
 */
bool wsnap_decoder_may_seek(struct wsnap_reader *r);

/* Once an xz or zstd stream has ended: its spans as a seek table (the
 * caller's), NULL when there are none or they cannot be one. */
struct wsnap_seek_table *wsnap_decoder_spans_seek(struct wsnap_reader *r);

/* Once the stream has ended: the seek table recorded while it was decoded
 * (the caller's; wsnap_seek_table_free), NULL when none was (not gzip, not
 * a regular file, given up). */
struct wsnap_seek_table *wsnap_decoder_take_seek(struct wsnap_reader *r);

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

/*
 * The parts of a member that do not depend on who parsed its headers
 * (libarchive's entry or the walker): with the header region walked
 * (s), the name and the size libarchive reports (esize), the region
 * [hp, fb): the checks of member.c's invariants, then *m filled but for
 * mode, the header's mtime (*have_mtime false: the caller sets it),
 * the link target and the sparse map; *data_end is where tarfile reads
 * the next header. Errors: an invalid stream.
 */
enum wsnap_status wsnap_reader_check_member(
	struct wsnap_reader *r, const struct wsnap_tar_scan *s,
	const char *name, int64_t esize, int64_t hp, int64_t fb,
	struct wsnap_raw_member *m, uint64_t *data_end, bool *have_mtime);

/* Sets the link target of a symlink or hardlink m (NULL: empty); a
 * symlink without one is an invalid stream. */
enum wsnap_status wsnap_reader_check_link(struct wsnap_reader *r,
					  struct wsnap_raw_member *m,
					  const char *linkname);

/* The invalid stream of a header region wsnap_tar_scan_region refused
 * (s as it left it) of the member named name at hp. */
enum wsnap_status wsnap_reader_region_invalid(struct wsnap_reader *r,
					      const struct wsnap_tar_scan *s,
					      const char *name, int64_t hp);

/* ---- walker.c ----------------------------------------------------------- */

/*
 * Reads the members of the (decoded) stream from *pos (0: its start; else
 * where libarchive handed it back, r->back_at) by walking the header
 * blocks itself, as long as each is one libarchive would read as a plain
 * member (walker.c). Returns WSNAP_OK with *pos at the end of the
 * archive, or WSNAP_OK with r->handed set when a header needs libarchive:
 * the caller then opens the inner reader (which starts at that header)
 * and reads on with wsnap_reader_members. Else the callback's status
 * unchanged, or the error met (invalid stream, WSNAP_IO).
 */
enum wsnap_status wsnap_walker_run(struct wsnap_reader *r, wsnap_reader_fn fn,
				   void *ctx, uint64_t *pos);

/*
 * Whether the walker can take the stream back at pos, where libarchive
 * has just finished a member: the next header block is in the window and
 * is a plain one. inner is libarchive's reader (its format state).
 */
bool wsnap_walker_can_resume(struct wsnap_reader *r, struct archive *inner,
			     uint64_t pos);

/* Writes the dummy header blocks libarchive is handed first after a
 * hand-over into r->dummy (r->dummy_len bytes): a ustar directory "./"
 * of size 0, after an empty 'g' header when r->la_pax. */
void wsnap_walker_dummy(struct wsnap_reader *r);

#endif
