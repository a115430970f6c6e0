/* SPDX-License-Identifier: MIT */
/*
 * The zstd decoder of the piped layout (tar_private.h, "decode.c"): libzstd
 * run here rather than libarchive's filter, so that every frame's start in
 * the input and in the decoded stream is seen and recorded as a restart
 * point (frames.h: spans). It behaves as libarchive's filter did, so that
 * what is refused and why stays the same: the window limit is libzstd's
 * default (WSNAP_READER_ZSTD_WINDOW_MAX, windowLog 27), frames follow each
 * other to the end of the input, skippable frames are skipped, content
 * checksums are checked, and the messages are libarchive's ("Zstd
 * decompression failed: <libzstd's error>", a truncated frame); a stream
 * that decodes to nothing, or to another compressed stream (gzip, bzip2,
 * zstd, lz4, which libarchive would have found), says so.
 *
 * The seekable format's seek table (a skippable frame at the end of the
 * file) is read from a regular file before decoding; every frame decoded
 * is compared with its entry as it ends. A table that disagrees with the
 * frames, or breaks a rule of the format, is ignored: the frames decoded
 * are the restart points either way (the table is only a claim, and a
 * skippable frame is no part of the data), and the result says so
 * (zstd_table, for a -v detail).
 *
 * Invariants: a frame is recorded only once libzstd returned 0 for it
 * (decoded, checksum checked, output flushed), at the input offset its
 * last byte was consumed; decoded bytes reach the reader only through
 * wsnap_decoder_next.
 */
#include "tar_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "frames.h"
#include "fsutil.h"

#define RD_ZSTD_OUT (256u << 10)
/* Most bytes of a seek table read from the end of a file. */
#define RD_ZSTD_TABLE_MAX (8u << 20)

struct wsnap_zstd {
	ZSTD_DCtx *d;
	ZSTD_inBuffer in;
	uint64_t in_base; /* input offset of in.src[0] */
	bool in_eof;
	bool in_frame;	    /* libzstd's last answer was not 0 */
	uint64_t frame_in;  /* input offset of the current frame */
	uint64_t out_total; /* decoded bytes so far */
	uint64_t frame_out; /* decoded offset of the current frame */
	size_t primed;	    /* decoded at open, not yet handed on */
	/* the seek table at the end of the file, if any */
	struct wsnap_zstd_seek_entry *table;
	size_t table_n, table_at;
	bool table_bad;
	unsigned char out[RD_ZSTD_OUT];
};

static uint32_t rd_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Reads the seek table at the end of a regular input. */
static void rd_zstd_table(struct wsnap_reader *r, struct wsnap_zstd *z)
{
	size_t n = r->size < 65536 ? (size_t)r->size : 65536, need = 0, got;
	unsigned char *tail;
	int rc;

	if (!r->regular || r->size < WSNAP_ZSTD_SEEKABLE_FOOTER)
		return;
	for (;;) {
		tail = malloc(n);
		if (!tail)
			return; /* the table is only a claim: do without */
		if (wsnap_pread_full(r->fd, tail, n, r->size - n, &got) != 0 ||
		    got != n) {
			free(tail);
			return;
		}
		rc = wsnap_zstd_seek_table_parse(tail, n, r->size, &need,
						 &z->table, &z->table_n);
		free(tail);
		if (rc != -EAGAIN || need <= n || need > RD_ZSTD_TABLE_MAX)
			break;
		n = need;
	}
	if (rc != 0 && rc != -ENOENT)
		r->zstd_table = WSNAP_ZSTD_TABLE_IGNORED;
	else if (rc == 0)
		r->zstd_table = WSNAP_ZSTD_TABLE_AGREES; /* so far */
}

/* A frame ended at input offset end: record it and compare it with the
 * table. */
static bool rd_zstd_frame_end(struct wsnap_reader *r, struct wsnap_zstd *z,
			      uint64_t end)
{
	uint64_t in_len = end - z->frame_in;
	uint64_t out_len = z->out_total - z->frame_out;
	int rc;

	if (z->table && !z->table_bad) {
		const struct wsnap_zstd_seek_entry *e;

		/* after the entries: the table's own frame, the last one */
		if (z->table_at > z->table_n) {
			z->table_bad = true;
		} else if (z->table_at == z->table_n) {
			z->table_bad = out_len != 0 || end != r->size;
		} else {
			e = &z->table[z->table_at];
			z->table_bad = e->in_off != z->frame_in ||
				       e->in_len != in_len ||
				       e->out_len != out_len;
		}
		z->table_at++;
	}
	rc = wsnap_spans_piece(&r->spans, z->frame_in, in_len, out_len, 0,
			       false);
	if (rc == -ENOMEM) {
		wsnap_reader_io(r, ENOMEM, "out of memory");
		return false;
	}
	if (rc)
		r->spans_lost = true; /* too many: read through a spill */
	z->frame_in = end;
	z->frame_out = z->out_total;
	return true;
}

/* Decodes into z->out until it holds something or the stream ends; the
 * bytes decoded in *got. */
