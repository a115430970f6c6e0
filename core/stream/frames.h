/* SPDX-License-Identifier: MIT */
/*
 * Restart points of xz and zstd streams: the pieces of a compressed stream
 * that decode on their own (xz blocks, zstd frames), recorded during the
 * validation pass, and the decoders that read one of them from its start.
 *
 * A span is a run of consecutive pieces: zstd frames (skippable ones
 * included, which decode to nothing), or xz blocks of one xz stream (never
 * across a stream's index and footer). Spans cover the decoded stream back
 * to back from 0, each at least WSNAP_SPAN_MIN decoded bytes but the last
 * (tiny pieces are merged, so a hostile stream of empty frames cannot make
 * the table large) unless that would make it larger than WSNAP_SPAN_MAX.
 *
 * Invariants of a span list that wsnap_spans_valid accepts:
 *  - out_off of span 0 is 0, each span starts in the output where the
 *    previous one ends, and in the input at or after its end (zstd frames
 *    are back to back; between two xz streams lie an index, a footer,
 *    padding and a header);
 *  - every out_len is in (0, WSNAP_SPAN_MAX], every in_len in
 *    (0, WSNAP_SPAN_IN_MAX], and everything lies inside the source's size.
 * A decoder gives a span's bytes only once the whole span decoded to
 * exactly out_len bytes from exactly in_len input bytes with every check
 * it carries verified (xz block checks, zstd content checksums); anything
 * else is -EIO.
 */
#ifndef WSNAP_FRAMES_H
#define WSNAP_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seek.h"
#include "stream.h"

/* Decoded bytes under which a span takes in the next piece, and over which
 * no span grows (a piece larger than this alone makes a stream that is not
 * read in place: wsnap_spans_seekable). */
#define WSNAP_SPAN_MIN	  (1u << 20)
#define WSNAP_SPAN_MAX	  WSNAP_SEEK_SPAN_MAX
#define WSNAP_SPAN_IN_MAX WSNAP_SEEK_SPAN_IN_MAX

/* Most spans kept for one stream: 2^22 spans of at least 1 MiB are 4 TiB
 * of decoded stream, and 128 MiB of table. */
#define WSNAP_SPANS_MAX (1u << 22)

/* Memory a span's decoder may use: what the validation pass allows. */
#define WSNAP_FRAMES_XZ_MEMLIMIT     ((128u + 1u) << 20)
#define WSNAP_FRAMES_ZSTD_WINDOW_LOG 27

enum wsnap_span_kind {
	WSNAP_SPAN_ZSTD = 1,
	WSNAP_SPAN_XZ = 2,
};

struct wsnap_span {
	uint64_t in_off;  /* compressed offset of its first piece */
	uint64_t in_len;  /* compressed bytes of its pieces */
	uint64_t out_off; /* decoded offset of its first byte */
	uint64_t out_len; /* decoded bytes */
	/* xz: the stream's check type (lzma_check, 0..15); zstd: 0 */
	uint32_t check;
	uint32_t pieces; /* frames or blocks (for -v figures) */
};

/*
 * A span list being recorded. wsnap_spans_piece adds one decoded piece
 * (in_off, in_len, out_len; out_off is where the previous one ended),
 * merging it into the last span when that is still small; 'boundary'
 * says the piece may not join the span before it (the first block of a
 * new xz stream). Returns 0, -ENOMEM, or -E2BIG when the list would pass
 * WSNAP_SPANS_MAX. Pieces that decode to nothing are merged into their
 * neighbours (never a span of their own unless the stream has nothing
 * else).
 */
struct wsnap_spans {
	enum wsnap_span_kind kind;
	struct wsnap_span *v;
	size_t n, cap;
	uint64_t out_end; /* decoded bytes so far */
	uint64_t pieces;
	/* pieces that decode to nothing, waiting for a span to join */
	bool pending;
	uint64_t pending_off;
	uint32_t pending_n;
	bool too_big; /* some piece is larger than WSNAP_SPAN_MAX */
};

void wsnap_spans_init(struct wsnap_spans *s, enum wsnap_span_kind kind);
int wsnap_spans_piece(struct wsnap_spans *s, uint64_t in_off, uint64_t in_len,
		      uint64_t out_len, uint32_t check, bool boundary);
void wsnap_spans_release(struct wsnap_spans *s);

/* Whether the list satisfies the invariants above for a source of
 * src_size bytes and a decoded stream of stream_size bytes. */
bool wsnap_spans_valid(const struct wsnap_span *v, size_t n, uint64_t src_size,
		       uint64_t stream_size);

/* Whether a stream with these spans is read in place: at least two spans
 * (a single frame or block has no restart point: cli.md spills it), none
 * larger than the bounds. Otherwise it is spilled. */
bool wsnap_spans_seekable(const struct wsnap_spans *s);

/* The span holding decoded offset off (binary search); n when none. */
size_t wsnap_spans_find(const struct wsnap_span *v, size_t n, uint64_t off);

/*
 * Decodes span sp of src from its start to its end and copies its decoded
 * bytes [from, from + len) to buf (from + len <= out_len). Safe from any
 * number of threads (each call has its own decoder). Returns 0, -EIO when
 * the span does not decode to what the table says (or the source is no
 * longer the version validated), -ENOMEM, -EINVAL for a range outside the
 * span, or the source's negative errno.
 */
