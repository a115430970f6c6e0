/* SPDX-License-Identifier: MIT */
/*
 * gzip decoding of our own (gzip.h): member headers and trailers here,
 * deflate by zlib's raw inflate (windowBits -15), the CRC-32 by ISA-L's
 * crc32_gzip_refl, so that the same code checks every member of the
 * validation pass and of a span read again.
 *
 * Invariants:
 *  - a header is parsed byte by byte by hdr_byte, bounded by
 *    WSNAP_GZIP_HEADER_MAX whatever its fields say; nothing of it is kept
 *    but the flags and the CRC that FHCRC checks;
 *  - the CRC-32 and length of every member are checked against its
 *    trailer before the next member (or the end) is looked at;
 *  - recording (validation pass): a point is added only where inflate
 *    stopped at a block boundary that is not the member's last (Z_BLOCK,
 *    data_type bits 7 and 6, as zlib's examples/zran.c explains), or at a
 *    member's header; Z_BLOCK is asked for only once a point is due, so
 *    the pass runs at full inflate speed in between. A table that cannot
 *    keep its bounds is given up (the caller then spills);
 *  - span reads (wsnap_gzip_span) read no compressed byte outside the
 *    span's [start, next point's in) and produce exactly the span's bytes.
 */
#include "gzip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l/crc.h>
#include <zlib.h>

#include "stream.h"

#define GZ_FTEXT     0x01
#define GZ_FHCRC     0x02
#define GZ_FEXTRA    0x04
#define GZ_FNAME     0x08
#define GZ_FCOMMENT  0x10
#define GZ_FRESERVED 0xe0

/* Compressed bytes per source read of a span. */
#define GZ_SPAN_CHUNK (128u << 10)

/* The CRC-32 of gzip (reflected IEEE) of p[0..n) after crc: ISA-L's,
 * several times faster than zlib's crc32 and the same value. */
static uint32_t gz_crc(uint32_t crc, const unsigned char *p, size_t n)
{
	return crc32_gzip_refl(crc, p, n);
}

/* ---- member headers ----------------------------------------------------- */

enum hdr_step { H_FIXED, H_XLEN, H_EXTRA, H_NAME, H_COMMENT, H_HCRC, H_DONE };

struct gz_hdr {
	enum hdr_step step;
	unsigned flg;
	uint32_t got;  /* bytes of the current step */
	uint32_t xlen; /* FEXTRA's length */
	uint32_t len;  /* header bytes so far */
	uint32_t crc;  /* CRC-32 of the header bytes before FHCRC */
	unsigned hcrc; /* FHCRC as read */
};

static void hdr_init(struct gz_hdr *h)
{
	memset(h, 0, sizeof(*h));
}

/* The step after s that the flags call for. */
static enum hdr_step hdr_next(const struct gz_hdr *h, enum hdr_step s)
{
	switch (s) {
	case H_FIXED:
		if (h->flg & GZ_FEXTRA)
			return H_XLEN;
		/* fall through */
	case H_XLEN:
	case H_EXTRA:
		if (h->flg & GZ_FNAME)
			return H_NAME;
		/* fall through */
	case H_NAME:
		if (h->flg & GZ_FCOMMENT)
			return H_COMMENT;
		/* fall through */
	case H_COMMENT:
		if (h->flg & GZ_FHCRC)
			return H_HCRC;
		/* fall through */
	default:
		return H_DONE;
	}
}

/* Takes byte c of a header: 1 when the header is complete, 0 when more
 * bytes are due, -1 when it is bad (*why says). */
