/* SPDX-License-Identifier: MIT */
/*
 * The decompressors of the piped layout (tar_private.h, "decode.c"): how
 * the input becomes the decoded tar stream that input.c hands to the tar
 * parser. Three decoders behind one interface:
 *  - gzip: our own (core/stream/gzip.c: zlib's raw inflate, every member's
 *    header bounded and trailer checked, any number of members). For a
 *    regular file it also records seek points (seek.h), which the result
 *    hands over, so that the data is read in place afterwards;
 *  - xz: liblzma, run here, because libarchive's xz filter gives liblzma
 *    no memory limit (a block header may declare a 4 GiB dictionary). The
 *    decoder has WSNAP_READER_XZ_MEMLIMIT; beyond it, and for any corrupt
 *    stream or check, the stream is invalid. Several streams are read one
 *    after the other (a decoder restarted by hand at each stream's end, not
 *    LZMA_CONCATENATED, so that the boundaries are seen): stream padding
 *    (4-byte words of zeros) may follow the last stream only. Padding
 *    before another stream is refused: Python's lzma takes it for trailing
 *    garbage and stops there, so tarfile would see only the members of the
 *    streams before it, where xz and libarchive read them all
 *    (decode_xzidx.c takes the blocks of a regular file from its indexes,
 *    as restart points);
 *  - zstd (by the frame magic, after any skippable frames): libzstd, in
 *    decode_zstd.c, which records every frame as a restart point, with
 *    libzstd's default window limit (WSNAP_READER_ZSTD_WINDOW_MAX);
 *  - everything else: an "outer" libarchive reader (bzip2 and lz4
 *    filters, then the raw format; "none" for a plain pipe).
 * What may follow a stream: zero padding after gzip, bzip2 and lz4 (see
 * wsnap_decoder_finish), xz's own stream padding, nothing after zstd
 * (doc/design.md, "Where a compressed stream ends"). The first chunk of
 * input is read before a decoder is chosen (the gzip, xz and zstd magics
 * are looked for in it); libarchive's read callback hands that chunk over
 * first.
 *
 * Invariants:
 *  - the input is read in chunks into the reader's two alternating client
 *    buffers, so the bytes just past the end of a compressed stream (its
 *    trailer, and what follows it) are still at hand when it ends;
 *  - decoded bytes reach the reader only through wsnap_decoder_next, which
 *    counts them (stream_bytes);
 *  - an I/O error is recorded once (wsnap_reader_io); a stream error is
 *    recorded as an invalid stream with its detail (rd_decoder_invalid),
 *    which wsnap_reader_fail then passes on.
 */
#include "tar_private.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gzip.h"
#include "seek.h"

/* Bytes per read of a compressed input; decoded bytes per xz step. */
#define RD_OUTER_CHUNK (256u << 10)
#define RD_XZ_OUT      (256u << 10)
#define RD_GZ_OUT      (256u << 10)

/* The magic bytes of an xz stream. */
static const unsigned char rd_xz_magic[] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

/* The xz decoder. */
struct wsnap_xz {
	lzma_stream s;
	unsigned char out[RD_XZ_OUT];
	bool in_eof;  /* the input has ended */
	bool between; /* a stream has ended: reading what follows it */
	uint64_t pad; /* zero bytes since it ended */
};

/* The gzip decoder: ours, over the current input chunk. */
struct wsnap_gz {
	struct wsnap_gzip *g;
	const unsigned char *in; /* what is left of the current chunk */
	size_t in_len;
	bool in_eof;
	bool ended; /* the last member has ended */
	unsigned char out[RD_GZ_OUT];
};

/* The next chunk of input into the other client buffer, which becomes the
 * current one; NULL on an I/O error (recorded). */
static struct wsnap_reader_outbuf *rd_input_chunk(struct wsnap_reader *r)
{
	struct wsnap_reader_outbuf *b;
	ssize_t n;

	r->ocur ^= 1;
	b = &r->obuf[r->ocur];
	if (!b->data) {
		b->data = malloc(RD_OUTER_CHUNK);
		if (!b->data) {
			wsnap_reader_io(r, ENOMEM, "out of memory");
			return NULL;
		}
	}
	b->off = r->in_pos;
	n = wsnap_reader_input_read(r, b->data, RD_OUTER_CHUNK);
	b->len = n > 0 ? (size_t)n : 0;
	return n < 0 ? NULL : b;
}

/* The outer reader's read callback: the chunk read before the decoder was
 * chosen, then chunk after chunk. */
