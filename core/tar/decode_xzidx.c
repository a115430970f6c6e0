/* SPDX-License-Identifier: MIT */
/*
 * The blocks of a regular xz file as restart points (tar_private.h,
 * wsnap_decoder_xz_spans), read before the validation pass from the
 * file's indexes with lzma_file_info_decoder (footers, indexes and
 * padding, from the end, seeking). The pass then decodes the file with
 * liblzma's stream decoder, which checks every stream's index against the
 * blocks it decoded (sizes of each block, their count) and the footer
 * against the index; so the indexes describe the blocks that were
 * decoded, as long as the file is the one that was read (the caller's
 * identity check). They must add up to exactly the file's size and, once
 * decoded, the stream's (wsnap_decoder_finish): anything else (or an index
 * that needs more than WSNAP_READER_XZ_MEMLIMIT to hold) leaves the stream
 * without spans, to be read through a spill.
 */
#include "tar_private.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>

#include "fsutil.h"

#define RD_XZIDX_CHUNK (64u << 10)

/* The combined index of every stream in the file, or NULL. */
static lzma_index *rd_xz_index(struct wsnap_reader *r, unsigned char *buf)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_index *idx = NULL;
	uint64_t pos = 0;
	lzma_ret ret;

	if (lzma_file_info_decoder(&s, &idx, WSNAP_READER_XZ_MEMLIMIT,
				   r->size) != LZMA_OK)
		return NULL;
	for (;;) {
		if (s.avail_in == 0) {
			size_t n = r->size - pos < RD_XZIDX_CHUNK
					   ? (size_t)(r->size - pos)
					   : RD_XZIDX_CHUNK;
			size_t got;

			if (wsnap_pread_full(r->fd, buf, n, pos, &got) != 0 ||
			    got != n)
				break;
			s.next_in = buf;
			s.avail_in = n;
			pos += n;
		}
		ret = lzma_code(&s, pos == r->size ? LZMA_FINISH : LZMA_RUN);
		if (ret == LZMA_SEEK_NEEDED) {
			if (s.seek_pos > r->size)
				break;
			pos = s.seek_pos;
			s.avail_in = 0;
			continue;
		}
		if (ret == LZMA_STREAM_END) {
			lzma_end(&s);
			return idx;
		}
		if (ret != LZMA_OK)
			break;
	}
	lzma_end(&s);
	if (idx)
		lzma_index_end(idx, NULL);
	return NULL;
}

enum wsnap_status wsnap_decoder_xz_spans(struct wsnap_reader *r)
{
	unsigned char *buf;
	lzma_index *idx;
	lzma_index_iter it;
	lzma_vli stream = 0;
	int rc = 0;

	wsnap_spans_init(&r->spans, WSNAP_SPAN_XZ);
	if (!r->regular)
		return WSNAP_OK;
	buf = malloc(RD_XZIDX_CHUNK);
	if (!buf)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	idx = rd_xz_index(r, buf);
	free(buf);
	if (!idx) {
		r->spans_lost = true;
		return WSNAP_OK;
	}
	if (lzma_index_file_size(idx) != r->size)
		r->spans_lost = true;
	lzma_index_iter_init(&it, idx);
	while (!r->spans_lost && !rc &&
	       !lzma_index_iter_next(&it, LZMA_INDEX_ITER_BLOCK)) {
		const lzma_stream_flags *f = it.stream.flags;

		if (!f ||
		    it.block.uncompressed_file_offset != r->spans.out_end) {
			r->spans_lost = true;
			break;
		}
		rc = wsnap_spans_piece(
			&r->spans, it.block.compressed_file_offset,
			it.block.total_size, it.block.uncompressed_size,
			(uint32_t)f->check, it.stream.number != stream);
		stream = it.stream.number;
	}
	if (rc || r->spans.out_end != lzma_index_uncompressed_size(idx))
		r->spans_lost = true;
	lzma_index_end(idx, NULL);
	if (rc == -ENOMEM)
		return wsnap_reader_io(r, ENOMEM, "out of memory");
	return WSNAP_OK;
}
