/* SPDX-License-Identifier: MIT */
/*
 * Seek tables: restart points into a compressed stream, recorded while the
 * validation pass decodes it, so that a read later decodes at most one span
 * (the decoded bytes between two points) instead of the whole stream.
 *
 * One table type for every compression (kind): gzip checkpoints (a bit
 * position inside a deflate stream and the 32 KiB window before it, zlib's
 * zran approach), xz blocks, zstd frames. A point is where decoding can
 * restart: compressed offset 'in' (and, for gzip, 'bits' of the byte before
 * it), decoded offset 'out'. Span i runs from points[i].out to
 * points[i + 1].out (the last one to stream_size).
 *
 * Invariants of a table (wsnap_seek_table_add keeps them while recording;
 * wsnap_seek_table_decode checks every one of them on a table read from a
 * file, which is hostile input):
 *  - n >= 1 and points[0] is at in 0 (gzip: the first member's header),
 *    out 0;
 *  - 'in' (as a bit position, in * 8 - bits) and 'out' strictly increase
 *    from point to point; every 'in' < in_size <= the archive's size, every
 *    'out' < stream_size;
 *  - no span is longer than WSNAP_SEEK_SPAN_MAX decoded bytes nor
 *    WSNAP_SEEK_SPAN_IN_MAX compressed bytes, so a read's work and memory
 *    are bounded whatever the table says;
 *  - windows: each point's [win_off, win_off + win_len) lies inside the
 *    window bytes, in point order without overlap; win_raw <=
 *    WSNAP_SEEK_WINDOW_MAX and <= out - base; a point with
 *    WSNAP_SEEK_UNIT_START has no window (win_len == win_raw == 0);
 *  - base <= out, base >= the previous point's base, and a point with
 *    WSNAP_SEEK_UNIT_START has base == out.
 *
 * Per kind:
 *  - gzip: 'in' is the number of compressed bytes consumed; 'bits' (0..7)
 *    how many high bits of byte in - 1 are still unread. A UNIT_START
 *    point is at a member's header (bits 0). 'base' is where the point's
 *    member starts in the decoded stream, 'check' the CRC-32 of the
 *    member's decoded bytes [base, out), so that a span reaching the end of
 *    that member checks its trailer (CRC-32 and ISIZE) in full. The
 *    window is deflate-compressed (zlib format) by wsnap_seek_table_add.
 *  - xz, zstd: UNIT_START points at block or frame starts; 'aux' is free
 *    for the kind (a block's or frame's compressed size), 'check' and
 *    'bits' 0, no windows. Their recorders and span decoders plug in as
 *    the gzip ones do (seek_kinds in seekstream.c).
 *
 * Threads: a table is built by one thread, then read-only.
 */
#ifndef WSNAP_SEEK_H
#define WSNAP_SEEK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wsnap_source;
struct wsnap_stream;

enum wsnap_seek_kind {
	WSNAP_SEEK_GZIP = 1,
	WSNAP_SEEK_XZ = 2,
	WSNAP_SEEK_ZSTD = 3,
};
#define WSNAP_SEEK_NKINDS 4 /* kinds are 1 .. WSNAP_SEEK_NKINDS - 1 */

/* Decoded bytes between gzip checkpoints (at the first deflate block
 * boundary after this many bytes since the last point). */
#define WSNAP_SEEK_GZIP_SPACING (4u << 20)
/* Most decoded / compressed bytes of one span: a stream whose points would
 * lie farther apart gets no table (and keeps the spill). */
#define WSNAP_SEEK_SPAN_MAX    (16u << 20)
#define WSNAP_SEEK_SPAN_IN_MAX (32u << 20)
/* The deflate window: what a gzip point keeps of the bytes before it. */
#define WSNAP_SEEK_WINDOW_MAX 32768u
/* Most bytes one stored window may take (deflate of 32 KiB, worst case). */
#define WSNAP_SEEK_WINDOW_STORED_MAX (WSNAP_SEEK_WINDOW_MAX + 1024u)
/* Most a seekable stream's span cache keeps by default (decoded bytes):
 * see wsnap_seek_cache_default. */
#define WSNAP_SEEK_CACHE_DEFAULT (64u << 20)
/* The default's share of the decoded stream: 1 / this. */
#define WSNAP_SEEK_CACHE_SHARE 100u

enum wsnap_seek_point_flags {
	/* a gzip member, xz block or zstd frame starts here */
	WSNAP_SEEK_UNIT_START = 1 << 0,
};