static la_ssize_t rd_outer_read(struct archive *a, void *ctx, const void **buf)
{
	struct wsnap_reader *r = ctx;
	struct wsnap_reader_outbuf *b = &r->obuf[r->ocur];

	if (r->dec.peeked)
		r->dec.peeked = false;
	else if (!(b = rd_input_chunk(r)))
		return ARCHIVE_FATAL;
	*buf = b->data;
	return (la_ssize_t)b->len;
}

/* The compression the magic at p names, before libarchive said. */
static const char *rd_magic_name(const unsigned char *p, size_t n)
{
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return "gzip";
	if (n >= 3 && memcmp(p, "BZh", 3) == 0)
		return "bzip2";
	if (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0)
		return "zstd";
	if (n >= 4 && memcmp(p, "\x04\x22\x4d\x18", 4) == 0)
		return "lz4";
	return "compressed";
}

/* A failure of the decoder: an invalid stream, with what went wrong
 * (libarchive's message msg, NULL if none) and where in the input. */
static bool rd_decoder_invalid(struct wsnap_reader *r, const char *msg)
{
	const char *c = r->dec.compression;
	unsigned long long at = (unsigned long long)r->in_pos;

	if (r->io_failed)
		return false;
	if (!c)
		c = rd_magic_name(r->head, r->head_len);
	r->dec.said = true;
	/* the raw format bids on anything but nothing */
	if (msg && strcmp(msg, "Unrecognized archive format") == 0)
		wsnap_reader_invalid(r, "%s stream that decodes to nothing", c);
	else if (!msg || strstr(msg, "runcated") || strstr(msg, "premature"))
		wsnap_reader_invalid(r, "truncated %s stream at byte %llu", c,
				     at);
	else
		wsnap_reader_invalid(r,
				     "corrupt %s stream before byte %llu: %s",
				     c, at, msg);
	return false;
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
	case ARCHIVE_FILTER_ZSTD:
		return "zstd";
	case ARCHIVE_FILTER_LZ4:
		return "lz4";
	default:
		return NULL;
	}
}

/*
 * The outer reader: the decompressors policy.md names but xz (no external
 * programs), then the raw format; more than one layer of compression is
 * not a tar stream.
 */
static enum wsnap_status rd_outer_open(struct wsnap_reader *r)
{
	struct archive_entry *e;
	struct archive *a = archive_read_new();

	r->dec.outer = a;
	if (!a)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	if (archive_read_support_filter_bzip2(a) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
	    archive_read_support_filter_lz4(a) != ARCHIVE_OK ||
	    archive_read_support_format_raw(a) != ARCHIVE_OK ||
	    archive_read_set_read_callback(a, rd_outer_read) != ARCHIVE_OK ||
	    archive_read_set_callback_data(a, r) != ARCHIVE_OK)
		return wsnap_reader_io(r, 0, "cannot set up decompression");
	if (archive_read_open1(a) != ARCHIVE_OK) {
		/* also an empty input (diagnose.c says so) */
		rd_decoder_invalid(r, archive_error_string(a));
		return wsnap_reader_fail(r, a);
	}
	if (archive_filter_count(a) > 2)
		return wsnap_reader_invalid(
			r, "more than one layer of compression: %s over %s",
			archive_filter_name(a, 1), archive_filter_name(a, 0));
	r->dec.compression = rd_filter_name(archive_filter_code(a, 0));
	if (!r->dec.compression)
		return wsnap_reader_invalid(r, "unsupported compression: %s",
					    archive_filter_name(a, 0));
	if (archive_read_next_header(a, &e) != ARCHIVE_OK) {
		rd_decoder_invalid(r, archive_error_string(a));
		return wsnap_reader_fail(r, a);
	}
	return WSNAP_OK;
}

/* gzip: ours, recording seek points when the input is a regular file
 * (or, with seek_stream and without keep_data, any input). */
static enum wsnap_status rd_gz_open(struct wsnap_reader *r,
				    const struct wsnap_reader_outbuf *first)
{
	struct wsnap_gz *z = malloc(sizeof(*z));
	bool record =
		!r->opts->no_seek &&
		(r->regular || (r->opts->seek_stream && !r->opts->keep_data));

	r->dec.gz = z;
	if (!z || wsnap_gzip_new(&z->g, record)) {
		free(z);
		r->dec.gz = NULL;
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	}
	z->in = first->data;
	z->in_len = first->len;
	z->in_eof = first->len == 0;
	z->ended = false;
	r->dec.compression = "gzip";
	return WSNAP_OK;
}

/* (Re)starts the stream decoder of x at its current input; an unknown
 * check type is not a check that was verified. */
