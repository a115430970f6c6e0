/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the restart points of xz and zstd streams (frames.h): what
 * the validation pass records (frames, skippable frames, tiny frames
 * merged, blocks of concatenated xz streams with padding after them (padding
 * between them refused), single-frame and
 * single-block streams that are not read in place), the zstd seekable
 * format's seek table (its parser against hostile tables, a table that
 * disagrees with the frames), the writers pack uses, and the span decoders:
 * random reads from many threads compared byte for byte with the plain
 * tar stream, and spans that do not decode to what they claim (-EIO).
 */
#include <errno.h>
#include <lzma.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <cmocka.h>

#include "frames.h"
#include "seek.h"
#include "reader.h"
#include "stream.h"
#include "support.h"

#define MIB (1u << 20)

/* ---- building archives -------------------------------------------------- */

/* Compressible bytes that differ everywhere (a reader that returns the
 * wrong offset is caught). */
static void fill(unsigned char *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)("abcdefgh\n "[(x >> 16) % 10] ^
				       ((i >> 12) & 7));
	}
}

/* A tar stream of about big + 40 KiB: a small file, a big one, another. */
static unsigned char *make_tar(size_t big, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *d = malloc(big);

	assert_non_null(d);
	fill(d, 30000, 1);
	ts_add_file(a, "a", 0644, d, 30000);
	fill(d, big, 2);
	ts_add_file(a, "big", 0644, d, big);
	fill(d, 9000, 3);
	ts_add_file(a, "c", 0644, d, 9000);
	free(d);
	return ts_archive_finish(a, 1, len);
}

struct membuf {
	unsigned char *p;
	size_t n, cap;
};

static void mb_put(struct membuf *m, const void *p, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2;
		m->p = realloc(m->p, m->cap);
		assert_non_null(m->p);
	}
	memcpy(m->p + m->n, p, n);
	m->n += n;
}

static int mb_out(void *ctx, const void *buf, size_t len)
{
	mb_put(ctx, buf, len);
	return 0;
}

/* data through wsnap's seekable writer (pack's). */
static unsigned char *fw_compress(const unsigned char *data, size_t len,
				  enum wsnap_span_kind kind, size_t piece,
				  size_t *out_len)
{
	struct membuf m = {0};
	struct wsnap_fwriter *w;
	size_t i, step = 100000; /* writes that do not line up with pieces */

	assert_int_equal(wsnap_fwriter_new(&w, kind, piece,
					   kind == WSNAP_SPAN_ZSTD ? 3 : 1,
					   mb_out, &m),
			 0);
	for (i = 0; i < len; i += step)
		assert_int_equal(
			wsnap_fwriter_write(w, data + i,
					    len - i < step ? len - i : step),
			0);
	assert_int_equal(wsnap_fwriter_finish(w), 0);
	assert_int_equal(wsnap_fwriter_bytes(w), m.n);
	wsnap_fwriter_free(w);
	*out_len = m.n;
	return m.p;
}

static const unsigned char skippable[] = {0x53, 0x2a, 0x4d, 0x18, 3,  0,
					  0,	0,    'x',  'y',  'z'};

/* zstd frames of piece bytes each, by hand; with skip, a skippable frame
 * before every frame and after the last. */
static unsigned char *zstd_frames(const unsigned char *data, size_t len,
				  size_t piece, bool skip, size_t *out_len)
{
	struct membuf m = {0};
	size_t i, cap = ZSTD_compressBound(piece);
	unsigned char *f = malloc(cap);

	assert_non_null(f);
	for (i = 0; i < len; i += piece) {
		size_t n = len - i < piece ? len - i : piece;
		size_t c = ZSTD_compress(f, cap, data + i, n, 1);

		assert_false(ZSTD_isError(c));
		if (skip)
			mb_put(&m, skippable, sizeof(skippable));
		mb_put(&m, f, c);
	}
	if (skip)
		mb_put(&m, skippable, sizeof(skippable));
	free(f);
	*out_len = m.n;
	return m.p;
}

/* A reader callback that takes every member. */
static enum wsnap_status take_all(void *ctx, const struct wsnap_raw_member *m,
				  struct wsnap_error *err)
{
	(void)ctx;
	(void)m;
	(void)err;
	return WSNAP_OK;
}

