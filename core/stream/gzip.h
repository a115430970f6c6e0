/* SPDX-License-Identifier: MIT */
/*
 * gzip (RFC 1952) decoding of our own: zlib's raw inflate for the deflate
 * data, the member headers and trailers parsed and checked here.
 *
 *  - the validation pass (wsnap_gzip_decode): any number of members back
 *    to back, each header bounded (FEXTRA, FNAME, FCOMMENT within
 *    WSNAP_GZIP_HEADER_MAX bytes in all, reserved flags zero, FHCRC
 *    checked), each trailer's CRC-32 and ISIZE checked. The stream ends
 *    where the bytes after a member are not a gzip magic; what follows
 *    (zero padding only, as today) is the caller's to check. With a seek
 *    table (record) it keeps gzip points there (seek.h): one at the first
 *    member, then at the first deflate block boundary, or member start,
 *    after WSNAP_SEEK_GZIP_SPACING decoded bytes since the last;
 *  - reads (wsnap_gzip_span): one span of a seek table decoded again from
 *    its point, every trailer met checked.
 */
#ifndef WSNAP_GZIP_H
#define WSNAP_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seek.h"

/* Most bytes of one member header with its optional fields. */
#define WSNAP_GZIP_HEADER_MAX (1u << 20)

struct wsnap_gzip;

enum wsnap_gzip_status {
	WSNAP_GZIP_OK,	      /* progress: bytes produced or taken */
	WSNAP_GZIP_END,	      /* the last member has ended */
	WSNAP_GZIP_TRUNCATED, /* the input ended inside a member */
	WSNAP_GZIP_CORRUPT,   /* bad header or deflate data: see _error */
	WSNAP_GZIP_TRAILER,   /* a trailer does not match: see _error */
	WSNAP_GZIP_NOMEM,
};

/* A decoder; with record, it keeps a seek table. Returns 0 or -ENOMEM. */
int wsnap_gzip_new(struct wsnap_gzip **out, bool record);
void wsnap_gzip_free(struct wsnap_gzip *g);

/*
 * Decodes from *in (*in_len bytes, the next ones of the input; in_eof: no
 * more follow) into out (at most cap bytes, *produced set), advancing *in
 * and *in_len past what was taken. Call again with more input once all is
 * taken; after END the bytes left in *in are not the stream's.
 */
enum wsnap_gzip_status wsnap_gzip_decode(struct wsnap_gzip *g,
					 const unsigned char **in,
					 size_t *in_len, bool in_eof,
					 unsigned char *out, size_t cap,
					 size_t *produced);

/* After CORRUPT or TRAILER: what is wrong (static) and at which input
 * byte (*at). */
const char *wsnap_gzip_error(const struct wsnap_gzip *g, uint64_t *at);

/* Input bytes of the whole members so far (after END: the stream's
 * compressed size); members seen. */
uint64_t wsnap_gzip_in_used(const struct wsnap_gzip *g);
uint64_t wsnap_gzip_members(const struct wsnap_gzip *g);

/*
 * After END: the seek table (finished, now the caller's), or NULL when not
 * recording or when the stream cannot have one (a span past the bounds,
 * out of memory): then reads need a spill.
 */
struct wsnap_seek_table *wsnap_gzip_take_table(struct wsnap_gzip *g);

/* The gzip span decoder (wsnap_seek_span_fn). */
int wsnap_gzip_span(const struct wsnap_seek_table *t, size_t i,
		    struct wsnap_source *src, unsigned char *out);

#endif
