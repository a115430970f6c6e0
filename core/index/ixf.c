/* SPDX-License-Identifier: MIT */
/*
 * The index file container (ixf.h).
 *
 * Header, every field a little-endian u64 after the magic:
 *   0 magic "WSNAPIDX", 8 version, 16 kind, 24 abi, 32 nsections,
 *   40 file size, 48 checksum (XXH3-64 of header with this field zero,
 *   then the table), 56 zero.
 * Table entry: type, offset, length, checksum (XXH3-64 of the section).
 */
#include "ixf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fsutil.h"
#include "policy.h"
#include "seek.h"

#define W_BUF_SIZE (1u << 20)

static uint64_t header_sum(const unsigned char *base, uint64_t nsections)
{
	unsigned char h[IXF_HEADER_SIZE + IXF_MAX_SECTIONS * IXF_SECTION_SIZE];
	size_t len = IXF_HEADER_SIZE + (size_t)nsections * IXF_SECTION_SIZE;

	memcpy(h, base, len);
	memset(h + 48, 0, 8);
	return XXH3_64bits(h, len);
}

/* The table: read and checked for tiling; false with *why otherwise. */
static bool read_table(struct ixf_view *v, const unsigned char *b, uint64_t len,
		       const char **why)
{
	uint64_t n, at, i;

	if (len < IXF_HEADER_SIZE || memcmp(b, IXF_MAGIC, 8) != 0) {
		*why = "not an index file";
		return false;
	}
	if (ixf_get64(b + 8) != IXF_VERSION) {
		*why = "other format version";
		return false;
	}
	n = ixf_get64(b + 32);
	if (ixf_get64(b + 40) != len) {
		*why = "truncated";
		return false;
	}
	if (n > IXF_MAX_SECTIONS ||
	    len - IXF_HEADER_SIZE < n * IXF_SECTION_SIZE) {
		*why = "bad section table";
		return false;
	}
	v->base = b;
	v->len = len;
	v->kind = (uint32_t)ixf_get64(b + 16);
	v->abi = (uint32_t)ixf_get64(b + 24);
	v->nsections = (uint32_t)n;
	at = IXF_HEADER_SIZE + n * IXF_SECTION_SIZE;
	for (i = 0; i < n; i++) {
		const unsigned char *e =
			b + IXF_HEADER_SIZE + i * IXF_SECTION_SIZE;
		struct ixf_section *s = &v->sec[i];

		s->type = (uint32_t)ixf_get64(e);
		s->offset = ixf_get64(e + 8);
		s->length = ixf_get64(e + 16);
		s->checksum = ixf_get64(e + 24);
		if (s->offset != at || s->length % 8 || s->length > len - at) {
			*why = "bad section table";
			return false;
		}
		at += s->length;
	}
	if (at != len) {
		*why = "bad section table";
		return false;
	}
	return true;
}

bool ixf_parse(struct ixf_view *v, const void *buf, uint64_t len, uint32_t kind,
	       const char **why)
{
	const unsigned char *b = buf;
	uint32_t i;

	memset(v, 0, sizeof(*v));
	if (!read_table(v, b, len, why))
		return false;
	if (header_sum(b, v->nsections) != ixf_get64(b + 48)) {
		*why = "checksum mismatch";
		return false;
	}
	if (v->kind != kind) {
		*why = "other kind of index file";
		return false;
	}
	for (i = 0; i < v->nsections; i++) {
		const struct ixf_section *s = &v->sec[i];

		if (XXH3_64bits(b + s->offset, s->length) != s->checksum) {
			*why = "checksum mismatch";
			return false;
		}
	}
	return true;
}

const struct ixf_section *ixf_find(const struct ixf_view *v, uint32_t t)
{
	uint32_t i;

	for (i = 0; i < v->nsections; i++)
		if (v->sec[i].type == t)
			return &v->sec[i];
	return NULL;
}

void ixf_seal(void *buf, uint64_t len)
{
	unsigned char *b = buf;
	struct ixf_view v;
	const char *why;
	uint32_t i;

	if (!read_table(&v, b, len, &why))
		return;
	for (i = 0; i < v.nsections; i++)
		ixf_put64(b + IXF_HEADER_SIZE + i * IXF_SECTION_SIZE + 24,
			  XXH3_64bits(b + v.sec[i].offset, v.sec[i].length));
	ixf_put64(b + 48, header_sum(b, v.nsections));
}

/* Writing */

int ixf_writer_init(struct ixf_writer *w, int fd, uint32_t nsections)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->off = IXF_HEADER_SIZE + (uint64_t)nsections * IXF_SECTION_SIZE;
	w->buf = malloc(W_BUF_SIZE);
	w->hash = XXH3_createState();
	if (!w->buf || !w->hash || nsections > IXF_MAX_SECTIONS) {
		ixf_writer_release(w);
		return ENOMEM;
	}
	return 0;
}

void ixf_writer_release(struct ixf_writer *w)
{
	free(w->buf);
	w->buf = NULL;
	if (w->hash)
		XXH3_freeState(w->hash);
	w->hash = NULL;
}

