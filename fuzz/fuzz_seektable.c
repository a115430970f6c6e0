/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: seek tables (core/stream/seek.c) as hostile input, and
 * the gzip decoders (core/stream/gzip.c) behind them.
 *
 *  - an input that starts with the gzip magic is a compressed stream: it
 *    is decoded by the validation pass with points recorded; when that
 *    succeeds the table's stored form is checked to load back, then copies
 *    of it with bytes changed where the input's hash says are loaded, and
 *    whatever loads is read through a seekable stream over the input;
 *  - anything else is a stored table as it is: a u32 length of the points
 *    section, the section, then the windows; the "archive" the table
 *    addresses is the input itself.
 * Oracles: no crash, leak or sanitizer report; a table that loads keeps
 * every invariant of seek.h; a read through it returns bytes or -EIO
 * (never anything else) and, for the table the decoder recorded, exactly
 * the bytes the validation pass decoded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "seek.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS  6
#define MAX_OUTPUT (32u << 20)

static struct wsnap_source *mem_source(const unsigned char *data, size_t len)
{
	struct wsnap_source *src;

	if (wsnap_source_memory(data, len, &src) != 0)
		abort();
	return src;
}

/* The invariants of seek.h on a loaded table. */
static void check_table(const struct wsnap_seek_table *t, uint64_t archive)
{
	size_t i;

	if (t->n < 1 || t->in_size > archive || t->points[0].in ||
	    t->points[0].out)
		abort();
	for (i = 0; i < t->n; i++) {
		const struct wsnap_seek_point *p = &t->points[i];
		uint64_t end = wsnap_seek_span_end(t, i);

		if (p->out >= t->stream_size || p->in >= t->in_size ||
		    end <= p->out || end - p->out > WSNAP_SEEK_SPAN_MAX ||
		    p->win_raw > WSNAP_SEEK_WINDOW_MAX || p->base > p->out ||
		    p->win_off + p->win_len > t->windows_len)
			abort();
		if (i && t->points[i - 1].out >= p->out)
			abort();
		if (wsnap_seek_table_find(t, p->out) != i)
			abort();
	}
}

/* Reads a few bytes of each of a few spans: bytes or -EIO; with want, the
 * bytes must be want's. */
static void read_through(const unsigned char *data, size_t size,
			 struct wsnap_seek_table *t, const unsigned char *want)
{
	struct wsnap_stream *s;
	unsigned char buf[64];
	size_t i, step;

	if (wsnap_stream_seekable(mem_source(data, size), t, 1 << 20, &s) != 0)
		return;
	t = (struct wsnap_seek_table *)wsnap_stream_seek_table(s);
	step = t->n > 4 ? t->n / 4 : 1;
	for (i = 0; i < t->n; i += step) {
		uint64_t off = wsnap_seek_span_end(t, i) - 1;
		ssize_t r = s->ops->pread(s, buf, sizeof(buf), off);

		if (r < 0 && r != -EIO && r != -ENOMEM)
			abort();
		if (r > 0 && want && memcmp(buf, want + off, (size_t)r) != 0)
			abort();
	}
	wsnap_stream_free(s);
}

static int load(const unsigned char *pts, size_t plen, const unsigned char *win,
		size_t wlen, uint64_t archive, uint64_t stream,
		struct wsnap_seek_table **t)
{
	const char *why = NULL;
	int rc = wsnap_seek_table_decode(pts, plen, win, wlen, archive, stream,
					 0, t, &why);

	if (rc == 0)
		check_table(*t, archive);
	else if (rc == -EINVAL && !why)
		abort();
	return rc;
}

/* The validation pass over a gzip input; its table, checked and fuzzed. */
static void from_gzip(const uint8_t *data, size_t size)
{
	struct wsnap_gzip *g;
	const unsigned char *in = data;
	size_t in_len = size, got, olen = 0;
	unsigned char *out = malloc(MAX_OUTPUT), *pts;
	struct wsnap_seek_table *t, *u;
	enum wsnap_gzip_status st;
	size_t plen, m;
	uint64_t h = 1469598103934665603ull;

	if (!out || wsnap_gzip_new(&g, true) != 0)
		abort();
	do {
		st = wsnap_gzip_decode(g, &in, &in_len, true, out + olen,
				       MAX_OUTPUT - olen, &got);
		olen += got;
	} while (st == WSNAP_GZIP_OK && olen < MAX_OUTPUT && (got || in_len));
	t = st == WSNAP_GZIP_END ? wsnap_gzip_take_table(g) : NULL;
	wsnap_gzip_free(g);
	if (!t)
		goto out;
	if (t->stream_size != olen)
		abort();
	pts = wsnap_seek_table_encode(t, &plen);
	if (!pts)
		abort();
	if (load(pts, plen, t->windows, t->windows_len, size, olen, &u) != 0)
		abort(); /* what was recorded loads */
	read_through(data, size, u, out);
	for (m = 0; m < size; m++)
		h = (h ^ data[m]) * 1099511628211ull;
	for (m = 0; m < MUTATIONS; m++) {
		size_t at = (size_t)(h % plen);

		h = h * 6364136223846793005ull + 1442695040888963407ull;
		pts[at] ^= (unsigned char)(h >> 56 | 1);
		if (load(pts, plen, t->windows, t->windows_len, size, olen,
			 &u) == 0)
			read_through(data, size, u, NULL);
	}
	free(pts);
	wsnap_seek_table_free(t);
out:
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsnap_seek_table *t;
	uint32_t plen;

	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		from_gzip(data, size);
		return 0;
	}
	if (size < 4)
		return 0;
	memcpy(&plen, data, 4);
	if (plen > size - 4)
		return 0;
	/* the stream size the index would record: the points' own claim */
	if (plen >= 32) {
		uint64_t stream = 0;
		int i;

		for (i = 7; i >= 0; i--)
			stream = stream << 8 | data[4 + 24 + i];
		if (load(data + 4, plen, data + 4 + plen, size - 4 - plen, size,
			 stream, &t) == 0)
			read_through(data, size, t, NULL);
	}
	return 0;
}