struct wsnap_seek_point {
	uint64_t in;	   /* compressed offset (see the kinds above) */
	uint64_t out;	   /* decoded offset */
	uint64_t base;	   /* decoded offset of the unit (member) holding it */
	uint64_t win_off;  /* the window's bytes in the table's windows */
	uint64_t aux;	   /* per kind; 0 for gzip */
	uint32_t win_len;  /* stored bytes of the window */
	uint32_t win_raw;  /* window bytes once decoded (<= 32 KiB) */
	uint32_t bits;	   /* gzip: unread bits of byte in - 1 (0..7) */
	uint32_t flags;	   /* enum wsnap_seek_point_flags */
	uint32_t check;	   /* gzip: CRC-32 of the member's [base, out) */
	uint32_t reserved; /* 0 */
};

struct wsnap_seek_table {
	uint32_t kind;	      /* enum wsnap_seek_kind */
	uint64_t in_size;     /* compressed bytes of the stream (without the
				 zero padding after it) */
	uint64_t stream_size; /* decoded bytes */
	struct wsnap_seek_point *points;
	size_t n, cap;
	unsigned char *windows; /* the stored windows, back to back */
	size_t windows_len, windows_cap;
	/* windows are someone else's (an index file's mapping, which outlives
	 * the table): never written nor freed through the table */
	bool windows_borrowed;
	/* and in a read-only file mapping (WSNAP_SEEK_WINDOWS_IN_FILE_MAP):
	 * their pages are dropped from the process once a window is decoded,
	 * so that the windows a daemon has used do not stay in its resident
	 * memory */
	bool windows_droppable;
};

/* ---- building a table (the validation pass) ---------------------------- */

/* An empty table of kind. */
void wsnap_seek_table_init(struct wsnap_seek_table *t, uint32_t kind);

/* Frees the points and windows; the table is empty afterwards. */
void wsnap_seek_table_release(struct wsnap_seek_table *t);

/* A malloc'd table that takes over *t's contents (*t is left empty), or
 * NULL when out of memory (*t untouched). */
struct wsnap_seek_table *wsnap_seek_table_move(struct wsnap_seek_table *t);

/* Frees a table from wsnap_seek_table_move or _decode. NULL does nothing. */
void wsnap_seek_table_free(struct wsnap_seek_table *t);

/*
 * Appends a copy of point p; its win_off, win_len and win_raw are set
 * here from window[0..window_len), the decoded bytes just before p->out
 * (window_len <= WSNAP_SEEK_WINDOW_MAX and <= out - base; 0 for a unit
 * start), stored deflate-compressed. p must come after the last point in
 * both offsets. Returns 0, -EINVAL (out of order, or a span past the
 * bounds: the caller gives up the table) or -ENOMEM.
 */
int wsnap_seek_table_add(struct wsnap_seek_table *t,
			 const struct wsnap_seek_point *p, const void *window,
			 size_t window_len);

/*
 * Once the stream has ended: records its compressed and decoded sizes and
 * checks the last span. Returns 0 or -EINVAL (the table is not usable).
 */
int wsnap_seek_table_finish(struct wsnap_seek_table *t, uint64_t in_size,
			    uint64_t stream_size);

/* The decoded window of point i into buf (WSNAP_SEEK_WINDOW_MAX bytes);
 * returns its length, or -EIO when the stored bytes do not decode to
 * win_raw bytes. */
int wsnap_seek_table_window(const struct wsnap_seek_table *t, size_t i,
			    unsigned char *buf);

/* The span holding decoded offset off (< stream_size): the last point at
 * or before it. */
size_t wsnap_seek_table_find(const struct wsnap_seek_table *t, uint64_t off);

/* The decoded end of span i. */
static inline uint64_t wsnap_seek_span_end(const struct wsnap_seek_table *t,
					   size_t i)
{
	return i + 1 < t->n ? t->points[i + 1].out : t->stream_size;
}

/* ---- the stored form (index files) ------------------------------------- */

/*
 * Stored, a table is two byte strings, each a section of an index file
 * (doc/index-format.md): the header and points (little-endian u64 fields,
 * WSNAP_SEEK_HEADER_FIELDS then WSNAP_SEEK_POINT_FIELDS per point) and the
 * windows. wsnap_seek_table_encode returns a malloc'd copy of the first
 * (*len bytes, a multiple of 8); the second is t->windows as it is.
 */