static lzma_ret rd_xz_start(struct wsnap_xz *x)
{
	const uint8_t *in = x->s.next_in;
	size_t avail = x->s.avail_in;
	lzma_ret ret = lzma_stream_decoder(&x->s, WSNAP_READER_XZ_MEMLIMIT,
					   LZMA_TELL_UNSUPPORTED_CHECK);

	x->s.next_in = in;
	x->s.avail_in = avail;
	x->between = false;
	x->pad = 0;
	return ret;
}

static enum wsnap_status rd_xz_open(struct wsnap_reader *r,
				    const struct wsnap_reader_outbuf *first)
{
	static const lzma_stream init = LZMA_STREAM_INIT;
	struct wsnap_xz *x = malloc(sizeof(*x));
	lzma_ret ret;

	r->dec.xz = x;
	if (!x)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	x->s = init;
	x->in_eof = false;
	x->s.next_in = first->data;
	x->s.avail_in = first->len;
	ret = rd_xz_start(x);
	if (ret != LZMA_OK) {
		lzma_end(&x->s);
		free(x);
		r->dec.xz = NULL;
		return wsnap_reader_io(r, ret == LZMA_MEM_ERROR ? ENOMEM : 0,
				       "cannot set up decompression");
	}
	r->dec.compression = "xz";
	return WSNAP_OK;
}

enum wsnap_status wsnap_decoder_open(struct wsnap_reader *r,
				     const char **compression)
{
	const struct wsnap_reader_outbuf *first = rd_input_chunk(r);
	enum wsnap_status st;

	if (!first)
		return WSNAP_IO;
	wsnap_reader_keep_head(r->head, &r->head_len, first->data, first->len);
	if (first->len >= sizeof(rd_xz_magic) &&
	    memcmp(first->data, rd_xz_magic, sizeof(rd_xz_magic)) == 0) {
		st = rd_xz_open(r, first);
	} else if (wsnap_decoder_is_zstd(first->data, first->len)) {
		st = wsnap_decoder_zstd_open(r, first);
	} else if (first->len >= 2 && first->data[0] == 0x1f &&
		   first->data[1] == 0x8b) {
		st = rd_gz_open(r, first);
	} else {
		r->dec.peeked = true;
		st = rd_outer_open(r);
	}
	if (st == WSNAP_OK)
		*compression = r->dec.compression;
	return st;
}

/*
 * xz, after a stream ended: skips the zero bytes that follow it. A byte
 * that is not zero starts the next stream, which padding may not precede
 * (LZMA_OK: decoding goes on; LZMA_MEM_ERROR: it could not be started); at
 * the end of the input the padding must be whole 4-byte words
 * (LZMA_STREAM_END). LZMA_BUF_ERROR: more input needed; LZMA_DATA_ERROR:
 * refused (recorded).
 */
static lzma_ret rd_xz_between(struct wsnap_reader *r, struct wsnap_xz *x)
{
	while (x->s.avail_in && *x->s.next_in == 0) {
		x->s.next_in++;
		x->s.avail_in--;
		x->pad++;
	}
	if (x->s.avail_in && x->pad) {
		r->dec.said = true;
		wsnap_reader_invalid(
			r,
			"tar readers would read the xz stream "
			"differently: stream padding before "
			"another stream at byte %llu",
			(unsigned long long)(r->in_pos - x->s.avail_in));
		return LZMA_DATA_ERROR;
	}
	if (x->s.avail_in)
		return rd_xz_start(x);
	if (!x->in_eof)
		return LZMA_BUF_ERROR;
	if (x->pad % 4) {
		rd_decoder_invalid(r, "stream padding that is not a multiple "
				      "of four bytes");
		return LZMA_DATA_ERROR;
	}
	return LZMA_STREAM_END;
}