static enum wsnap_status run_spans(const unsigned char *z, size_t zlen,
				   struct wsnap_reader_result *res)
{
	struct wsnap_reader_opts ro = {.want_spans = true};
	struct wsnap_error err;
	int fd = ts_memfd(z, zlen);
	enum wsnap_status st;

	memset(res, 0, sizeof(*res));
	st = wsnap_reader_run(fd, &ro, take_all, NULL, res, &err);
	close(fd);
	return st;
}

static void res_free(struct wsnap_reader_result *res)
{
	free(res->spans);
	res->spans = NULL;
	wsnap_seek_table_free(res->seek);
	res->seek = NULL;
}

/* The spans cover the stream back to back; each but the last at least
 * WSNAP_SPAN_MIN (merging) and none over max. */
static void assert_spans_sound(const struct wsnap_reader_result *res,
			       size_t zlen, size_t max)
{
	size_t i;

	assert_true(wsnap_spans_valid(res->spans, res->nspans, zlen,
				      res->stream_bytes));
	for (i = 0; i < res->nspans; i++) {
		assert_true(res->spans[i].out_len <= max);
		if (i + 1 < res->nspans)
			assert_true(res->spans[i].out_len >= WSNAP_SPAN_MIN);
	}
}

/* ---- a stream read over spans (what a seekable stream does) ------------- */

struct over {
	struct wsnap_source *src;
	const struct wsnap_span *v;
	size_t n;
	enum wsnap_span_kind kind;
	const unsigned char *plain;
	size_t plain_len;
	int failures;
};

static int span_read(const struct over *o, const struct wsnap_span *sp,
		     uint64_t from, void *buf, size_t len)
{
	return o->kind == WSNAP_SPAN_ZSTD
		       ? wsnap_zstd_span_read(o->src, sp, from, buf, len)
		       : wsnap_xz_span_read(o->src, sp, from, buf, len);
}

