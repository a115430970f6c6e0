/* SPDX-License-Identifier: MIT */
/*
 * Seek tables (seek.h): building one while a stream is validated, its
 * stored form, and the checks of a stored one, which is hostile input.
 * One set of rules (span_ok, point_ok) serves both the recorder and the
 * loader, so that a table that loads is one the recorder could have made.
 */
#include "seek.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "ixf.h"

/* The position of a point as a bit offset into the compressed stream. */
static uint64_t bitpos(const struct wsnap_seek_point *p)
{
	return p->in * 8 - p->bits;
}

/* The first compressed byte a span from p reads. */
static uint64_t in_start(const struct wsnap_seek_point *p)
{
	return p->bits ? p->in - 1 : p->in;
}

/* A span from a to (out_end, in_end) keeps the bounds. */
static bool span_ok(const struct wsnap_seek_point *a, uint64_t out_end,
		    uint64_t in_end)
{
	return out_end > a->out && out_end - a->out <= WSNAP_SEEK_SPAN_MAX &&
	       in_end >= in_start(a) &&
	       in_end - in_start(a) <= WSNAP_SEEK_SPAN_IN_MAX;
}

/*
 * Point p, after prev (NULL for the first), is well formed for kind: the
 * rules of seek.h but the window's placement and the table's sizes.
 */
static bool point_ok(uint32_t kind, const struct wsnap_seek_point *prev,
		     const struct wsnap_seek_point *p)
{
	bool unit = p->flags & WSNAP_SEEK_UNIT_START;

	if (p->flags & ~(uint32_t)WSNAP_SEEK_UNIT_START || p->reserved ||
	    p->bits > 7 || (p->bits && (unit || p->in == 0)) ||
	    p->in > UINT64_MAX / 8 || p->base > p->out ||
	    p->win_raw > WSNAP_SEEK_WINDOW_MAX ||
	    p->win_len > WSNAP_SEEK_WINDOW_STORED_MAX ||
	    p->win_raw > p->out - p->base ||
	    (p->win_len == 0) != (p->win_raw == 0))
		return false;
	if (unit && (p->base != p->out || p->win_len))
		return false;
	if (kind == WSNAP_SEEK_GZIP ? p->aux != 0
				    : p->bits || p->check || p->win_len)
		return false;
	if (!prev)
		return p->in == 0 && p->out == 0 && unit;
	return bitpos(p) > bitpos(prev) && p->base >= prev->base &&
	       span_ok(prev, p->out, p->in);
}

void wsnap_seek_table_init(struct wsnap_seek_table *t, uint32_t kind)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
}

void wsnap_seek_table_release(struct wsnap_seek_table *t)
{
	uint32_t kind = t->kind;

	free(t->points);
	if (!t->windows_borrowed)
		free(t->windows);
	wsnap_seek_table_init(t, kind);
}

struct wsnap_seek_table *wsnap_seek_table_move(struct wsnap_seek_table *t)
{
	struct wsnap_seek_table *m = malloc(sizeof(*m));

	if (!m)
		return NULL;
	*m = *t;
	wsnap_seek_table_init(t, t->kind);
	return m;
}

void wsnap_seek_table_free(struct wsnap_seek_table *t)
{
	if (!t)
		return;
	wsnap_seek_table_release(t);
	free(t);
}

/* Room for more bytes in a growing array of *cap elements of size elem. */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		c *= 2;
	}
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int wsnap_seek_table_add(struct wsnap_seek_table *t,
			 const struct wsnap_seek_point *p, const void *window,
			 size_t window_len)
{
	struct wsnap_seek_point q = *p;
	uLongf stored;
	int rc;

	q.win_off = t->windows_len;
	q.win_len = 0;
	q.win_raw = (uint32_t)window_len;
	if (window_len > WSNAP_SEEK_WINDOW_MAX)
		return -EINVAL;
	if (window_len) {
		stored = compressBound((uLong)window_len);
		rc = grow((void **)&t->windows, &t->windows_cap,
			  t->windows_len + stored, 1);
		if (rc)
			return rc;
		if (compress2(t->windows + t->windows_len, &stored, window,
			      (uLong)window_len, Z_DEFAULT_COMPRESSION) != Z_OK)
			return -ENOMEM;
		q.win_len = (uint32_t)stored;
	}
	if (!point_ok(t->kind, t->n ? &t->points[t->n - 1] : NULL, &q))
		return -EINVAL;
	rc = grow((void **)&t->points, &t->cap, t->n + 1, sizeof(q));
	if (rc)
		return rc;
	t->points[t->n++] = q;
	t->windows_len += q.win_len;
	return 0;
}

