/* SPDX-License-Identifier: MIT */
/*
 * Decoding one zstd span (frames.h): consecutive frames read from the
 * source and decoded with libzstd, under the validation pass's window
 * limit, content checksums checked by libzstd. Every call has its own
 * decoder, so any number of threads may read at once.
 */
#include "frames.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "span_private.h"

int wsnap_zstd_span_read(struct wsnap_source *src, const struct wsnap_span *sp,
			 uint64_t from, void *buf, size_t len)
{
	struct wsnap_span_out o = {.want = from, .want_len = len, .buf = buf};
	unsigned char *in = NULL, *tmp = NULL;
	uint64_t at = 0;
	size_t ret = 1;
	ZSTD_DCtx *d = NULL;
	int rc = 0;

	if (from > sp->out_len || len > sp->out_len - from)
		return -EINVAL;
	in = malloc(WSNAP_SPAN_CHUNK);
	tmp = malloc(WSNAP_SPAN_CHUNK);
	d = ZSTD_createDCtx();
	if (!in || !tmp || !d) {
		rc = -ENOMEM;
		goto out;
	}
	if (ZSTD_isError(ZSTD_DCtx_setParameter(
		    d, ZSTD_d_windowLogMax, WSNAP_FRAMES_ZSTD_WINDOW_LOG))) {
		rc = -ENOMEM;
		goto out;
	}
	while (at < sp->in_len) {
		size_t n = sp->in_len - at < WSNAP_SPAN_CHUNK
				   ? (size_t)(sp->in_len - at)
				   : WSNAP_SPAN_CHUNK;
		ZSTD_inBuffer ib = {in, n, 0};

		rc = wsnap_source_read(src, in, n, sp->in_off + at);
		if (rc)
			goto out;
		at += n;
		/* the last frame must end exactly where the span does */
		while (ib.pos < ib.size || (at == sp->in_len && ret != 0)) {
			ZSTD_outBuffer ob = {tmp, WSNAP_SPAN_CHUNK, 0};
			size_t before = ib.pos;

			ret = ZSTD_decompressStream(d, &ob, &ib);
			if (ZSTD_isError(ret)) {
				rc = ZSTD_getErrorCode(ret) ==
						     ZSTD_error_memory_allocation
					     ? -ENOMEM
					     : -EIO;
				goto out;
			}
			rc = wsnap_span_take(&o, sp->out_len, tmp, ob.pos);
			if (rc)
				goto out;
			if (ib.pos == before && ob.pos == 0 && ret != 0 &&
			    ib.pos == ib.size) {
				rc = -EIO; /* input ends inside a frame */
				goto out;
			}
		}
	}
	rc = ret == 0 && o.done == sp->out_len ? 0 : -EIO;
out:
	ZSTD_freeDCtx(d);
	free(in);
	free(tmp);
	return rc;
}
