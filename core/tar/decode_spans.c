/* SPDX-License-Identifier: MIT */
/*
 * xz and zstd read in place (tar_private.h, "decode_spans.c"): whether the
 * layout may leave the spill out, and the spans recorded by the decoders
 * (decode_zstd.c, decode_xzidx.c) as the seek table the result hands
 * over (seek.h).
 */
#include "tar_private.h"

#include <stdlib.h>

#include "seek.h"

bool wsnap_decoder_may_seek(struct wsnap_reader *r)
{
	if (!r->regular || r->opts->no_seek)
		return false;
	if (r->dec.xz) {
		if (wsnap_decoder_xz_spans(r) != WSNAP_OK)
			return false;
		return !r->spans_lost && wsnap_spans_seekable(&r->spans);
	}
	if (r->dec.zstd)
		return wsnap_decoder_zstd_may_seek(r);
	return false;
}

struct wsnap_seek_table *wsnap_decoder_spans_seek(struct wsnap_reader *r)
{
	struct wsnap_seek_table *t = NULL;

	if (!r->regular || r->opts->no_seek || r->spans_lost || !r->dec.eof ||
	    r->spans.out_end != r->stream_bytes ||
	    !wsnap_spans_seekable(&r->spans) ||
	    !wsnap_spans_valid(r->spans.v, r->spans.n, r->size,
			       r->stream_bytes))
		return NULL;
	if (wsnap_spans_seek_table(&r->spans, r->size, r->stream_bytes, &t))
		return NULL;
	return t;
}