static int over_read(const struct over *o, uint64_t off, unsigned char *buf,
		     size_t len)
{
	while (len) {
		size_t i = wsnap_spans_find(o->v, o->n, off);
		uint64_t in, n;
		int rc;

		if (i == o->n)
			return -EIO;
		in = off - o->v[i].out_off;
		n = o->v[i].out_len - in < len ? o->v[i].out_len - in : len;
		rc = span_read(o, &o->v[i], in, buf, (size_t)n);
		if (rc)
			return rc;
		off += n;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *reader_thread(void *arg)
{
	struct over *o = arg;
	unsigned char *buf = malloc(400000);
	uint32_t x = (uint32_t)(uintptr_t)buf;
	int i;

	for (i = 0; buf && i < 12; i++) {
		size_t len, off;

		x = x * 1103515245u + 12345u;
		off = (size_t)(((uint64_t)x << 8) % o->plain_len);
		x = x * 1103515245u + 12345u;
		len = 1 + (x >> 8) % 399999;
		if (len > o->plain_len - off)
			len = o->plain_len - off;
		if (over_read(o, off, buf, len) != 0 ||
		    memcmp(buf, o->plain + off, len) != 0)
			__atomic_add_fetch(&o->failures, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

struct through {
	struct wsnap_stream *s;
	const unsigned char *plain;
	size_t plain_len;
	int failures;
};

static void *stream_thread(void *arg)
{
	struct through *t = arg;
	unsigned char *buf = malloc(400000);
	uint32_t x = (uint32_t)(uintptr_t)buf ^ 0x5bd1e995u;
	int i;

	for (i = 0; buf && i < 40; i++) {
		size_t len, off;

		x = x * 1103515245u + 12345u;
		off = (size_t)(((uint64_t)x << 8) % t->plain_len);
		x = x * 1103515245u + 12345u;
		len = 1 + (x >> 8) % 399999;
		if (len > t->plain_len - off)
			len = t->plain_len - off;
		if (wsnap_stream_read(t->s, buf, len, off) != 0 ||
		    memcmp(buf, t->plain + off, len) != 0)
			__atomic_add_fetch(&t->failures, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

/* The seek table the pass handed over, through the seekable stream (its
 * span cache shared by 4 threads), against the plain stream. */
static void check_seekable(const unsigned char *z, size_t zlen,
			   struct wsnap_reader_result *res,
			   const unsigned char *plain, size_t plain_len)
{
	struct through t = {.plain = plain, .plain_len = plain_len};
	struct wsnap_source *src;
	struct wsnap_seek_stats ss;
	pthread_t th[4];
	int i;

	assert_non_null(res->seek);
	assert_int_equal(res->seek->n, res->nspans);
	assert_int_equal(wsnap_source_file(ts_memfd(z, zlen), "z", &src), 0);
	/* a cache of two spans: spans are dropped and decoded again */
	assert_int_equal(wsnap_stream_seekable(src, res->seek, 4 * MIB, &t.s),
			 0);
	res->seek = NULL;
	assert_int_equal(t.s->size, plain_len);
	for (i = 0; i < 4; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, stream_thread, &t), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(t.failures, 0);
	wsnap_stream_seek_stats(t.s, &ss);
	assert_true(ss.spans_decoded > 0);
	wsnap_stream_free(t.s);
}

/* Random reads from 4 threads at once, and the whole stream in order. */
static void check_reads(const unsigned char *z, size_t zlen,
			struct wsnap_reader_result *res,
			enum wsnap_span_kind kind, const unsigned char *plain,
			size_t plain_len)
{
	struct over o = {.v = res->spans,
			 .n = res->nspans,
			 .kind = kind,
			 .plain = plain,
			 .plain_len = plain_len};
	pthread_t th[4];
	unsigned char *all = malloc(plain_len);
	int i;

	assert_int_equal(res->stream_bytes, plain_len);
	assert_int_equal(wsnap_source_file(ts_memfd(z, zlen), "z", &o.src), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, reader_thread, &o), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(o.failures, 0);
	assert_int_equal(over_read(&o, 0, all, plain_len), 0);
	assert_memory_equal(all, plain, plain_len);
	free(all);
	wsnap_source_free(o.src);
	if (res->seekable)
		check_seekable(z, zlen, res, plain, plain_len);
	else
		assert_null(res->seek); /* spilled: no table */
}

/* ---- zstd ---------------------------------------------------------------- */

/* pack's writer: frames of a piece each, the table at the end, which the
 * pass finds to agree; spans are the frames. */
static void test_frames_zstd_frames_and_table(void **state)
{
	size_t len, zlen, i;
	unsigned char *tar = make_tar(9 * MIB, &len);
	unsigned char *z =
		fw_compress(tar, len, WSNAP_SPAN_ZSTD, 2 * MIB, &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_string_equal(res.compression, "zstd");
	assert_int_equal(res.zstd_table, WSNAP_ZSTD_TABLE_AGREES);
	assert_int_equal(res.nspans, (len + 2 * MIB - 1) / (2 * MIB));
	assert_int_equal(res.pieces, res.nspans + 1); /* and the table */
	assert_true(res.seekable);
	for (i = 0; i < res.nspans; i++)
		assert_int_equal(res.spans[i].out_off, i * 2 * MIB);
	assert_int_equal(res.spans[0].in_off, 0);
	assert_spans_sound(&res, zlen, 2 * MIB);
	check_reads(z, zlen, &res, WSNAP_SPAN_ZSTD, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* Skippable frames before, between and after the frames: skipped, and
 * inside the spans (a span read decodes through them). */
static void test_frames_zstd_skippable(void **state)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(5 * MIB, &len);
	unsigned char *z = zstd_frames(tar, len, 1536u << 10, true, &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.zstd_table, WSNAP_ZSTD_TABLE_NONE);
	assert_int_equal(res.nspans, (len + (1536u << 10) - 1) / (1536u << 10));
	/* the leading skippable frame belongs to the first span */
	assert_int_equal(res.spans[0].in_off, 0);
	assert_int_equal(res.spans[0].pieces, 3);
	assert_true(res.seekable);
	assert_spans_sound(&res, zlen, 1536u << 10);
	check_reads(z, zlen, &res, WSNAP_SPAN_ZSTD, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* Frames of 64 KiB are merged into spans of 1 MiB: the table stays small
 * however many frames there are. */
static void test_frames_zstd_small_frames_merge(void **state)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(4 * MIB, &len);
	unsigned char *z = zstd_frames(tar, len, 64u << 10, false, &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.pieces, (len + (64u << 10) - 1) / (64u << 10));
	assert_int_equal(res.nspans, (len + MIB - 1) / MIB);
	assert_int_equal(res.spans[0].out_len, MIB);
	assert_spans_sound(&res, zlen, WSNAP_SPAN_MAX);
	check_reads(z, zlen, &res, WSNAP_SPAN_ZSTD, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* One frame (libarchive's writer, zstd -c): one span, not read in place. */
static void test_frames_zstd_single_frame(void **state)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(3 * MIB, &len);
	unsigned char *z = ts_compress(tar, len, "zstd", &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.nspans, 1);
	assert_false(res.seekable);
	check_reads(z, zlen, &res, WSNAP_SPAN_ZSTD, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* Without want_spans nothing is handed back; from a pipe neither. */
static void test_frames_only_when_asked(void **state)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(3 * MIB, &len);
	unsigned char *z = fw_compress(tar, len, WSNAP_SPAN_ZSTD, MIB, &zlen);
	struct wsnap_reader_opts ro = {.want_spans = true};
	struct wsnap_reader_result res;
	struct wsnap_error err;
	int fd = ts_memfd(z, zlen);

	(void)state;
	assert_int_equal(wsnap_reader_run(fd, NULL, take_all, NULL, &res, &err),
			 WSNAP_OK);
	assert_null(res.spans);
	assert_non_null(res.seek); /* the table is the builder's anyway */
	res_free(&res);
	close(fd);
	fd = ts_pipefd(z, zlen);
	assert_int_equal(wsnap_reader_run(fd, &ro, take_all, NULL, &res, &err),
			 WSNAP_OK);
	assert_null(res.spans);
	assert_null(res.seek);
	assert_false(res.seekable);
	close(fd);
	free(z);
	free(tar);
}

/* A table that lies (an entry's sizes changed, its own frame intact) or
 * breaks the format (a reserved bit) is ignored: the archive is read, and
 * the spans are the frames decoded. */
static void test_frames_zstd_table_disagrees(void **state)
{
	size_t len, zlen, nt = 0;
	unsigned char *tar = make_tar(5 * MIB, &len);
	unsigned char *z = fw_compress(tar, len, WSNAP_SPAN_ZSTD, MIB, &zlen);
	struct wsnap_reader_result res;
	unsigned char *entry;

	(void)state;
	/* the first entry: after the skippable header of the table */
	nt = wsnap_zstd_seek_table_size((len + MIB - 1) / MIB);
	entry = z + zlen - nt + 8;
	entry[0] ^= 1; /* compressed size of frame 0 */
	entry[8] ^= 1; /* and of frame 1: the sum still holds */
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.zstd_table, WSNAP_ZSTD_TABLE_IGNORED);
	assert_int_equal(res.nspans, (len + MIB - 1) / MIB);
	check_reads(z, zlen, &res, WSNAP_SPAN_ZSTD, tar, len);
	res_free(&res);
	entry[0] ^= 1;
	entry[8] ^= 1;
	z[zlen - 5] |= 0x04; /* a reserved bit of the descriptor */
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.zstd_table, WSNAP_ZSTD_TABLE_IGNORED);
	res_free(&res);
	z[zlen - 5] &= (unsigned char)~0x04;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.zstd_table, WSNAP_ZSTD_TABLE_AGREES);
	res_free(&res);
	free(z);
	free(tar);
}

/* ---- xz ------------------------------------------------------------------ */

/* pack's writer: blocks of a piece each, CRC-64. */
static void test_frames_xz_blocks(void **state)
{
	size_t len, zlen, i;
	unsigned char *tar = make_tar(7 * MIB, &len);
	unsigned char *z = fw_compress(tar, len, WSNAP_SPAN_XZ, 2 * MIB, &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_string_equal(res.compression, "xz");
	assert_int_equal(res.nspans, (len + 2 * MIB - 1) / (2 * MIB));
	assert_int_equal(res.pieces, res.nspans);
	assert_true(res.seekable);
	for (i = 0; i < res.nspans; i++) {
		assert_int_equal(res.spans[i].out_off, i * 2 * MIB);
		assert_int_equal(res.spans[i].check, LZMA_CHECK_CRC64);
	}
	assert_int_equal(res.spans[0].in_off, 12); /* the stream header */
	assert_spans_sound(&res, zlen, 2 * MIB);
	check_reads(z, zlen, &res, WSNAP_SPAN_XZ, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* Two concatenated streams, stream padding after them: spans never cross
 * from one stream into the next. Padding between the streams is refused
 * (Python's lzma stops at it), before any span is used. */
static void test_frames_xz_concatenated(void **state)
{
	static const unsigned char pad[8];
	size_t len, alen, blen, half, i;
	unsigned char *tar = make_tar(6 * MIB, &len);
	unsigned char *a, *b;
	struct membuf m = {0}, padded = {0};
	struct wsnap_reader_result res;
	bool crossed = false;

	(void)state;
	half = 3 * MIB + 1234; /* the second stream starts mid-span */
	a = fw_compress(tar, half, WSNAP_SPAN_XZ, 2 * MIB, &alen);
	b = fw_compress(tar + half, len - half, WSNAP_SPAN_XZ, 2 * MIB, &blen);
	mb_put(&m, a, alen);
	mb_put(&m, b, blen);
	mb_put(&m, pad, 8);
	assert_int_equal(run_spans(m.p, m.n, &res), WSNAP_OK);
	/* stream 1: 2 MiB, 1 MiB + 1234; stream 2: 2 MiB blocks */
	assert_int_equal(res.spans[0].out_len, 2 * MIB);
	assert_int_equal(res.spans[1].out_len, MIB + 1234);
	assert_int_equal(res.spans[2].out_off, half);
	assert_true(res.spans[2].in_off > alen);
	for (i = 0; i < res.nspans; i++)
		if (res.spans[i].in_off < alen &&
		    res.spans[i].in_off + res.spans[i].in_len > alen)
			crossed = true;
	assert_false(crossed);
	assert_true(res.seekable);
	assert_spans_sound(&res, m.n, 2 * MIB);
	check_reads(m.p, m.n, &res, WSNAP_SPAN_XZ, tar, len);
	res_free(&res);
	mb_put(&padded, a, alen);
	mb_put(&padded, pad, 4);
	mb_put(&padded, b, blen);
	assert_int_equal(run_spans(padded.p, padded.n, &res), WSNAP_REJECTED);
	res_free(&res);
	free(padded.p);
	free(m.p);
	free(a);
	free(b);
	free(tar);
}

/* One block (libarchive's writer, xz -c): not read in place. */
static void test_frames_xz_single_block(void **state)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(2 * MIB, &len);
	unsigned char *z = ts_compress(tar, len, "xz", &zlen);
	struct wsnap_reader_result res;

	(void)state;
	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_int_equal(res.nspans, 1);
	assert_false(res.seekable);
	check_reads(z, zlen, &res, WSNAP_SPAN_XZ, tar, len);
	res_free(&res);
	free(z);
	free(tar);
}

/* ---- span decoders against lying spans and damaged data ----------------- */

static void check_lies(enum wsnap_span_kind kind)
{
	size_t len, zlen;
	unsigned char *tar = make_tar(3 * MIB, &len);
	unsigned char *z = fw_compress(tar, len, kind, MIB, &zlen);
	struct wsnap_reader_result res;
	struct wsnap_source *src;
	struct wsnap_span sp;
	struct over o = {.kind = kind};
	unsigned char buf[64];
	uint64_t mid;

	assert_int_equal(run_spans(z, zlen, &res), WSNAP_OK);
	assert_true(res.nspans >= 3);
	assert_int_equal(wsnap_source_file(ts_memfd(z, zlen), "z", &src), 0);
	o.src = src;
	sp = res.spans[1];
	assert_int_equal(span_read(&o, &sp, 10, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, tar + sp.out_off + 10, sizeof(buf));
	/* a range outside the span */
	assert_int_equal(span_read(&o, &sp, sp.out_len - 1, buf, 2), -EINVAL);
	/* decodes to more, or to less, than the span says */
	sp.out_len--;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	sp.out_len += 2;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	/* compressed bytes cut short, or running into the next piece */
	sp = res.spans[1];
	sp.in_len--;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	sp.in_len += 2;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	/* starting inside a piece */
	sp = res.spans[1];
	sp.in_off++;
	sp.in_len--;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	/* past the end of the source */
	sp = res.spans[res.nspans - 1];
	sp.in_len += 1000;
	assert_int_equal(span_read(&o, &sp, 0, buf, 1), -EIO);
	wsnap_source_free(src);

	/* a flipped byte in the middle of a piece: its check fails */
	mid = res.spans[1].in_off + res.spans[1].in_len / 2;
	z[mid] ^= 0x10;
	assert_int_equal(wsnap_source_file(ts_memfd(z, zlen), "z", &src), 0);
	o.src = src;
	assert_int_equal(span_read(&o, &res.spans[1], 0, buf, 1), -EIO);
	assert_int_equal(span_read(&o, &res.spans[0], 0, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, tar, sizeof(buf));
	wsnap_source_free(src);
	res_free(&res);
	free(z);
	free(tar);
}

static void test_frames_zstd_span_lies(void **state)
{
	(void)state;
	check_lies(WSNAP_SPAN_ZSTD);
}

static void test_frames_xz_span_lies(void **state)
{
	(void)state;
	check_lies(WSNAP_SPAN_XZ);
}

/* ---- span lists ---------------------------------------------------------- */

/* Empty pieces join a neighbour; a boundary is never crossed; a piece too
 * large marks the stream; the list's checks hold. */
static void test_frames_spans_record(void **state)
{
	struct wsnap_spans s;

	(void)state;
	wsnap_spans_init(&s, WSNAP_SPAN_XZ);
	assert_int_equal(wsnap_spans_piece(&s, 0, 10, 0, 4, false), 0);
	assert_int_equal(wsnap_spans_piece(&s, 10, 10, 100, 4, false), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].in_off, 0); /* took the empty piece */
	assert_int_equal(s.v[0].in_len, 20);
	assert_int_equal(wsnap_spans_piece(&s, 20, 10, 100, 4, false), 0);
	assert_int_equal(s.n, 1); /* small: merged */
	assert_int_equal(wsnap_spans_piece(&s, 50, 10, 100, 4, true), 0);
	assert_int_equal(s.n, 2); /* a new stream */
	assert_int_equal(s.v[1].in_off, 50);
	assert_int_equal(s.v[1].out_off, 200);
	assert_int_equal(
		wsnap_spans_piece(&s, 60, 10, WSNAP_SPAN_MAX, 4, false), 0);
	assert_int_equal(s.n, 3); /* would pass the maximum */
	assert_true(wsnap_spans_valid(s.v, s.n, 70, 300 + WSNAP_SPAN_MAX));
	assert_false(wsnap_spans_valid(s.v, s.n, 69, 300 + WSNAP_SPAN_MAX));
	assert_false(wsnap_spans_valid(s.v, s.n, 70, 301 + WSNAP_SPAN_MAX));
	assert_true(wsnap_spans_seekable(&s));
	assert_int_equal(wsnap_spans_find(s.v, s.n, 199), 0);
	assert_int_equal(wsnap_spans_find(s.v, s.n, 200), 1);
	assert_int_equal(wsnap_spans_find(s.v, s.n, 300 + WSNAP_SPAN_MAX), 3);
	assert_int_equal(
		wsnap_spans_piece(&s, 70, 10, WSNAP_SPAN_MAX + 1, 4, false), 0);
	assert_false(wsnap_spans_seekable(&s));
	s.v[1].in_off = 25; /* overlaps the span before */
	assert_false(wsnap_spans_valid(s.v, 3, 70, 300 + WSNAP_SPAN_MAX));
	wsnap_spans_release(&s);
}

/* ---- the seek table parser ------------------------------------------------
 */

/* A file of frames (sizes c[i], d[i]) and its table, as the writer makes
 * it; the frames' bytes are zeros (only the table is parsed). */
static unsigned char *table_file(const uint32_t *c, const uint32_t *d, size_t n,
				 size_t *len)
{
	size_t t = wsnap_zstd_seek_table_size(n), body = 0, i;
	unsigned char *p;

	for (i = 0; i < n; i++)
		body += c[i];
	p = calloc(1, body + t);
	assert_non_null(p);
	assert_int_equal(wsnap_zstd_seek_table_write(c, d, n, p + body, t), t);
	*len = body + t;
	return p;
}

static int parse(const unsigned char *p, size_t len, size_t *n)
{
	struct wsnap_zstd_seek_entry *e = NULL;
	size_t need;
	int rc = wsnap_zstd_seek_table_parse(p, len, len, &need, &e, n);

	free(e);
	return rc;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void test_frames_seek_table_parse(void **state)
{
	uint32_t c[3] = {100, 50, 7}, d[3] = {1000, 0, 3};
	struct wsnap_zstd_seek_entry *e;
	size_t len, n, need;
	unsigned char *p = table_file(c, d, 3, &len);
	unsigned char *foot = p + len - 9, *tab = p + len - (8 + 24 + 9);

	(void)state;
	assert_int_equal(
		wsnap_zstd_seek_table_parse(p, len, len, &need, &e, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(e[1].in_off, 100);
	assert_int_equal(e[2].in_off, 150);
	assert_int_equal(e[2].out_off, 1000);
	assert_int_equal(e[2].out_len, 3);
	free(e);
	/* only the tail at hand: asks for the table's size */
	assert_int_equal(wsnap_zstd_seek_table_parse(p + len - 20, 20, len,
						     &need, &e, &n),
			 -EAGAIN);
	assert_int_equal(need, 8 + 24 + 9);
	/* no footer */
	assert_int_equal(parse(p, len - 1, &n), -ENOENT);
	assert_int_equal(parse(p, 5, &n), -ENOENT);
	/* a count larger than the file, than the bound, one too many */
	put32(foot, 0xffffffffu);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(foot, WSNAP_ZSTD_SEEKABLE_MAX_FRAMES + 1);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(foot, 4);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(foot, 2); /* the frame size no longer matches */
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(foot, 3);
	/* reserved bits; the checksum flag changes the entry size */
	foot[4] = 0x40;
	assert_int_equal(parse(p, len, &n), -EINVAL);
	foot[4] = 0x80;
	assert_int_equal(parse(p, len, &n), -EINVAL);
	foot[4] = 0x03; /* unused bits are not interpreted */
	assert_int_equal(parse(p, len, &n), 0);
	foot[4] = 0;
	/* the skippable frame's magic and size */
	tab[0] ^= 1;
	assert_int_equal(parse(p, len, &n), -EINVAL);
	tab[0] ^= 1;
	put32(tab + 4, 24 + 9 + 1);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(tab + 4, 24 + 9);
	/* entries that do not add up to the file, or overflow it */
	put32(tab + 8, 101);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(tab + 8, 0xffffffffu);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(tab + 8, 0); /* a frame of no bytes */
	put32(tab + 16, 150);
	assert_int_equal(parse(p, len, &n), -EINVAL);
	put32(tab + 8, 100);
	put32(tab + 16, 50);
	assert_int_equal(parse(p, len, &n), 0);
	/* a file shorter than the tail given */
	assert_int_equal(
		wsnap_zstd_seek_table_parse(p, len, len - 1, &need, &e, &n),
		-EINVAL);
	free(p);
	/* no frames at all: a table of its own */
	p = table_file(NULL, NULL, 0, &len);
	assert_int_equal(parse(p, len, &n), 0);
	assert_int_equal(n, 0);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_zstd_frames_and_table),
		cmocka_unit_test(test_frames_zstd_skippable),
		cmocka_unit_test(test_frames_zstd_small_frames_merge),
		cmocka_unit_test(test_frames_zstd_single_frame),
		cmocka_unit_test(test_frames_only_when_asked),
		cmocka_unit_test(test_frames_zstd_table_disagrees),
		cmocka_unit_test(test_frames_xz_blocks),
		cmocka_unit_test(test_frames_xz_concatenated),
		cmocka_unit_test(test_frames_xz_single_block),
		cmocka_unit_test(test_frames_zstd_span_lies),
		cmocka_unit_test(test_frames_xz_span_lies),
		cmocka_unit_test(test_frames_spans_record),
		cmocka_unit_test(test_frames_seek_table_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
