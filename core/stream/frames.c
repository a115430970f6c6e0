/* SPDX-License-Identifier: MIT */
/*
 * Span lists of xz and zstd streams and the zstd seekable format's seek
 * table (frames.h). The span decoders are in span_zstd.c and span_xz.c.
 */
#include "frames.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void wsnap_spans_init(struct wsnap_spans *s, enum wsnap_span_kind kind)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
}

void wsnap_spans_release(struct wsnap_spans *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int wsnap_spans_piece(struct wsnap_spans *s, uint64_t in_off, uint64_t in_len,
		      uint64_t out_len, uint32_t check, bool boundary)
{
	struct wsnap_span *last = s->n ? &s->v[s->n - 1] : NULL;
	struct wsnap_span *nv;

	s->pieces++;
	if (out_len > WSNAP_SPAN_MAX || in_len > WSNAP_SPAN_IN_MAX)
		s->too_big = true;
	if (boundary)
		last = NULL; /* nothing joins the span before a boundary */
	/* a piece that decodes to nothing joins the span before it, or the
	 * next span when there is none to join (pending) */
	if (out_len == 0 && !last) {
		if (!s->pending)
			s->pending_off = in_off;
		s->pending = true;
		if (s->pending_n < UINT32_MAX - 1)
			s->pending_n++;
		return 0;
	}
	if (last && !s->pending &&
	    in_off + in_len - last->in_off <= WSNAP_SPAN_IN_MAX &&
	    (out_len == 0 || (last->out_len < WSNAP_SPAN_MIN &&
			      out_len <= WSNAP_SPAN_MAX - last->out_len))) {
		last->in_len = in_off + in_len - last->in_off;
		last->out_len += out_len;
		if (last->pieces < UINT32_MAX)
			last->pieces++;
		s->out_end += out_len;
		return 0;
	}
	if (s->n >= WSNAP_SPANS_MAX)
		return -E2BIG;
	nv = wsnap_grow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	last = &s->v[s->n++];
	last->in_off = s->pending ? s->pending_off : in_off;
	last->in_len = in_off + in_len - last->in_off;
	last->out_off = s->out_end;
	last->out_len = out_len;
	last->check = check;
	last->pieces = 1 + (s->pending ? s->pending_n : 0);
	s->pending = false;
	s->pending_n = 0;
	s->out_end += out_len;
	return 0;
}

bool wsnap_spans_valid(const struct wsnap_span *v, size_t n, uint64_t src_size,
		       uint64_t stream_size)
{
	uint64_t in = 0, out = 0;
	size_t i;

	if (n == 0 || n > WSNAP_SPANS_MAX)
		return false;
	for (i = 0; i < n; i++) {
		const struct wsnap_span *sp = &v[i];

		if (sp->out_off != out || sp->out_len == 0 ||
		    sp->out_len > WSNAP_SPAN_MAX || sp->in_len == 0 ||
		    sp->in_len > WSNAP_SPAN_IN_MAX || sp->in_off < in ||
		    sp->in_off > src_size ||
		    sp->in_len > src_size - sp->in_off || sp->check > 15)
			return false;
		in = sp->in_off + sp->in_len;
		out += sp->out_len;
	}
	return out == stream_size;
}

bool wsnap_spans_seekable(const struct wsnap_spans *s)
{
	return s->n >= 2 && !s->too_big;
}

size_t wsnap_spans_find(const struct wsnap_span *v, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (off < v[mid].out_off)
			hi = mid;
		else if (off - v[mid].out_off >= v[mid].out_len)
			lo = mid + 1;
		else
			return mid;
	}
	return n;
}

/* ---- spans as a seek table (seek.h) ------------------------------------- */

#define AUX_LEN(a)   ((a)&0xffffffffu)
#define AUX_CHECK(a) ((uint32_t)((a) >> 32) & 0xffu)
#define AUX_SKIP(a)  ((a) >> 40)

int wsnap_spans_seek_table(const struct wsnap_spans *s, uint64_t in_size,
			   uint64_t stream_size, struct wsnap_seek_table **out)
{
	struct wsnap_seek_table t;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (!s->n || s->too_big || s->kind == 0)
		return -EINVAL;
	wsnap_seek_table_init(&t, s->kind == WSNAP_SPAN_XZ ? WSNAP_SEEK_XZ
							   : WSNAP_SEEK_ZSTD);
	for (i = 0; i < s->n && !rc; i++) {
		const struct wsnap_span *sp = &s->v[i];
		struct wsnap_seek_point p = {0};

		p.in = i ? sp->in_off : 0;
		p.out = sp->out_off;
		p.base = p.out;
		p.flags = WSNAP_SEEK_UNIT_START;
		if (sp->in_len > UINT32_MAX || sp->in_off - p.in >= 1u << 24)
			rc = -EINVAL;
		else
			p.aux = sp->in_len | (uint64_t)sp->check << 32 |
				(sp->in_off - p.in) << 40;
		if (!rc)
			rc = wsnap_seek_table_add(&t, &p, NULL, 0);
	}
	if (!rc)
		rc = wsnap_seek_table_finish(&t, in_size, stream_size);
	if (!rc && !(*out = wsnap_seek_table_move(&t)))
		rc = -ENOMEM;
	wsnap_seek_table_release(&t);
	return rc;
}

/* Span i of an xz or zstd table, its aux checked against the points and
 * the object. */