int wsnap_zstd_span_read(struct wsnap_source *src, const struct wsnap_span *sp,
			 uint64_t from, void *buf, size_t len);
int wsnap_xz_span_read(struct wsnap_source *src, const struct wsnap_span *sp,
		       uint64_t from, void *buf, size_t len);

/*
 * The spans as a seek table of kind WSNAP_SEEK_XZ or WSNAP_SEEK_ZSTD
 * (seek.h) over a compressed object of in_size bytes: one UNIT_START point
 * per span at its in_off (the first at 0, as seek.h wants: its real start
 * goes into aux), aux = in_len | check << 32 | (in_off - point.in) << 40.
 * Returns 0 and *out (the caller's, wsnap_seek_table_free), -EINVAL when
 * the spans break a bound of seek.h (the stream is then spilled), or
 * -ENOMEM.
 */
int wsnap_spans_seek_table(const struct wsnap_spans *s, uint64_t in_size,
			   uint64_t stream_size, struct wsnap_seek_table **out);

/* The span decoders of seekstream.c for xz and zstd tables (seek.h,
 * wsnap_seek_span_fn): span i from its point and aux, which are checked
 * (a stored table is hostile input: a span outside the object, between
 * the points, or of a check type that does not exist is -EIO). */
int wsnap_seek_xz_span(const struct wsnap_seek_table *t, size_t i,
		       struct wsnap_source *src, unsigned char *out);
int wsnap_seek_zstd_span(const struct wsnap_seek_table *t, size_t i,
			 struct wsnap_source *src, unsigned char *out);

/* ---- the zstd seekable format's seek table ------------------------------ */

/* zstd's skippable frame magic used by the seek table, and the footer's. */
#define WSNAP_ZSTD_SEEKABLE_SKIP_MAGIC 0x184D2A5Eu
#define WSNAP_ZSTD_SEEKABLE_MAGIC      0x8F92EAB1u
#define WSNAP_ZSTD_SEEKABLE_FOOTER     9u
/* Most entries read from a table (the format's own limit is 2^27 - 1). */
#define WSNAP_ZSTD_SEEKABLE_MAX_FRAMES (1u << 22)

struct wsnap_zstd_seek_entry {
	uint64_t in_off, in_len;   /* compressed frame */
	uint64_t out_off, out_len; /* decoded bytes */
};

/*
 * Parses the seek table that ends the n bytes at tail, which are the last
 * n bytes of a zstd file of file_size bytes. The table must be the whole
 * last skippable frame (magic WSNAP_ZSTD_SEEKABLE_SKIP_MAGIC, its size
 * exact), its reserved bits zero, its count at most
 * WSNAP_ZSTD_SEEKABLE_MAX_FRAMES and consistent with its size, and its
 * entries must add up to exactly the file before the table. Returns 0 with
 * *out (malloc'ed, *n_out entries; the caller frees it), -ENOENT when the
 * file does not end in a seekable footer, -EAGAIN with *need (the table's
 * whole size) when n is too short to hold it, -EINVAL for a table that
 * breaks any rule, -ENOMEM.
 */
int wsnap_zstd_seek_table_parse(const unsigned char *tail, size_t n,
				uint64_t file_size, size_t *need,
				struct wsnap_zstd_seek_entry **out,
				size_t *n_out);

/*
 * Writes the seek table frame for the nf frames (compressed and decoded
 * sizes, each below 2^32) into buf (cap bytes, at least
 * wsnap_zstd_seek_table_size(nf)). Returns its size, or 0 when it does not
 * fit or a size does not fit its field.
 */
size_t wsnap_zstd_seek_table_size(size_t nf);
size_t wsnap_zstd_seek_table_write(const uint32_t *in_len,
				   const uint32_t *out_len, size_t nf,
				   unsigned char *buf, size_t cap);

/* ---- writing seekable xz and zstd streams ------------------------------- */

/* Decoded bytes per frame or block that wsnap pack writes. */
#define WSNAP_FRAMES_PIECE (4u << 20)

/* Where a writer's compressed bytes go: returns 0 or an errno. */
typedef int (*wsnap_fwriter_out)(void *ctx, const void *buf, size_t len);

/*
 * A writer of a seekable stream of the kind given: zstd as independent
 * frames of piece decoded bytes (content size and checksum in each), then
 * the seekable format's seek table; xz as one stream of blocks of piece
 * decoded bytes (CRC-64 checks), every block's sizes in its header and the
 * index. level: zstd's level, or xz's preset (0-9). Both are deterministic
 * and single-threaded. write and finish return 0 or an errno (ENOMEM,
 * EIO for a compressor failure, or out's); after an error only free is
 * allowed. bytes: compressed bytes handed to out so far.
 */
struct wsnap_fwriter;
int wsnap_fwriter_new(struct wsnap_fwriter **out, enum wsnap_span_kind kind,
		      size_t piece, int level, wsnap_fwriter_out fn, void *ctx);
int wsnap_fwriter_write(struct wsnap_fwriter *w, const void *buf, size_t len);
int wsnap_fwriter_finish(struct wsnap_fwriter *w);
uint64_t wsnap_fwriter_bytes(const struct wsnap_fwriter *w);
void wsnap_fwriter_free(struct wsnap_fwriter *w);

#endif