int wsnap_seek_table_finish(struct wsnap_seek_table *t, uint64_t in_size,
			    uint64_t stream_size)
{
	/* a point at the very end starts no span */
	while (t->n > 1 && t->points[t->n - 1].out >= stream_size)
		t->n--;
	t->in_size = in_size;
	t->stream_size = stream_size;
	if (t->n == 0 || t->points[t->n - 1].in >= in_size ||
	    !span_ok(&t->points[t->n - 1], stream_size, in_size))
		return -EINVAL;
	return 0;
}

/*
 * Drops the pages of a table's borrowed windows from the process once one
 * is decoded, when they belong to a read-only file mapping (seek.h, flag
 * WSNAP_SEEK_WINDOWS_IN_FILE_MAP), so that nothing is lost, and a later
 * use faults them in again from the page cache. All of them, not the
 * window's own: a fault maps the pages around the one that faulted too
 * (fault-around, large folios). Another thread decoding a window then
 * faults its pages in again: harmless.
 */
static void windows_drop(const struct wsnap_seek_table *t)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a, b;

	if (page <= 0 || !t->windows_droppable || !t->windows_len)
		return;
	a = (uintptr_t)t->windows & ~(uintptr_t)(page - 1);
	b = (uintptr_t)(t->windows + t->windows_len);
	(void)madvise((void *)a, b - a, MADV_DONTNEED);
}

int wsnap_seek_table_window(const struct wsnap_seek_table *t, size_t i,
			    unsigned char *buf)
{
	const struct wsnap_seek_point *p = &t->points[i];
	uLongf len = WSNAP_SEEK_WINDOW_MAX;
	int rc;

	if (!p->win_raw)
		return 0;
	rc = uncompress(buf, &len, t->windows + p->win_off, p->win_len);
	windows_drop(t);
	if (rc != Z_OK || len != p->win_raw)
		return -EIO;
	return (int)len;
}