static int seek_span(const struct wsnap_seek_table *t, size_t i,
		     struct wsnap_source *src, struct wsnap_span *sp)
{
	const struct wsnap_seek_point *p = &t->points[i];
	uint64_t next = i + 1 < t->n ? t->points[i + 1].in : t->in_size;

	sp->in_off = p->in + AUX_SKIP(p->aux);
	sp->in_len = AUX_LEN(p->aux);
	sp->check = AUX_CHECK(p->aux);
	sp->out_off = p->out;
	sp->out_len = wsnap_seek_span_end(t, i) - p->out;
	sp->pieces = 0;
	if (sp->in_len == 0 || sp->in_len > WSNAP_SPAN_IN_MAX ||
	    sp->in_off < p->in || sp->in_off > next ||
	    sp->in_len > next - sp->in_off || next > src->size ||
	    sp->check > 15 || (t->kind == WSNAP_SEEK_ZSTD && sp->check) ||
	    sp->out_len > WSNAP_SPAN_MAX)
		return -EIO;
	return 0;
}

int wsnap_seek_xz_span(const struct wsnap_seek_table *t, size_t i,
		       struct wsnap_source *src, unsigned char *out)
{
	struct wsnap_span sp;
	int rc = seek_span(t, i, src, &sp);

	return rc ? rc
		  : wsnap_xz_span_read(src, &sp, 0, out, (size_t)sp.out_len);
}

int wsnap_seek_zstd_span(const struct wsnap_seek_table *t, size_t i,
			 struct wsnap_source *src, unsigned char *out)
{
	struct wsnap_span sp;
	int rc = seek_span(t, i, src, &sp);

	return rc ? rc
		  : wsnap_zstd_span_read(src, &sp, 0, out, (size_t)sp.out_len);
}

/* ---- the zstd seekable format's seek table ------------------------------ */

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Reserved_Bits of the descriptor (bits 6-2): a compliant decoder refuses
 * them; Checksum_Flag is bit 7. */
#define SEEK_RESERVED 0x7cu
#define SEEK_CHECKSUM 0x80u

int wsnap_zstd_seek_table_parse(const unsigned char *tail, size_t n,
				uint64_t file_size, size_t *need,
				struct wsnap_zstd_seek_entry **out,
				size_t *n_out)
{
	const unsigned char *foot, *frame, *e;
	struct wsnap_zstd_seek_entry *v;
	uint32_t count, frame_size;
	uint64_t esize, total, in = 0, out_off = 0;
	unsigned char desc;
	size_t i;

	*out = NULL;
	*n_out = 0;
	*need = 0;
	if (n > file_size)
		return -EINVAL;
	if (n < WSNAP_ZSTD_SEEKABLE_FOOTER)
		return -ENOENT;
	foot = tail + n - WSNAP_ZSTD_SEEKABLE_FOOTER;
	if (le32(foot + 5) != WSNAP_ZSTD_SEEKABLE_MAGIC)
		return -ENOENT;
	count = le32(foot);
	desc = foot[4];
	if (desc & SEEK_RESERVED)
		return -EINVAL;
	if (count > WSNAP_ZSTD_SEEKABLE_MAX_FRAMES)
		return -EINVAL;
	esize = desc & SEEK_CHECKSUM ? 12 : 8;
	/* skippable frame header, the entries, the footer */
	total = 8 + esize * count + WSNAP_ZSTD_SEEKABLE_FOOTER;
	if (total > file_size)
		return -EINVAL;
	if (total > n) {
		*need = (size_t)total;
		return -EAGAIN;
	}
	frame = tail + n - total;
	frame_size = le32(frame + 4);
	if (le32(frame) != WSNAP_ZSTD_SEEKABLE_SKIP_MAGIC ||
	    frame_size != total - 8)
		return -EINVAL;
	v = count ? calloc(count, sizeof(*v)) : NULL;
	if (count && !v)
		return -ENOMEM;
	for (i = 0, e = frame + 8; i < count; i++, e += esize) {
		uint32_t c = le32(e), d = le32(e + 4);

		/* every frame takes bytes; the sum stays inside the file */
		if (c == 0 || c > file_size - total - in) {
			free(v);
			return -EINVAL;
		}
		v[i].in_off = in;
		v[i].in_len = c;
		v[i].out_off = out_off;
		v[i].out_len = d;
		in += c;
		out_off += d;
	}
	if (in != file_size - total) {
		free(v);
		return -EINVAL;
	}
	*out = v;
	*n_out = count;
	return 0;
}

size_t wsnap_zstd_seek_table_size(size_t nf)
{
	if (nf > WSNAP_ZSTD_SEEKABLE_MAX_FRAMES)
		return 0;
	return 8 + 8 * nf + WSNAP_ZSTD_SEEKABLE_FOOTER;
}

size_t wsnap_zstd_seek_table_write(const uint32_t *in_len,
				   const uint32_t *out_len, size_t nf,
				   unsigned char *buf, size_t cap)
{
	size_t total = wsnap_zstd_seek_table_size(nf), i;
	unsigned char *p = buf;

	if (!total || cap < total)
		return 0;
	put_le32(p, WSNAP_ZSTD_SEEKABLE_SKIP_MAGIC);
	put_le32(p + 4, (uint32_t)(total - 8));
	p += 8;
	for (i = 0; i < nf; i++, p += 8) {
		put_le32(p, in_len[i]);
		put_le32(p + 4, out_len[i]);
	}
	put_le32(p, (uint32_t)nf);
	p[4] = 0; /* no checksums: every frame carries its own */
	put_le32(p + 5, WSNAP_ZSTD_SEEKABLE_MAGIC);
	return total;
}
