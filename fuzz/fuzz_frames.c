/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the restart points of xz and zstd streams (frames.h).
 * The whole input is a file:
 *  - its end is parsed as a zstd seekable format's seek table
 *    (wsnap_zstd_seek_table_parse, with the rest of the file when the
 *    parser asks for it); oracle: an accepted table's entries lie inside
 *    the file, back to back, and add up to the bytes before the table;
 *  - it is read by the tar reader (members taken, their declared sizes
 *    capped at FUZZ_MAX_TOTAL) with want_spans, so its zstd frames or xz
 *    blocks (from the file's indexes) are recorded, then again with
 *    keep_data and no_seek, so that the decoded stream is spilled;
 *    oracle: the spans satisfy wsnap_spans_valid, a seek table made of
 *    them has a point per span, and every span (the first 16, of at most
 *    4 MiB) decodes, through the span decoders, to exactly the spill's
 *    bytes at its offset (as far as the spill goes: what the tar reader
 *    pulled).
 * Plus: no crash, leak or sanitizer report.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames.h"
#include "fsutil.h"
#include "reader.h"
#include "seek.h"
#include "stream.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void table(const uint8_t *data, size_t size)
{
	struct wsnap_zstd_seek_entry *e = NULL;
	size_t n = 0, need = 0, i, tail = size < 4096 ? size : 4096;
	uint64_t at = 0;
	int rc;

	rc = wsnap_zstd_seek_table_parse(data + size - tail, tail, size, &need,
					 &e, &n);
	if (rc == -EAGAIN) {
		FUZZ_CHECK(need > tail && need <= size);
		rc = wsnap_zstd_seek_table_parse(data + size - need, need, size,
						 &need, &e, &n);
	}
	if (rc != 0) {
		FUZZ_CHECK(e == NULL);
		return;
	}
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(e[i].in_off == at && e[i].in_len > 0);
		at += e[i].in_len;
	}
	FUZZ_CHECK(at == size - wsnap_zstd_seek_table_size(n));
	free(e);
}

struct cap {
	uint64_t total;
};

static enum wsnap_status take(void *ctx, const struct wsnap_raw_member *m,
			      struct wsnap_error *err)
{
	struct cap *c = ctx;

	c->total += m->size;
	if (c->total > FUZZ_MAX_TOTAL)
		return wsnap_error_io(err, 0, NULL, "too much data");
	return WSNAP_OK;
}

static void spans(const uint8_t *data, size_t size)
{
	struct wsnap_reader_opts ro = {.want_spans = true};
	struct wsnap_reader_opts rs = {.keep_data = true, .no_seek = true};
	struct wsnap_reader_result spill;
	struct wsnap_reader_result res;
	struct wsnap_error err;
	struct wsnap_source *src = NULL;
	struct cap c = {0};
	unsigned char *a = NULL, *b = NULL;
	int fd = fuzz_memfd(data, size);
	size_t i;

	if (fd < 0)
		return;
	memset(&res, 0, sizeof(res));
	if (wsnap_reader_run(fd, &ro, take, &c, &res, &err) != WSNAP_OK ||
	    !res.nspans) {
		wsnap_seek_table_free(res.seek);
		free(res.spans);
		close(fd);
		return;
	}
	/* a table is made of sound spans that keep seek.h's bounds */
	FUZZ_CHECK(!res.seek || res.seek->n == res.nspans);
	wsnap_seek_table_free(res.seek);
	/* the decoded stream, spilled */
	c.total = 0;
	FUZZ_CHECK(wsnap_reader_run(fd, &rs, take, &c, &spill, &err) ==
		   WSNAP_OK);
	FUZZ_CHECK(spill.spilled && spill.data_fd >= 0);
	res.data_fd = spill.data_fd;
	FUZZ_CHECK(wsnap_spans_valid(res.spans, res.nspans, size,
				     res.stream_bytes));
	FUZZ_CHECK(wsnap_source_file(fd, "fuzz", &src) == 0);
	for (i = 0; i < res.nspans && i < 16; i++) {
		if (res.spans[i].out_len > (4u << 20))
			continue;
		const struct wsnap_span *sp = &res.spans[i];
		size_t len = (size_t)sp->out_len, got = 0;
		int rc;

		a = malloc(len);
		b = malloc(len);
		if (!a || !b)
			break;
		rc = strcmp(res.compression, "zstd") == 0
			     ? wsnap_zstd_span_read(src, sp, 0, a, len)
			     : wsnap_xz_span_read(src, sp, 0, a, len);
		FUZZ_CHECK(rc == 0);
		/* the spill holds what the tar reader pulled: the stream up
		 * to its end-of-archive marker and a little after it */
		FUZZ_CHECK(wsnap_pread_full(res.data_fd, b, len, sp->out_off,
					    &got) == 0);
		FUZZ_CHECK(memcmp(a, b, got) == 0);
		free(a);
		free(b);
		a = b = NULL;
	}
	free(a);
	free(b);
	wsnap_source_free(src);
	close(res.data_fd);
	free(res.spans);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	table(data, size);
	spans(data, size);
	return 0;
}