size_t wsnap_seek_table_find(const struct wsnap_seek_table *t, uint64_t off)
{
	size_t lo = 0, hi = t->n; /* points[lo].out <= off < points[hi].out */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->points[mid].out <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the stored form ---------------------------------------------------- */

#define HDR_BYTES   (WSNAP_SEEK_HEADER_FIELDS * 8u)
#define POINT_BYTES (WSNAP_SEEK_POINT_FIELDS * 8u)

unsigned char *wsnap_seek_table_encode(const struct wsnap_seek_table *t,
				       size_t *len)
{
	unsigned char *b, *q;
	size_t i;

	if (t->n > (SIZE_MAX - HDR_BYTES) / POINT_BYTES)
		return NULL;
	*len = HDR_BYTES + t->n * POINT_BYTES;
	b = malloc(*len);
	if (!b)
		return NULL;
	ixf_put64(b, t->kind);
	ixf_put64(b + 8, t->n);
	ixf_put64(b + 16, t->in_size);
	ixf_put64(b + 24, t->stream_size);
	ixf_put64(b + 32, t->windows_len);
	ixf_put64(b + 40, 0);
	for (i = 0, q = b + HDR_BYTES; i < t->n; i++, q += POINT_BYTES) {
		const struct wsnap_seek_point *p = &t->points[i];

		ixf_put64(q, p->in);
		ixf_put64(q + 8, p->out);
		ixf_put64(q + 16, p->base);
		ixf_put64(q + 24, p->win_off);
		ixf_put64(q + 32, p->aux);
		ixf_put64(q + 40, p->win_len | (uint64_t)p->win_raw << 32);
		ixf_put64(q + 48, p->bits | (uint64_t)p->flags << 32);
		ixf_put64(q + 56, p->check | (uint64_t)p->reserved << 32);
	}
	return b;
}

static int refuse(const char **why, const char *what)
{
	*why = what;
	return -EINVAL;
}

int wsnap_seek_table_decode(const unsigned char *pts, size_t pts_len,
			    const unsigned char *win, size_t win_len,
			    uint64_t archive_size, uint64_t stream_size,
			    unsigned flags, struct wsnap_seek_table **out,
			    const char **why)
{
	struct wsnap_seek_table *t;
	uint64_t kind, n, wbytes, next_win = 0;
	size_t i;

	*out = NULL;
	if (pts_len < HDR_BYTES)
		return refuse(why, "seek table truncated");
	kind = ixf_get64(pts);
	n = ixf_get64(pts + 8);
	wbytes = ixf_get64(pts + 32);
	if (kind < 1 || kind >= WSNAP_SEEK_NKINDS || ixf_get64(pts + 40))
		return refuse(why, "seek table of an unknown kind");
	/* the count is bounded by the bytes before anything is allocated */
	if (n < 1 || n > (pts_len - HDR_BYTES) / POINT_BYTES ||
	    pts_len != HDR_BYTES + n * POINT_BYTES || wbytes > win_len)
		return refuse(why, "seek table size mismatch");
	if (ixf_get64(pts + 16) > archive_size ||
	    ixf_get64(pts + 24) != stream_size)
		return refuse(why, "seek table is for another stream");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	wsnap_seek_table_init(t, (uint32_t)kind);
	t->in_size = ixf_get64(pts + 16);
	t->stream_size = stream_size;
	t->points = malloc((size_t)n * sizeof(*t->points));
	if (flags & WSNAP_SEEK_BORROW_WINDOWS) {
		/* read only: the table is never added to */
		t->windows = (unsigned char *)win;
		t->windows_borrowed = true;
		t->windows_droppable = flags & WSNAP_SEEK_WINDOWS_IN_FILE_MAP;
	} else {
		t->windows = malloc(wbytes ? (size_t)wbytes : 1);
	}
	if (!t->points || !t->windows) {
		wsnap_seek_table_free(t);
		return -ENOMEM;
	}
	t->cap = (size_t)n;
	if (wbytes && !t->windows_borrowed)
		memcpy(t->windows, win, (size_t)wbytes);
	t->windows_len = t->windows_cap = (size_t)wbytes;
	for (i = 0; i < n; i++) {
		const unsigned char *q = pts + HDR_BYTES + i * POINT_BYTES;
		struct wsnap_seek_point *p = &t->points[i];
		uint64_t w = ixf_get64(q + 40), b = ixf_get64(q + 48),
			 c = ixf_get64(q + 56);

		p->in = ixf_get64(q);
		p->out = ixf_get64(q + 8);
		p->base = ixf_get64(q + 16);
		p->win_off = ixf_get64(q + 24);
		p->aux = ixf_get64(q + 32);
		p->win_len = (uint32_t)w;
		p->win_raw = (uint32_t)(w >> 32);
		p->bits = (uint32_t)b;
		p->flags = (uint32_t)(b >> 32);
		p->check = (uint32_t)c;
		p->reserved = (uint32_t)(c >> 32);
		if (!point_ok(t->kind, i ? p - 1 : NULL, p) ||
		    p->in >= t->in_size || p->out >= stream_size ||
		    p->win_off != next_win || p->win_len > wbytes - next_win) {
			wsnap_seek_table_free(t);
			return refuse(why, "seek point out of order or "
					   "out of bounds");
		}
		next_win += p->win_len;
		t->n = i + 1;
	}
	if (next_win != wbytes ||
	    !span_ok(&t->points[n - 1], stream_size, t->in_size)) {
		wsnap_seek_table_free(t);
		return refuse(why, "seek table does not cover the stream");
	}
	*out = t;
	return 0;
}