static bool rd_zstd_fill(struct wsnap_reader *r, struct wsnap_zstd *z,
			 size_t *got)
{
	ZSTD_outBuffer ob = {z->out, sizeof(z->out), 0};
	char msg[128];

	while (ob.pos == 0) {
		size_t ret;

		if (z->in.pos == z->in.size && !z->in_eof) {
			const struct wsnap_reader_outbuf *b =
				wsnap_decoder_chunk(r);

			if (!b)
				return false;
			z->in.src = b->data;
			z->in.size = b->len;
			z->in.pos = 0;
			z->in_base = b->off;
			z->in_eof = b->len == 0;
		}
		if (z->in.pos == z->in.size && z->in_eof) {
			if (z->in_frame)
				return wsnap_decoder_invalid(r, NULL);
			r->dec.eof = true;
			break;
		}
		ret = ZSTD_decompressStream(z->d, &ob, &z->in);
		if (ZSTD_isError(ret)) {
			if (ZSTD_getErrorCode(ret) ==
			    ZSTD_error_memory_allocation) {
				wsnap_reader_io(r, ENOMEM, "out of memory");
				return false;
			}
			snprintf(msg, sizeof(msg),
				 "Zstd decompression failed: %s",
				 ZSTD_getErrorName(ret));
			return wsnap_decoder_invalid(r, msg);
		}
		/* ob.pos was 0: this call decoded ob.pos bytes */
		z->out_total += ob.pos;
		z->in_frame = ret != 0;
		if (ret == 0 &&
		    !rd_zstd_frame_end(r, z, z->in_base + z->in.pos))
			return false;
	}
	*got = ob.pos;
	return true;
}

/* The first 6 decoded bytes name another compression libarchive's outer
 * reader would have found under this one. */
static const char *rd_zstd_nested(const unsigned char *p, size_t n)
{
	if (n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8)
		return "gzip";
	if (n >= 4 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9')
		return "bzip2";
	if (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0)
		return "zstd";
	if (n >= 4 && memcmp(p, "\x04\x22\x4d\x18", 4) == 0)
		return "lz4";
	return NULL;
}

bool wsnap_decoder_is_zstd(const unsigned char *p, size_t n)
{
	size_t at = 0;

	while (n - at >= 8 && (rd_le32(p + at) & 0xfffffff0u) == 0x184d2a50u) {
		uint32_t skip = rd_le32(p + at + 4);

		if (skip > n - at - 8)
			return false;
		at += 8 + (size_t)skip;
	}
	return n - at >= 4 && rd_le32(p + at) == 0xfd2fb528u;
}

enum wsnap_status
wsnap_decoder_zstd_open(struct wsnap_reader *r,
			const struct wsnap_reader_outbuf *first)
{
	struct wsnap_zstd *z = calloc(1, sizeof(*z));
	const char *nested;
	size_t got = 0;

	r->dec.zstd = z;
	r->dec.compression = "zstd";
	if (!z || !(z->d = ZSTD_createDCtx()))
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	if (ZSTD_isError(ZSTD_DCtx_setParameter(z->d, ZSTD_d_windowLogMax,
						WSNAP_FRAMES_ZSTD_WINDOW_LOG)))
		return wsnap_reader_io(r, 0, "cannot set up decompression");
	wsnap_spans_init(&r->spans, WSNAP_SPAN_ZSTD);
	rd_zstd_table(r, z);
	z->in.src = first->data;
	z->in.size = first->len;
	z->in_base = first->off;
	/* as libarchive's outer reader: the first bytes are decoded now,
	 * and handed on first */
	if (!rd_zstd_fill(r, z, &got))
		return r->io_failed ? WSNAP_IO : WSNAP_REJECTED;
	z->primed = got;
	if (got == 0) {
		r->dec.said = true;
		return wsnap_reader_invalid(r, "zstd stream that decodes to "
					       "nothing");
	}
	nested = rd_zstd_nested(z->out, got);
	if (nested)
		return wsnap_reader_invalid(r,
					    "more than one layer of "
					    "compression: zstd over %s",
					    nested);
	return WSNAP_OK;
}

bool wsnap_decoder_zstd_next(struct wsnap_reader *r)
{
	struct wsnap_zstd *z = r->dec.zstd;
	size_t n = z->primed;

	z->primed = 0;
	if (!n && !rd_zstd_fill(r, z, &n))
		return false;
	if (r->dec.eof && z->table && !z->table_bad)
		z->table_bad = z->table_at != z->table_n + 1;
	if (r->dec.eof && z->table)
		r->zstd_table = z->table_bad ? WSNAP_ZSTD_TABLE_IGNORED
					     : WSNAP_ZSTD_TABLE_AGREES;
	r->pend = z->out;
	r->pend_len = n;
	return true;
}

bool wsnap_decoder_zstd_may_seek(struct wsnap_reader *r)
{
	struct wsnap_zstd *z = r->dec.zstd;
	const unsigned char *p = r->head;
	size_t n = r->head_len, at = 0, i;
	struct wsnap_spans s;
	unsigned long long size;
	bool ok;

	if (z->table) {
		/* the spans the table's frames would make */
		wsnap_spans_init(&s, WSNAP_SPAN_ZSTD);
		for (i = 0; i < z->table_n; i++)
			if (wsnap_spans_piece(
				    &s, z->table[i].in_off, z->table[i].in_len,
				    z->table[i].out_len, 0, false) != 0)
				break;
		ok = i == z->table_n && wsnap_spans_seekable(&s);
		wsnap_spans_release(&s);
		return ok;
	}
	/* the first frame, after any skippable ones in the first block */
	while (n - at >= 8 && (rd_le32(p + at) & 0xfffffff0u) == 0x184d2a50u) {
		uint32_t skip = rd_le32(p + at + 4);

		if (skip > n - at - 8)
			return false;
		at += 8 + (size_t)skip;
	}
	size = ZSTD_getFrameContentSize(p + at, n - at);
	return size != ZSTD_CONTENTSIZE_UNKNOWN &&
	       size != ZSTD_CONTENTSIZE_ERROR && size <= WSNAP_SPAN_MAX;
}

void wsnap_decoder_zstd_release(struct wsnap_reader *r)
{
	struct wsnap_zstd *z = r->dec.zstd;

	if (!z)
		return;
	ZSTD_freeDCtx(z->d);
	free(z->table);
	free(z);
	r->dec.zstd = NULL;
}