static int hdr_byte(struct gz_hdr *h, unsigned char c, const char **why)
{
	static const unsigned char fixed[3] = {0x1f, 0x8b, 8};

	if (++h->len > WSNAP_GZIP_HEADER_MAX) {
		*why = "gzip member header too long";
		return -1;
	}
	if (h->step != H_HCRC) {
		unsigned char b = c;

		h->crc = gz_crc(h->crc, &b, 1);
	}
	switch (h->step) {
	case H_FIXED:
		if (h->got < 3 && c != fixed[h->got]) {
			*why = h->got < 2 ? "not a gzip member header"
					  : "unknown gzip compression method";
			return -1;
		}
		if (h->got == 3) {
			if (c & GZ_FRESERVED) {
				*why = "reserved gzip header flags set";
				return -1;
			}
			h->flg = c;
		}
		if (++h->got < 10)
			return 0;
		break;
	case H_XLEN:
		h->xlen |= (uint32_t)c << (8 * h->got);
		if (++h->got < 2)
			return 0;
		if (h->xlen) {
			h->step = H_EXTRA;
			h->got = 0;
			return 0;
		}
		break;
	case H_EXTRA:
		if (++h->got < h->xlen)
			return 0;
		break;
	case H_NAME:
	case H_COMMENT:
		if (c != 0)
			return 0;
		break;
	case H_HCRC:
		h->hcrc |= (unsigned)c << (8 * h->got);
		if (++h->got < 2)
			return 0;
		if (h->hcrc != (h->crc & 0xffffu)) {
			*why = "gzip header CRC mismatch";
			return -1;
		}
		break;
	case H_DONE:
		return 1;
	}
	h->step = hdr_next(h, h->step);
	h->got = 0;
	return h->step == H_DONE;
}

/* Feeds header bytes from *in: 1 complete, 0 all taken and more due, -1
 * bad. */