/* xz: the next decoded bytes into pend; false on an error. */
static bool rd_xz_next(struct wsnap_reader *r)
{
	struct wsnap_xz *x = r->dec.xz;
	lzma_ret ret = LZMA_OK;

	x->s.next_out = x->out;
	x->s.avail_out = sizeof(x->out);
	while (x->s.avail_out == sizeof(x->out)) {
		if (!x->s.avail_in && !x->in_eof) {
			const struct wsnap_reader_outbuf *b = rd_input_chunk(r);

			if (!b)
				return false;
			x->s.next_in = b->data;
			x->s.avail_in = b->len;
			x->in_eof = b->len == 0;
		}
		if (x->between) {
			ret = rd_xz_between(r, x);
			if (ret == LZMA_BUF_ERROR)
				continue;
			if (ret == LZMA_DATA_ERROR)
				return false;
			if (ret != LZMA_OK)
				break;
		}
		ret = lzma_code(&x->s, x->in_eof ? LZMA_FINISH : LZMA_RUN);
		if (ret == LZMA_STREAM_END) {
			/* what follows is seen before the decoded bytes
			 * go on: padding, another stream, or the end */
			x->between = true;
			x->pad = 0;
			ret = LZMA_OK;
		} else if (ret != LZMA_OK) {
			break;
		}
	}
	if (ret == LZMA_MEM_ERROR) {
		wsnap_reader_io(r, ENOMEM, "out of memory");
		return false;
	}
	/* LZMA_MEMLIMIT_ERROR, a corrupt or truncated stream, a bad or an
	 * unknown check, input after the streams that is no padding */
	if (ret == LZMA_MEMLIMIT_ERROR)
		return rd_decoder_invalid(r, "needs more memory to decode than "
					     "the limit");
	if (ret == LZMA_UNSUPPORTED_CHECK)
		return rd_decoder_invalid(r, "an unknown integrity check");
	if (ret == LZMA_DATA_ERROR || ret == LZMA_FORMAT_ERROR ||
	    ret == LZMA_OPTIONS_ERROR)
		return rd_decoder_invalid(r, "bad data or check");
	if (ret != LZMA_OK && ret != LZMA_STREAM_END)
		return rd_decoder_invalid(r, NULL);
	r->dec.eof = ret == LZMA_STREAM_END;
	r->pend = x->out;
	r->pend_len = sizeof(x->out) - x->s.avail_out;
	return true;
}

/*
 * The compression whose magic starts p, for a second layer; NULL. As
 * strict as libarchive's bidders were when its filters read the decoded
 * stream (a tar member's name may start with any bytes): the gzip flags'
 * reserved bits zero, bzip2's first block magic after its level.
 */
static const char *rd_inner_magic(const unsigned char *p, size_t n)
{
	if (n >= sizeof(rd_xz_magic) &&
	    memcmp(p, rd_xz_magic, sizeof(rd_xz_magic)) == 0)
		return "xz";
	if (n >= 4 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 &&
	    !(p[3] & 0xe0))
		return "gzip";
	if (n >= 10 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9' &&
	    memcmp(p + 4, "1AY&SY", 6) == 0)
		return "bzip2";
	if (n >= 4 && (memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0 ||
		       memcmp(p, "\x04\x22\x4d\x18", 4) == 0))
		return rd_magic_name(p, n);
	return NULL;
}

/* gzip: the next decoded bytes into pend; false on an error. */
static bool rd_gz_next(struct wsnap_reader *r)
{
	struct wsnap_gz *z = r->dec.gz;
	enum wsnap_gzip_status gs;
	const char *why, *inner;
	uint64_t at;
	size_t got = 0;

	for (;;) {
		if (!z->in_len && !z->in_eof) {
			const struct wsnap_reader_outbuf *b = rd_input_chunk(r);

			if (!b)
				return false;
			z->in = b->data;
			z->in_len = b->len;
			z->in_eof = b->len == 0;
		}
		gs = wsnap_gzip_decode(z->g, &z->in, &z->in_len, z->in_eof,
				       z->out, sizeof(z->out), &got);
		if (gs != WSNAP_GZIP_OK || got)
			break;
	}
	switch (gs) {
	case WSNAP_GZIP_OK:
		break;
	case WSNAP_GZIP_END:
		z->ended = true;
		r->dec.eof = true;
		break;
	case WSNAP_GZIP_TRUNCATED:
		return rd_decoder_invalid(r, NULL);
	case WSNAP_GZIP_NOMEM:
		wsnap_reader_io(r, ENOMEM, "out of memory");
		return false;
	case WSNAP_GZIP_TRAILER:
		why = wsnap_gzip_error(z->g, &at);
		r->dec.said = true;
		wsnap_reader_invalid(r, "%s, at byte %llu", why,
				     (unsigned long long)at);
		return false;
	default:
		why = wsnap_gzip_error(z->g, &at);
		r->dec.said = true;
		wsnap_reader_invalid(r,
				     "corrupt gzip stream before byte %llu: "
				     "%s",
				     (unsigned long long)at + 1, why);
		return false;
	}
	/* a second layer of compression is not a tar stream */
	if (got && r->stream_bytes == 0 &&
	    (inner = rd_inner_magic(z->out, got)) != NULL) {
		r->dec.said = true;
		wsnap_reader_invalid(r,
				     "more than one layer of compression: "
				     "gzip over %s",
				     inner);
		return false;
	}
	r->pend = z->out;
	r->pend_len = got;
	return true;
}

