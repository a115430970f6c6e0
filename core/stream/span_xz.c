/* SPDX-License-Identifier: MIT */
/*
 * Decoding one xz span (frames.h): consecutive blocks of one xz stream,
 * each from its block header (lzma_block_header_decode) through liblzma's
 * block decoder with the stream's check type, which verifies the block's
 * sizes, padding and check. The filter chain a header asks for must fit
 * the validation pass's memory limit. Every call has its own decoder, so
 * any number of threads may read at once.
 */
#include "frames.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "span_private.h"

static void free_filters(lzma_filter *f)
{
	size_t i;

	for (i = 0; i < LZMA_FILTERS_MAX && f[i].id != LZMA_VLI_UNKNOWN; i++) {
		free(f[i].options);
		f[i].options = NULL;
	}
}

/* One block at *pos (inside the span's input end): decodes it whole into
 * o and moves *pos past it. */
static int xz_block(struct wsnap_source *src, const struct wsnap_span *sp,
		    uint64_t *pos, unsigned char *in, unsigned char *tmp,
		    struct wsnap_span_out *o)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_block block;
	uint64_t end = sp->in_off + sp->in_len, at;
	uint32_t hsize;
	lzma_ret ret = LZMA_OK;
	int rc;

	rc = wsnap_source_read(src, in, 1, *pos);
	if (rc)
		return rc;
	if (in[0] == 0)
		return -EIO; /* the stream's index: no block here */
	hsize = lzma_block_header_size_decode(in[0]);
	if (hsize > end - *pos)
		return -EIO;
	rc = wsnap_source_read(src, in, hsize, *pos);
	if (rc)
		return rc;
	memset(&block, 0, sizeof(block));
	memset(filters, 0, sizeof(filters));
	block.version = 1;
	block.check = (lzma_check)sp->check;
	block.header_size = hsize;
	block.filters = filters;
	if (lzma_block_header_decode(&block, NULL, in) != LZMA_OK)
		return -EIO;
	if (lzma_raw_decoder_memusage(filters) > WSNAP_FRAMES_XZ_MEMLIMIT) {
		free_filters(filters);
		return -EIO;
	}
	ret = lzma_block_decoder(&s, &block);
	if (ret != LZMA_OK) {
		free_filters(filters);
		return ret == LZMA_MEM_ERROR ? -ENOMEM : -EIO;
	}
	at = *pos + hsize;
	while (ret == LZMA_OK) {
		if (s.avail_in == 0) {
			size_t n = end - at < WSNAP_SPAN_CHUNK
					   ? (size_t)(end - at)
					   : WSNAP_SPAN_CHUNK;

			if (n == 0) {
				rc = -EIO; /* the block runs past the span */
				break;
			}
			rc = wsnap_source_read(src, in, n, at);
			if (rc)
				break;
			s.next_in = in;
			s.avail_in = n;
			at += n;
		}
		s.next_out = tmp;
		s.avail_out = WSNAP_SPAN_CHUNK;
		ret = lzma_code(&s, LZMA_RUN);
		if (ret != LZMA_OK && ret != LZMA_STREAM_END) {
			rc = ret == LZMA_MEM_ERROR ? -ENOMEM : -EIO;
			break;
		}
		rc = wsnap_span_take(o, sp->out_len, tmp,
				     WSNAP_SPAN_CHUNK - s.avail_out);
		if (rc)
			break;
	}
	if (!rc)
		*pos += hsize + s.total_in;
	lzma_end(&s);
	free_filters(filters);
	return rc;
}

int wsnap_xz_span_read(struct wsnap_source *src, const struct wsnap_span *sp,
		       uint64_t from, void *buf, size_t len)
{
	struct wsnap_span_out o = {.want = from, .want_len = len, .buf = buf};
	unsigned char *in = NULL, *tmp = NULL;
	uint64_t pos = sp->in_off;
	int rc = 0;

	if (from > sp->out_len || len > sp->out_len - from || sp->check > 15)
		return -EINVAL;
	in = malloc(WSNAP_SPAN_CHUNK);
	tmp = malloc(WSNAP_SPAN_CHUNK);
	if (!in || !tmp) {
		rc = -ENOMEM;
		goto out;
	}
	while (!rc && pos < sp->in_off + sp->in_len)
		rc = xz_block(src, sp, &pos, in, tmp, &o);
	if (!rc && (pos != sp->in_off + sp->in_len || o.done != sp->out_len))
		rc = -EIO;
out:
	free(in);
	free(tmp);
	return rc;
}
