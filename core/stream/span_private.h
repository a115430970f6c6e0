/* SPDX-License-Identifier: MIT */
/*
 * What the span decoders (span_zstd.c, span_xz.c) share: the chunk size of
 * their reads and the copy of the wanted part of a span's decoded bytes.
 * Internal to core/stream.
 */
#ifndef WSNAP_SPAN_PRIVATE_H
#define WSNAP_SPAN_PRIVATE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Bytes of input read, and of output decoded, per step. */
#define WSNAP_SPAN_CHUNK (256u << 10)

/* The decoded bytes [want, want + want_len) of a span go to buf; done
 * counts every decoded byte. */
struct wsnap_span_out {
	uint64_t want;
	size_t want_len;
	unsigned char *buf;
	uint64_t done;
};

/* Takes n more decoded bytes at p; -EIO once the span decodes to more than
 * out_len bytes. */
static inline int wsnap_span_take(struct wsnap_span_out *o, uint64_t out_len,
				  const unsigned char *p, size_t n)
{
	uint64_t a = o->done, b = o->done + n;
	uint64_t lo = o->want, hi = o->want + o->want_len;

	if (n > out_len - o->done)
		return -EIO;
	o->done = b;
	if (b <= lo || a >= hi)
		return 0;
	if (a < lo) {
		p += lo - a;
		a = lo;
	}
	if (b > hi)
		b = hi;
	memcpy(o->buf + (a - lo), p, (size_t)(b - a));
	return 0;
}

#endif