#define WSNAP_SEEK_HEADER_FIELDS 6u
#define WSNAP_SEEK_POINT_FIELDS	 8u
unsigned char *wsnap_seek_table_encode(const struct wsnap_seek_table *t,
				       size_t *len);

enum wsnap_seek_decode_flags {
	/* the table's windows are win itself, not a copy: the caller keeps
	 * those bytes unchanged until the table is freed (a mapped index
	 * file, whose pages are then read only for the spans decoded) */
	WSNAP_SEEK_BORROW_WINDOWS = 1 << 0,
	/* with BORROW: win lies in a read-only file mapping (PROT_READ,
	 * file-backed), whose pages the table drops from the process after
	 * decoding a window (madvise MADV_DONTNEED: they fault in again from
	 * the page cache). Never for memory of any other kind, whose bytes
	 * that would zero */
	WSNAP_SEEK_WINDOWS_IN_FILE_MAP = 1 << 1,
};

/*
 * Parses and checks a stored table (hostile input): every invariant at the
 * top of this file, against archive_size (the compressed object's size)
 * and stream_size (the decoded stream's size as the index records it);
 * counts are bounded by the section sizes before anything is allocated.
 * flags: enum wsnap_seek_decode_flags. Returns 0 and a malloc'd *out,
 * -EINVAL with *why (a static string) saying what is wrong, or -ENOMEM.
 */
int wsnap_seek_table_decode(const unsigned char *pts, size_t pts_len,
			    const unsigned char *win, size_t win_len,
			    uint64_t archive_size, uint64_t stream_size,
			    unsigned flags, struct wsnap_seek_table **out,
			    const char **why);

/* ---- the seekable stream ------------------------------------------------ */

/*
 * The span cache a stream over t keeps when not told: 1 /
 * WSNAP_SEEK_CACHE_SHARE of the decoded size, at least two of t's longest
 * spans (the one read and the one decoded ahead), at most
 * WSNAP_SEEK_CACHE_DEFAULT unless two spans need more.
 */
size_t wsnap_seek_cache_default(const struct wsnap_seek_table *t);

/*
 * A stream (stream.h) of the decoded bytes of src through table t: a read
 * decodes the spans it touches, each from its point, through a cache of
 * decoded spans shared by every thread (least recently used dropped first
 * once more than cache_bytes are held; 0: wsnap_seek_cache_default). A
 * span is decoded by one thread at a time, others wanting it wait; the
 * cache's lock is not held while decoding. Reads fail with -EIO when a
 * span does not decode to exactly what the table says (a decoder error, a
 * gzip trailer that does not match, a span shorter or longer than its
 * points); whether src is still the object validated is the check's to
 * say, which the caller asks before and after a read (stream.h). Takes over src
 * and t (freed on failure too). Returns 0 and *out, -EINVAL (t's kind has no
 * decoder, or its sizes are not src's), or -ENOMEM.
 */
int wsnap_stream_seekable(struct wsnap_source *src, struct wsnap_seek_table *t,
			  size_t cache_bytes, struct wsnap_stream **out);

/* Sets the span cache bound of seekable stream s (0: the default), and
 * drops what is over it; does nothing to any other stream. */
void wsnap_stream_seek_set_cache(struct wsnap_stream *s, size_t cache_bytes);

/* The seek table of a seekable stream, NULL for any other stream. */
const struct wsnap_seek_table *
wsnap_stream_seek_table(const struct wsnap_stream *s);

/* Counters of a seekable stream (tests, bench): spans decoded, reads
 * served from the cache. */
struct wsnap_seek_stats {
	uint64_t spans_decoded;
	uint64_t cache_hits;
	uint64_t spans_ahead; /* claimed for read-ahead (decoded by either) */
	uint64_t cache_bytes; /* span bytes held or being decoded now */
};
void wsnap_stream_seek_stats(struct wsnap_stream *s,
			     struct wsnap_seek_stats *st);

/*
 * Per kind: decodes span i of t from src into out (exactly
 * wsnap_seek_span_end(t, i) - t->points[i].out bytes). Returns 0, -EIO
 * (the bytes do not decode to the span), -ENOMEM, or the source's error.
 * gzip's is in gzip.c; xz and zstd add theirs to seekstream.c's table.
 */
typedef int (*wsnap_seek_span_fn)(const struct wsnap_seek_table *t, size_t i,
				  struct wsnap_source *src, unsigned char *out);

#endif