/* pwrite(2) of all len bytes at off: 0 or an errno. */
static int pwrite_all(int fd, const unsigned char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t r;

		WSNAP_RETRY_EINTR(r, pwrite(fd, p, len, (off_t)off));
		if (r <= 0)
			return r < 0 ? errno : EIO;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static void w_flush(struct ixf_writer *w)
{
	if (!w->used || w->error)
		return;
	w->error = pwrite_all(w->fd, w->buf, w->used, w->off);
	w->off += w->used;
	w->used = 0;
}

void ixf_writer_begin(struct ixf_writer *w, uint32_t type)
{
	struct ixf_section *s;

	if (w->error)
		return;
	if (w->n >= IXF_MAX_SECTIONS) {
		w->error = EOVERFLOW;
		return;
	}
	s = &w->sec[w->n];
	s->type = type;
	s->offset = w->off + w->used;
	s->length = 0;
	XXH3_64bits_reset(w->hash);
}

void ixf_writer_put(struct ixf_writer *w, const void *p, size_t len)
{
	const unsigned char *c = p;

	if (w->error)
		return;
	XXH3_64bits_update(w->hash, p, len);
	w->sec[w->n].length += len;
	while (len) {
		size_t k = W_BUF_SIZE - w->used;

		if (k > len)
			k = len;
		memcpy(w->buf + w->used, c, k);
		w->used += k;
		c += k;
		len -= k;
		if (w->used == W_BUF_SIZE)
			w_flush(w);
	}
}

void ixf_writer_end(struct ixf_writer *w)
{
	static const unsigned char zeros[8];
	uint64_t pad;

	if (w->error)
		return;
	pad = (8 - w->sec[w->n].length % 8) % 8;
	ixf_writer_put(w, zeros, (size_t)pad);
	w->sec[w->n].checksum = XXH3_64bits_digest(w->hash);
	w->n++;
}

int ixf_writer_finish(struct ixf_writer *w, uint32_t kind, uint32_t abi)
{
	size_t hlen = IXF_HEADER_SIZE + (size_t)w->n * IXF_SECTION_SIZE;
	unsigned char *h;
	uint32_t i;
	int e;

	w_flush(w);
	e = w->error;
	h = e ? NULL : calloc(1, hlen);
	if (!e && !h)
		e = ENOMEM;
	if (!e && hlen != (w->n ? w->sec[0].offset : w->off))
		e = EINVAL; /* fewer sections than announced */
	if (!e) {
		memcpy(h, IXF_MAGIC, 8);
		ixf_put64(h + 8, IXF_VERSION);
		ixf_put64(h + 16, kind);
		ixf_put64(h + 24, abi);
		ixf_put64(h + 32, w->n);
		ixf_put64(h + 40, w->off);
		for (i = 0; i < w->n; i++) {
			unsigned char *t = h + IXF_HEADER_SIZE +
					   (size_t)i * IXF_SECTION_SIZE;

			ixf_put64(t, w->sec[i].type);
			ixf_put64(t + 8, w->sec[i].offset);
			ixf_put64(t + 16, w->sec[i].length);
			ixf_put64(t + 24, w->sec[i].checksum);
		}
		ixf_put64(h + 48, header_sum(h, w->n));
		e = pwrite_all(w->fd, h, hlen, 0);
	}
	if (!e && ftruncate(w->fd, (off_t)w->off) != 0)
		e = errno;
	free(h);
	ixf_writer_release(w);
	return e;
}

void ixf_writer_section(struct ixf_writer *w, uint32_t type, const void *p,
			size_t len)
{
	ixf_writer_begin(w, type);
	ixf_writer_put(w, p, len);
	ixf_writer_end(w);
}

void ixf_writer_u64s(struct ixf_writer *w, uint32_t type, const uint64_t *f,
		     size_t n)
{
	unsigned char b[8];
	size_t i;

	ixf_writer_begin(w, type);
	for (i = 0; i < n; i++) {
		ixf_put64(b, f[i]);
		ixf_writer_put(w, b, sizeof(b));
	}
	ixf_writer_end(w);
}

const char *const ixf_compressions[IXF_NCOMPRESSIONS] = {
	"none", "gzip", "bzip2", "xz", "zstd", "lz4"};

uint64_t ixf_compression_code(const char *name)
{
	uint64_t i;

	for (i = 0; name && i < IXF_NCOMPRESSIONS; i++)
		if (strcmp(name, ixf_compressions[i]) == 0)
			return i;
	return 0;
}

unsigned char *ixf_policy_bytes(const struct wsnap_policy *p, size_t *len)
{
	size_t n = wsnap_policy_encode(p, NULL, 0);
	unsigned char *b = malloc(n);

	if (b)
		wsnap_policy_encode(p, b, n);
	*len = n;
	return b;
}

static int seek_load(const struct ixf_view *v, uint64_t archive_size,
		     uint64_t stream_size, unsigned flags,
		     struct wsnap_seek_table **out, const char **why)
{
	const struct ixf_section *ps = ixf_find(v, IXF_SEEK);
	const struct ixf_section *ws = ixf_find(v, IXF_SEEK_WINDOWS);
	int rc;

	*out = NULL;
	if (!ps && !ws)
		return 0;
	if (!ps || !ws || ps->length > SIZE_MAX || ws->length > SIZE_MAX) {
		*why = "seek table incomplete";
		return -1;
	}
	rc = wsnap_seek_table_decode(
		ixf_data(v, ps), (size_t)ps->length, ixf_data(v, ws),
		(size_t)ws->length, archive_size, stream_size, flags, out, why);
	if (rc == -ENOMEM)
		*why = "out of memory";
	return rc ? -1 : 0;
}

int wsnap_ixf_seek_load(const struct ixf_view *v, uint64_t archive_size,
			uint64_t stream_size, struct wsnap_seek_table **out,
			const char **why)
{
	return seek_load(v, archive_size, stream_size, 0, out, why);
}

int wsnap_ixf_seek_map(const struct ixf_view *v, uint64_t archive_size,
		       uint64_t stream_size, struct wsnap_seek_table **out,
		       const char **why)
{
	return seek_load(v, archive_size, stream_size,
			 WSNAP_SEEK_BORROW_WINDOWS |
				 WSNAP_SEEK_WINDOWS_IN_FILE_MAP,
			 out, why);
}
