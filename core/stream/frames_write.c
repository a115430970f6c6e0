/* SPDX-License-Identifier: MIT */
/*
 * Writers of seekable zstd and xz streams (frames.h, wsnap_fwriter): what
 * wsnap pack writes, so that a packed snapshot is read in place.
 *
 * Invariants: a zstd frame is compressed from exactly the bytes buffered
 * (piece bytes, the last one fewer), so each frame decodes alone and the
 * seek table lists every frame in order; an xz block ends after exactly
 * piece bytes of input (LZMA_FULL_FLUSH), the last one at the end.
 */
#include "frames.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "grow.h"

#define FW_OUT (256u << 10)

struct wsnap_fwriter {
	enum wsnap_span_kind kind;
	size_t piece;
	wsnap_fwriter_out fn;
	void *ctx;
	uint64_t bytes;
	size_t fill; /* input bytes in the current frame or block */
	/* zstd */
	ZSTD_CCtx *z;
	unsigned char *in;
	unsigned char *zout;
	size_t zout_cap;
	uint32_t *in_len, *out_len;
	size_t nf, cap_in, cap_out;
	/* xz */
	lzma_stream x;
	bool x_open;
	unsigned char out[FW_OUT];
};

static int fw_emit(struct wsnap_fwriter *w, const void *p, size_t n)
{
	int e = n ? w->fn(w->ctx, p, n) : 0;

	if (!e)
		w->bytes += n;
	return e;
}

/* zstd: the buffered bytes as one frame. */
static int fw_zstd_frame(struct wsnap_fwriter *w)
{
	uint32_t *a, *b;
	size_t c;

	if (!w->fill)
		return 0;
	c = ZSTD_compress2(w->z, w->zout, w->zout_cap, w->in, w->fill);
	if (ZSTD_isError(c) || c > UINT32_MAX)
		return EIO;
	a = wsnap_grow(w->in_len, &w->cap_in, w->nf + 1, sizeof(*a));
	if (a)
		w->in_len = a;
	b = wsnap_grow(w->out_len, &w->cap_out, w->nf + 1, sizeof(*b));
	if (b)
		w->out_len = b;
	if (!a || !b || w->nf >= WSNAP_ZSTD_SEEKABLE_MAX_FRAMES)
		return ENOMEM;
	w->in_len[w->nf] = (uint32_t)c;
	w->out_len[w->nf] = (uint32_t)w->fill;
	w->nf++;
	w->fill = 0;
	return fw_emit(w, w->zout, c);
}

/* xz: runs the encoder over n bytes at p with action a. */
static int fw_xz(struct wsnap_fwriter *w, const void *p, size_t n,
		 lzma_action a)
{
	lzma_ret ret;
	int e;

	w->x.next_in = p;
	w->x.avail_in = n;
	do {
		w->x.next_out = w->out;
		w->x.avail_out = sizeof(w->out);
		ret = lzma_code(&w->x, a);
		if (ret != LZMA_OK && ret != LZMA_STREAM_END)
			return ret == LZMA_MEM_ERROR ? ENOMEM : EIO;
		e = fw_emit(w, w->out, sizeof(w->out) - w->x.avail_out);
		if (e)
			return e;
	} while (w->x.avail_in || (a != LZMA_RUN && ret != LZMA_STREAM_END));
	return 0;
}

int wsnap_fwriter_new(struct wsnap_fwriter **out, enum wsnap_span_kind kind,
		      size_t piece, int level, wsnap_fwriter_out fn, void *ctx)
{
	struct wsnap_fwriter *w;
	static const lzma_stream init = LZMA_STREAM_INIT;

	*out = NULL;
	if (!piece || piece > WSNAP_SPAN_MAX)
		return EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return ENOMEM;
	w->kind = kind;
	w->piece = piece;
	w->fn = fn;
	w->ctx = ctx;
	w->x = init;
	if (kind == WSNAP_SPAN_ZSTD) {
		w->z = ZSTD_createCCtx();
		w->in = malloc(piece);
		w->zout_cap = ZSTD_compressBound(piece);
		w->zout = malloc(w->zout_cap);
		if (!w->z || !w->in || !w->zout ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
			    w->z, ZSTD_c_compressionLevel, level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
			    w->z, ZSTD_c_checksumFlag, 1))) {
			wsnap_fwriter_free(w);
			return ENOMEM;
		}
	} else {
		lzma_ret ret = lzma_easy_encoder(&w->x, (uint32_t)level,
						 LZMA_CHECK_CRC64);

		if (ret != LZMA_OK) {
			wsnap_fwriter_free(w);
			return ret == LZMA_MEM_ERROR ? ENOMEM : EINVAL;
		}
		w->x_open = true;
	}
	*out = w;
	return 0;
}

int wsnap_fwriter_write(struct wsnap_fwriter *w, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	int e = 0;

	while (len && !e) {
		size_t n = w->piece - w->fill < len ? w->piece - w->fill : len;

		if (w->kind == WSNAP_SPAN_ZSTD) {
			memcpy(w->in + w->fill, p, n);
			w->fill += n;
			if (w->fill == w->piece)
				e = fw_zstd_frame(w);
		} else {
			e = fw_xz(w, p, n, LZMA_RUN);
			w->fill += n;
			if (!e && w->fill == w->piece) {
				e = fw_xz(w, NULL, 0, LZMA_FULL_FLUSH);
				w->fill = 0;
			}
		}
		p += n;
		len -= n;
	}
	return e;
}

int wsnap_fwriter_finish(struct wsnap_fwriter *w)
{
	unsigned char *t;
	size_t n;
	int e;

	if (w->kind == WSNAP_SPAN_XZ)
		return fw_xz(w, NULL, 0, LZMA_FINISH);
	e = fw_zstd_frame(w);
	if (e)
		return e;
	n = wsnap_zstd_seek_table_size(w->nf);
	t = n ? malloc(n) : NULL;
	if (!t)
		return ENOMEM;
	if (wsnap_zstd_seek_table_write(w->in_len, w->out_len, w->nf, t, n) !=
	    n) {
		free(t);
		return EIO;
	}
	e = fw_emit(w, t, n);
	free(t);
	return e;
}

uint64_t wsnap_fwriter_bytes(const struct wsnap_fwriter *w)
{
	return w->bytes;
}

void wsnap_fwriter_free(struct wsnap_fwriter *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->z);
	free(w->in);
	free(w->zout);
	free(w->in_len);
	free(w->out_len);
	if (w->x_open)
		lzma_end(&w->x);
	free(w);
}