bool wsnap_decoder_next(struct wsnap_reader *r)
{
	const void *p;
	size_t len;
	la_int64_t off;
	int ret;

	while (!r->pend_len && !r->dec.eof) {
		if (r->dec.xz) {
			if (!rd_xz_next(r))
				return false;
		} else if (r->dec.zstd) {
			if (!wsnap_decoder_zstd_next(r))
				return false;
		} else if (r->dec.gz) {
			if (!rd_gz_next(r))
				return false;
		} else {
			ret = archive_read_data_block(r->dec.outer, &p, &len,
						      &off);
			if (ret == ARCHIVE_EOF) {
				r->dec.eof = true;
				break;
			}
			if (ret != ARCHIVE_OK)
				return rd_decoder_invalid(
					r, archive_error_string(r->dec.outer));
			r->pend = p;
			r->pend_len = len;
		}
		wsnap_reader_keep_head(r->dhead, &r->dhead_len, r->pend,
				       r->pend_len);
		r->stream_bytes += r->pend_len;
	}
	return true;
}

static enum wsnap_status rd_after_stream(struct wsnap_reader *r, uint64_t used)
{
	return wsnap_reader_invalid(r,
				    "data that is not zero padding after the "
				    "%s stream, which ends at byte %llu",
				    r->dec.compression,
				    (unsigned long long)used);
}

/*
 * After the decoded stream ended: only zero padding may follow a stream
 * libarchive decoded (liblzma checks xz's own padding), and the gzip
 * trailer must match.
 */
enum wsnap_status wsnap_decoder_finish(struct wsnap_reader *r)
{
	int64_t used;
	int i;

	/* liblzma and libzstd read their streams to the end of the input */
	if (r->dec.xz || r->dec.zstd) {
		/* the blocks read from the indexes before the pass must be
		 * what the pass decoded (liblzma checked each index) */
		if (r->spans.out_end != r->stream_bytes)
			r->spans_lost = true;
		return WSNAP_OK;
	}
	if (strcmp(r->dec.compression, "none") == 0)
		return WSNAP_OK;
	/* bytes the decompressor took from the input (gzip: its members,
	 * each trailer checked already) */
	used = r->dec.gz ? (int64_t)wsnap_gzip_in_used(r->dec.gz->g)
			 : archive_filter_bytes(r->dec.outer, -1);
	if (used < 0 || (uint64_t)used > r->in_pos)
		return wsnap_reader_invalid(r, "%s stream of unknown length",
					    r->dec.compression);
	for (i = 0; i < 2; i++) {
		const struct wsnap_reader_outbuf *b = &r->obuf[i];
		uint64_t from =
			(uint64_t)used > b->off ? (uint64_t)used : b->off;

		if (b->len && from < b->off + b->len &&
		    !wsnap_tar_all_zero(b->data + (from - b->off),
					(size_t)(b->off + b->len - from)))
			return rd_after_stream(r, (uint64_t)used);
	}
	if ((uint64_t)used < r->obuf[0].off && (uint64_t)used < r->obuf[1].off)
		return rd_after_stream(r, (uint64_t)used); /* cannot check */
	for (;;) {
		const struct wsnap_reader_outbuf *b = rd_input_chunk(r);

		if (!b)
			return WSNAP_IO;
		if (b->len == 0)
			return WSNAP_OK;
		if (!wsnap_tar_all_zero(b->data, b->len))
			return rd_after_stream(r, (uint64_t)used);
	}
}

void wsnap_decoder_release(struct wsnap_reader *r)
{
	if (r->dec.outer)
		archive_read_free(r->dec.outer);
	r->dec.outer = NULL;
	if (r->dec.xz)
		lzma_end(&r->dec.xz->s);
	free(r->dec.xz);
	r->dec.xz = NULL;
	wsnap_decoder_zstd_release(r);
	if (r->dec.gz)
		wsnap_gzip_free(r->dec.gz->g);
	free(r->dec.gz);
	r->dec.gz = NULL;
}

struct wsnap_seek_table *wsnap_decoder_take_seek(struct wsnap_reader *r)
{
	if (r->dec.xz || r->dec.zstd)
		return wsnap_decoder_spans_seek(r);
	return r->dec.gz && r->dec.gz->ended
		       ? wsnap_gzip_take_table(r->dec.gz->g)
		       : NULL;
}

const struct wsnap_reader_outbuf *wsnap_decoder_chunk(struct wsnap_reader *r)
{
	return rd_input_chunk(r);
}

bool wsnap_decoder_invalid(struct wsnap_reader *r, const char *msg)
{
	return rd_decoder_invalid(r, msg);
}