static int hdr_feed(struct gz_hdr *h, const unsigned char **in, size_t *len,
		    const char **why)
{
	while (*len) {
		int rc = hdr_byte(h, **in, why);

		++*in;
		--*len;
		if (rc)
			return rc;
	}
	return 0;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ---- the validation pass ------------------------------------------------ */

enum gz_state { S_HEADER, S_DATA, S_TRAILER, S_NEXT, S_NEXT2, S_END };

struct wsnap_gzip {
	z_stream z;
	enum gz_state state;
	struct gz_hdr hdr;
	uint64_t in_pos;     /* input bytes taken */
	uint64_t out_pos;    /* decoded bytes given */
	uint64_t member_in;  /* where the current member's header starts */
	uint64_t member_out; /* its first decoded byte */
	uint32_t crc;	     /* of the member's bytes so far */
	unsigned char trailer[8];
	uint32_t tgot;
	uint64_t used; /* input bytes of the whole members */
	uint64_t members;
	const char *why;
	uint64_t why_at;
	char zmsg[80];
	bool record;   /* keeping the table (not given up) */
	bool finished; /* the table was finished */
	struct wsnap_seek_table table;
	uint64_t last_out; /* the latest point's out */
	unsigned char win[WSNAP_SEEK_WINDOW_MAX];
};

static void gz_give_up(struct wsnap_gzip *g)
{
	g->record = false;
	wsnap_seek_table_release(&g->table);
}

static void gz_point(struct wsnap_gzip *g, const struct wsnap_seek_point *p,
		     const void *win, size_t wlen)
{
	if (wsnap_seek_table_add(&g->table, p, win, wlen) != 0)
		gz_give_up(g);
	else
		g->last_out = p->out;
}

/* A member header starts at in_pos - taken (the magic already taken). */
static void gz_member_start(struct wsnap_gzip *g, uint64_t taken)
{
	g->member_in = g->in_pos - taken;
	g->member_out = g->out_pos;
	g->crc = 0;
	g->state = S_HEADER;
	if (g->record && (g->table.n == 0 || g->out_pos - g->last_out >=
						     WSNAP_SEEK_GZIP_SPACING)) {
		struct wsnap_seek_point p = {.in = g->member_in,
					     .out = g->out_pos,
					     .base = g->out_pos,
					     .flags = WSNAP_SEEK_UNIT_START};

		gz_point(g, &p, NULL, 0);
	}
}

int wsnap_gzip_new(struct wsnap_gzip **out, bool record)
{
	struct wsnap_gzip *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g)
		return -ENOMEM;
	if (inflateInit2(&g->z, -MAX_WBITS) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	g->record = record;
	wsnap_seek_table_init(&g->table, WSNAP_SEEK_GZIP);
	hdr_init(&g->hdr);
	gz_member_start(g, 0);
	*out = g;
	return 0;
}

void wsnap_gzip_free(struct wsnap_gzip *g)
{
	if (!g)
		return;
	inflateEnd(&g->z);
	wsnap_seek_table_release(&g->table);
	free(g);
}

static enum wsnap_gzip_status gz_corrupt(struct wsnap_gzip *g, const char *why,
					 uint64_t at)
{
	g->why = why;
	g->why_at = at;
	return WSNAP_GZIP_CORRUPT;
}

/* At a block boundary after Z_BLOCK: a point, with the window before it. */
static void gz_block_point(struct wsnap_gzip *g)
{
	struct wsnap_seek_point p = {.in = g->in_pos,
				     .out = g->out_pos,
				     .base = g->member_out,
				     .bits = (uint32_t)g->z.data_type & 7,
				     .check = g->crc};
	uInt wlen = 0;

	if (g->out_pos <= g->last_out)
		return;
	if (inflateGetDictionary(&g->z, g->win, &wlen) != Z_OK ||
	    wlen > g->out_pos - g->member_out) {
		gz_give_up(g);
		return;
	}
	gz_point(g, &p, g->win, wlen);
}

/* S_DATA: inflates what can be; returns OK to go on, or the outcome. */
static enum wsnap_gzip_status gz_data(struct wsnap_gzip *g,
				      const unsigned char **in, size_t *in_len,
				      bool in_eof, unsigned char *out,
				      size_t room, size_t *got, bool *stop)
{
	bool due = g->record &&
		   g->out_pos - g->last_out >= WSNAP_SEEK_GZIP_SPACING;
	size_t taken;
	int ret;

	*got = 0;
	if (!room || (!*in_len && !in_eof)) {
		*stop = true;
		return WSNAP_GZIP_OK;
	}
	g->z.next_in = (unsigned char *)*in;
	g->z.avail_in = (uInt)(*in_len > UINT32_MAX ? UINT32_MAX : *in_len);
	g->z.next_out = out;
	g->z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
	ret = inflate(&g->z, due ? Z_BLOCK : Z_NO_FLUSH);
	taken = (size_t)((const unsigned char *)g->z.next_in - *in);
	*got = (size_t)(g->z.next_out - out);
	*in += taken;
	*in_len -= taken;
	g->in_pos += taken;
	g->out_pos += *got;
	if (*got)
		g->crc = gz_crc(g->crc, out, *got);
	switch (ret) {
	case Z_STREAM_END:
		g->state = S_TRAILER;
		g->tgot = 0;
		return WSNAP_GZIP_OK;
	case Z_OK:
		if (due && (g->z.data_type & 128) && !(g->z.data_type & 64))
			gz_block_point(g);
		return WSNAP_GZIP_OK;
	case Z_BUF_ERROR: /* no progress: input or room ran out */
		if (!*in_len && in_eof)
			return WSNAP_GZIP_TRUNCATED;
		*stop = true;
		return WSNAP_GZIP_OK;
	case Z_MEM_ERROR:
		return WSNAP_GZIP_NOMEM;
	default:
		snprintf(g->zmsg, sizeof(g->zmsg), "%s",
			 g->z.msg ? g->z.msg : "bad deflate data");
		return gz_corrupt(g, g->zmsg, g->in_pos);
	}
}

/* S_TRAILER: the member's CRC-32 and length. */
static enum wsnap_gzip_status gz_trailer(struct wsnap_gzip *g,
					 const unsigned char **in,
					 size_t *in_len, bool in_eof,
					 bool *stop)
{
	while (g->tgot < 8 && *in_len) {
		g->trailer[g->tgot++] = **in;
		++*in;
		--*in_len;
		g->in_pos++;
	}
	if (g->tgot < 8) {
		*stop = true;
		return in_eof ? WSNAP_GZIP_TRUNCATED : WSNAP_GZIP_OK;
	}
	if (le32(g->trailer) != g->crc ||
	    le32(g->trailer + 4) != (uint32_t)(g->out_pos - g->member_out)) {
		g->why = "gzip trailer (CRC-32 and length) does not match "
			 "the data";
		g->why_at = g->in_pos - 8;
		return WSNAP_GZIP_TRAILER;
	}
	g->members++;
	g->used = g->in_pos;
	g->state = S_NEXT;
	return WSNAP_GZIP_OK;
}

/* S_NEXT, S_NEXT2: another member's magic, or the end. */
static enum wsnap_gzip_status gz_next(struct wsnap_gzip *g,
				      const unsigned char **in, size_t *in_len,
				      bool in_eof, bool *stop)
{
	static const unsigned char magic[2] = {0x1f, 0x8b};
	const char *why = NULL;
	unsigned i = g->state == S_NEXT ? 0 : 1;

	if (!*in_len) {
		*stop = !in_eof;
		if (in_eof)
			g->state = S_END;
		return WSNAP_GZIP_OK;
	}
	if (**in != magic[i]) {
		g->state = S_END;
		return WSNAP_GZIP_OK;
	}
	++*in;
	--*in_len;
	g->in_pos++;
	if (i == 0) {
		g->state = S_NEXT2;
		return WSNAP_GZIP_OK;
	}
	hdr_init(&g->hdr);
	hdr_byte(&g->hdr, magic[0], &why);
	hdr_byte(&g->hdr, magic[1], &why);
	if (inflateReset(&g->z) != Z_OK)
		return WSNAP_GZIP_NOMEM;
	gz_member_start(g, 2);
	return WSNAP_GZIP_OK;
}

enum wsnap_gzip_status wsnap_gzip_decode(struct wsnap_gzip *g,
					 const unsigned char **in,
					 size_t *in_len, bool in_eof,
					 unsigned char *out, size_t cap,
					 size_t *produced)
{
	enum wsnap_gzip_status st = WSNAP_GZIP_OK;
	bool stop = false;

	*produced = 0;
	while (!stop && st == WSNAP_GZIP_OK) {
		const char *why = NULL;
		size_t before, got;
		int rc;

		switch (g->state) {
		case S_HEADER:
			before = *in_len;
			rc = hdr_feed(&g->hdr, in, in_len, &why);
			g->in_pos += before - *in_len;
			if (rc < 0)
				return gz_corrupt(g, why, g->in_pos - 1);
			if (rc == 0) {
				stop = true;
				if (in_eof)
					st = WSNAP_GZIP_TRUNCATED;
				break;
			}
			g->state = S_DATA;
			break;
		case S_DATA:
			st = gz_data(g, in, in_len, in_eof, out + *produced,
				     cap - *produced, &got, &stop);
			*produced += got;
			break;
		case S_TRAILER:
			st = gz_trailer(g, in, in_len, in_eof, &stop);
			break;
		case S_NEXT:
		case S_NEXT2:
			st = gz_next(g, in, in_len, in_eof, &stop);
			break;
		case S_END:
			if (g->record && !g->finished &&
			    wsnap_seek_table_finish(&g->table, g->used,
						    g->out_pos) != 0)
				gz_give_up(g);
			g->finished = true;
			return *produced ? WSNAP_GZIP_OK : WSNAP_GZIP_END;
		}
	}
	return st;
}

const char *wsnap_gzip_error(const struct wsnap_gzip *g, uint64_t *at)
{
	*at = g->why_at;
	return g->why ? g->why : "bad gzip data";
}

uint64_t wsnap_gzip_in_used(const struct wsnap_gzip *g)
{
	return g->used;
}

uint64_t wsnap_gzip_members(const struct wsnap_gzip *g)
{
	return g->members;
}

struct wsnap_seek_table *wsnap_gzip_take_table(struct wsnap_gzip *g)
{
	struct wsnap_seek_table *t;

	if (g->state != S_END || !g->record || g->table.n == 0)
		return NULL;
	t = wsnap_seek_table_move(&g->table);
	g->record = false;
	return t;
}

/* ---- span reads --------------------------------------------------------- */

/* The compressed bytes of a span, read from the source chunk by chunk. */
struct gz_in {
	struct wsnap_source *src;
	unsigned char *buf;
	const unsigned char *next;
	size_t avail;
	uint64_t pos, limit; /* next offset to read; where the span ends */
};

/* Makes input available: 0, 1 when none is left before the span's end,
 * or a source error. */
static int gz_in_fill(struct gz_in *in)
{
	size_t n;
	int rc;

	if (in->avail)
		return 0;
	if (in->pos >= in->limit)
		return 1;
	n = in->limit - in->pos < GZ_SPAN_CHUNK ? (size_t)(in->limit - in->pos)
						: GZ_SPAN_CHUNK;
	rc = wsnap_source_read(in->src, in->buf, n, in->pos);
	if (rc)
		return rc;
	in->pos += n;
	in->next = in->buf;
	in->avail = n;
	return 0;
}

/* A member's trailer from the input, checked against crc and len. */
static int gz_span_trailer(struct gz_in *in, uint32_t crc, uint64_t len)
{
	unsigned char t[8];
	size_t got = 0;
	int rc;

	while (got < 8) {
		rc = gz_in_fill(in);
		if (rc)
			return rc < 0 ? rc : -EIO;
		t[got++] = *in->next++;
		in->avail--;
	}
	return le32(t) == crc && le32(t + 4) == (uint32_t)len ? 0 : -EIO;
}

/* A member header from the input. */
static int gz_span_header(struct gz_in *in)
{
	const char *why = NULL;
	struct gz_hdr h;
	int rc;

	hdr_init(&h);
	for (;;) {
		rc = gz_in_fill(in);
		if (rc)
			return rc < 0 ? rc : -EIO;
		rc = hdr_feed(&h, &in->next, &in->avail, &why);
		if (rc < 0)
			return -EIO;
		if (rc > 0)
			return 0;
	}
}

/* Starts inflate at point p: the bits of the byte before, the window. */
static int gz_span_prime(const struct wsnap_seek_table *t, size_t i,
			 struct gz_in *in, z_stream *z)
{
	const struct wsnap_seek_point *p = &t->points[i];
	unsigned char win[WSNAP_SEEK_WINDOW_MAX], c;
	int rc, wlen;

	if (p->bits) {
		rc = wsnap_source_read(in->src, &c, 1, p->in - 1);
		if (rc)
			return rc;
		if (inflatePrime(z, (int)p->bits, c >> (8 - p->bits)) != Z_OK)
			return -EIO;
	}
	wlen = wsnap_seek_table_window(t, i, win);
	if (wlen < 0)
		return -EIO;
	if (wlen > 0 && inflateSetDictionary(z, win, (uInt)wlen) != Z_OK)
		return -EIO;
	return 0;
}

/* Compressed bytes inflate has taken so far. */
static uint64_t gz_in_taken(const struct gz_in *in)
{
	return in->pos - in->avail;
}

/*
 * Inflates into out[*done .. need), then on into a byte of scratch, which
 * must stay empty: the span must end exactly where the table says. With
 * next (the following point, inside a member) it must end at a block
 * boundary at next's bit position: returns 0 there. Without, the member
 * must end: returns 1 (its trailer is the caller's). Else an error. crc
 * NULL: no member can end in this span, its CRC-32 is not needed.
 */
static int gz_span_inflate(z_stream *z, struct gz_in *in, unsigned char *out,
			   uint64_t need, uint64_t *done, uint32_t *crc,
			   uint64_t *mlen, const struct wsnap_seek_point *next)
{
	unsigned char scratch;

	for (;;) {
		bool over = *done == need;
		uInt room;
		size_t got;
		int ret, rc;

		/* inflate may finish from the bits it holds: no input is
		 * an error only when it cannot */
		rc = gz_in_fill(in);
		if (rc < 0)
			return rc;
		room = need - *done > UINT32_MAX ? UINT32_MAX
						 : (uInt)(need - *done);
		z->next_in = (unsigned char *)in->next;
		z->avail_in = (uInt)in->avail;
		z->next_out = over ? &scratch : out + *done;
		z->avail_out = over ? 1 : room;
		/* Z_BLOCK: stop at a block end before reading what follows it
		 */
		ret = inflate(z, next ? Z_BLOCK : Z_NO_FLUSH);
		got = (size_t)(z->next_out - (over ? &scratch : out + *done));
		in->avail -= (size_t)(z->next_in - in->next);
		in->next = z->next_in;
		if (over && got)
			return -EIO; /* longer than the table says */
		if (got) {
			if (crc)
				*crc = gz_crc(*crc, out + *done, got);
			*done += got;
			*mlen += got;
		}
		if (ret == Z_STREAM_END) /* a member ended */
			return over && next ? -EIO : 1;
		if (ret == Z_MEM_ERROR)
			return -ENOMEM;
		if ((ret != Z_OK && ret != Z_BUF_ERROR) ||
		    (ret == Z_BUF_ERROR && rc == 1))
			return -EIO; /* bad data, or past the span's end */
		/* the span's bytes are out and inflate stopped at a block
		 * boundary (in this call or the one that filled them) */
		if (next && *done == need && ret == Z_OK &&
		    (z->data_type & 128))
			return gz_in_taken(in) == next->in &&
					       (uint32_t)(z->data_type & 7) ==
						       next->bits
				       ? 0
				       : -EIO;
	}
}

int wsnap_gzip_span(const struct wsnap_seek_table *t, size_t i,
		    struct wsnap_source *src, unsigned char *out)
{
	const struct wsnap_seek_point *p = &t->points[i];
	uint64_t need = wsnap_seek_span_end(t, i) - p->out, done = 0;
	/* the next point inside a member, or NULL: a member ends there */
	const struct wsnap_seek_point *next =
		i + 1 < t->n && !(t->points[i + 1].flags &
				  WSNAP_SEEK_UNIT_START)
			? &t->points[i + 1]
			: NULL;
	struct gz_in in = {.src = src};
	uint32_t crc = p->check;
	uint64_t mlen = p->out - p->base;
	bool header = p->flags & WSNAP_SEEK_UNIT_START, at_next = false;
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	in.pos = p->in; /* byte in - 1 is primed (bits) */
	in.limit = i + 1 < t->n ? t->points[i + 1].in : t->in_size;
	in.buf = malloc(GZ_SPAN_CHUNK);
	if (!in.buf)
		return -ENOMEM;
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
		free(in.buf);
		return -ENOMEM;
	}
	rc = header ? 0 : gz_span_prime(t, i, &in, &z);
	while (rc == 0) {
		if (header) {
			rc = gz_span_header(&in);
			if (rc)
				break;
			if (inflateReset(&z) != Z_OK) {
				rc = -ENOMEM;
				break;
			}
			crc = 0;
			mlen = 0;
			header = false;
		}
		/* a next point in the member of this one: no member ends
		 * in between, so no CRC-32 to check (a fifth of the time) */
		rc = gz_span_inflate(&z, &in, out, need, &done,
				     next && next->base == p->base ? NULL
								   : &crc,
				     &mlen, next);
		at_next = rc == 0;
		if (rc <= 0)
			break;
		/* a member ended: its trailer, then the next member */
		rc = gz_span_trailer(&in, crc, mlen);
		if (rc || done == need)
			break;
		header = true;
	}
	inflateEnd(&z);
	free(in.buf);
	/* exactly the span's bytes, ending where the next point starts */
	if (rc == 0 && (done != need || (next && !at_next) ||
			(!next && gz_in_taken(&in) != in.limit)))
		rc = -EIO;
	return rc;
}
