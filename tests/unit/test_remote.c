/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the parts of core/remote that need no network: response
 * header parsing (Content-Range, numbers, header lines), AWS credentials
 * files, URL labels and argv redaction, chunk planning, and the chunk
 * cache over a fake fetch function (single-flight, read-ahead, errors,
 * its bound), and over pieces on disk (pieces.h): what one cache fetched
 * the next one reads from disk, only the ranges between pieces are
 * fetched, a piece the checker refuses is replaced by the network's
 * bytes. The requests themselves are tested end to end against real
 * servers (tests/e2e/e2e_remote.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "chunks.h"
#include "pieces.h"
#include "remote.h"

static int cr(const char *v, uint64_t *f, uint64_t *l, uint64_t *t)
{
	return wsnap_http_content_range(v, strlen(v), f, l, t);
}

static void test_content_range(void **state)
{
	uint64_t f, l, t;

	assert_int_equal(cr("bytes 0-99/1000", &f, &l, &t), 0);
	assert_int_equal(f, 0);
	assert_int_equal(l, 99);
	assert_int_equal(t, 1000);
	assert_int_equal(cr("BYTES 5-5/6", &f, &l, &t), 0);
	assert_int_equal(cr("bytes 1-2/*", &f, &l, &t), 0);
	assert_true(t == UINT64_MAX);
	/* what a strict parser refuses */
	assert_int_equal(cr("bytes 5-4/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes 0-10/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes -1-4/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes +1-4/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes  1-4/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes 1-4/10 ", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes 1-4", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes */10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("items 1-4/10", &f, &l, &t), -EINVAL);
	assert_int_equal(cr("bytes 0-1/99999999999999999999", &f, &l, &t),
			 -EINVAL);
	assert_int_equal(cr("bytes 0-1/9223372036854775808", &f, &l, &t),
			 -EINVAL);
	assert_int_equal(cr("bytes 0-1/9223372036854775807", &f, &l, &t), 0);
	assert_int_equal(cr("", &f, &l, &t), -EINVAL);
	(void)state;
}

static void test_number_and_header(void **state)
{
	const char *v;
	size_t n;
	uint64_t x;

	assert_int_equal(wsnap_http_number("0", 1, &x), 0);
	assert_int_equal(x, 0);
	assert_int_equal(wsnap_http_number("12a", 3, &x), -EINVAL);
	assert_int_equal(wsnap_http_number("", 0, &x), -EINVAL);
	assert_true(wsnap_http_header("Content-Length:  42 \r\n", 22,
				      "content-length", &v, &n));
	assert_int_equal(n, 2);
	assert_memory_equal(v, "42", 2);
	assert_false(wsnap_http_header("Content-Lengthy: 42\r\n", 21,
				       "content-length", &v, &n));
	assert_false(wsnap_http_header("ETag", 4, "etag", &v, &n));
	assert_true(wsnap_http_header("etag:\r\n", 7, "etag", &v, &n));
	assert_int_equal(n, 0);
	(void)state;
}

static int creds(const char *text, const char *profile,
		 struct wsnap_aws_creds *c, unsigned *line)
{
	return wsnap_aws_creds_parse(text, strlen(text), profile, c, line);
}

static void test_credentials_file(void **state)
{
	static struct wsnap_aws_creds c;
	static char big[WSNAP_AWS_VALUE_MAX + 64];
	unsigned line;

	assert_int_equal(creds("# comment\n[default]\naws_access_key_id = AK\n"
			       "aws_secret_access_key=SK\n\n[other]\n"
			       "aws_access_key_id = AK2\n"
			       "aws_secret_access_key = SK2\n"
			       "aws_session_token = TOK\n",
			       "other", &c, &line),
			 0);
	assert_string_equal(c.key_id, "AK2");
	assert_string_equal(c.secret, "SK2");
	assert_string_equal(c.token, "TOK");
	assert_int_equal(creds("[default]\r\naws_access_key_id=A\r\n"
			       "aws_secret_access_key=S\r\n",
			       "default", &c, &line),
			 0);
	assert_string_equal(c.secret, "S");
	assert_string_equal(c.token, "");
	/* sub-settings under a key are not keys of the profile */
	assert_int_equal(creds("[default]\ns3 =\n  aws_secret_access_key = X\n"
			       "aws_access_key_id=A\n",
			       "default", &c, &line),
			 -ENOENT);
	assert_int_equal(
		creds("[default]\naws_access_key_id=A\n", "default", &c, &line),
		-ENOENT);
	assert_int_equal(creds("[a]\naws_access_key_id=A\n"
			       "aws_secret_access_key=S\n",
			       "default", &c, &line),
			 -ENOENT);
	assert_int_equal(
		creds("[default]\nnot a setting\n", "default", &c, &line),
		-EINVAL);
	assert_int_equal(line, 2);
	assert_int_equal(creds("[default\n", "default", &c, &line), -EINVAL);
	assert_int_equal(creds("  indented first\n", "default", &c, &line),
			 -EINVAL);
	assert_int_equal(
		wsnap_aws_creds_parse("[default]\0x", 11, "default", &c, &line),
		-EINVAL);
	memcpy(big, "[d]\naws_secret_access_key=", 26);
	memset(big + 26, 'x', sizeof(big) - 27);
	assert_int_equal(creds(big, "d", &c, &line), -EINVAL);
	(void)state;
}

static void test_label_and_redact(void **state)
{
	char *l, arg[128];

	l = wsnap_remote_label("https://user:pw@host:8443/a/snap.tar?sig=x#f");
	assert_string_equal(l, "https://host:8443/a/snap.tar");
	free(l);
	l = wsnap_remote_label("s3://bucket/dir/snap.tar");
	assert_string_equal(l, "s3://bucket/dir/snap.tar");
	free(l);
	assert_null(wsnap_remote_label("ftp://host/x"));
	assert_null(wsnap_remote_label("s3://bucket"));
	assert_true(wsnap_remote_is_url("HTTPS://h/x"));
	assert_false(wsnap_remote_is_url("/srv/snap.tar"));

	strcpy(arg, "https://user:pw@host/a?X-Amz-Signature=abc");
	assert_true(wsnap_remote_redact(arg));
	assert_string_equal(arg, "https://*******@host/a?*******************");
	strcpy(arg, "--index=http://u@h/i.wsnapidx");
	assert_true(wsnap_remote_redact(arg));
	assert_string_equal(arg, "--index=http://*@h/i.wsnapidx");
	strcpy(arg, "http://host/a@b/c");
	assert_false(wsnap_remote_redact(arg));
	assert_string_equal(arg, "http://host/a@b/c");
	strcpy(arg, "/srv/snap.tar");
	assert_false(wsnap_remote_redact(arg));
	(void)state;
}

static void test_chunk_plan(void **state)
{
	const uint64_t M = WSNAP_CHUNK, K16 = WSNAP_CHUNK_SMALL;
	uint64_t s, e;

	/* a large read's chunk starts where it does (a digest check's
	 * chunk of a member, then its reads, are one request) */
	wsnap_chunks_plan(3 * M + 5, 10, 10 * M, 1, &s, &e);
	assert_true(s == 3 * M + 5 && e == 4 * M + 5);
	wsnap_chunks_plan(9 * M + 5, 10, 9 * M + 100, 1, &s, &e);
	assert_true(s == 9 * M + 5 && e == 9 * M + 100);
	wsnap_chunks_plan(K16 + 100, 5000, 10 * M, 0, &s, &e);
	assert_true(s == K16 && e == 2 * K16);
	wsnap_chunks_plan(K16 - 10, 20, 10 * M, 0, &s, &e);
	assert_true(s == 0 && e == 2 * K16);
	wsnap_chunks_plan(100, 20, 150, 0, &s, &e);
	assert_true(s == 0 && e == 150);
	(void)state;
}

/* ---- the chunk cache over a fake object ----------------------------- */

struct fake {
	uint64_t size;
	atomic_uint fetches;
	atomic_ullong bytes;
	atomic_int fail; /* fetches left to fail, -1: all */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold;	  /* fetches wait until released */
	unsigned held;	  /* fetches waiting */
	bool hold_half;	  /* ... or once their first half is filled */
	unsigned at_half; /* fetches there */
};

static unsigned char byte_at(uint64_t off)
{
	return (unsigned char)(off * 2654435761u >> 13);
}

static int fake_fetch(void *ctx, void *buf, uint64_t off, size_t len,
		      void (*filled)(void *fctx, size_t n), void *fctx)
{
	struct fake *f = ctx;
	size_t i;
	int left;

	assert_true(off + len <= f->size);
	atomic_fetch_add(&f->fetches, 1);
	atomic_fetch_add(&f->bytes, len);
	pthread_mutex_lock(&f->lock);
	f->held++;
	pthread_cond_broadcast(&f->cond);
	while (f->hold)
		pthread_cond_wait(&f->cond, &f->lock);
	f->held--;
	pthread_mutex_unlock(&f->lock);
	left = atomic_load(&f->fail);
	if (left < 0 || (left > 0 && atomic_compare_exchange_strong(
					     &f->fail, &left, left - 1)))
		return -EIO;
	/* in two halves, the first announced before the second is
	 * written */
	for (i = 0; i < len / 2; i++)
		((unsigned char *)buf)[i] = byte_at(off + i);
	if (filled)
		filled(fctx, len / 2);
	pthread_mutex_lock(&f->lock);
	f->at_half++;
	pthread_cond_broadcast(&f->cond);
	while (f->hold_half)
		pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
	for (; i < len; i++)
		((unsigned char *)buf)[i] = byte_at(off + i);
	if (filled)
		filled(fctx, len);
	return 0;
}

static void fake_init(struct fake *f, uint64_t size)
{
	memset(f, 0, sizeof(*f));
	f->size = size;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
}

static void check_bytes(const unsigned char *buf, size_t len, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != byte_at(off + i))
			fail_msg("byte %zu of a read at %llu differs", i,
				 (unsigned long long)off);
}

/* The bytes are the object's; a small read costs one small fetch, and a
 * second read of it none. */
static void test_chunks_small_reads(void **state)
{
	static unsigned char buf[70000];
	struct wsnap_chunks *c;
	struct fake f;

	fake_init(&f, 50ull << 20);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	assert_int_equal(wsnap_chunks_read(c, buf, 3000, 7ull << 20), 3000);
	check_bytes(buf, 3000, 7ull << 20);
	assert_int_equal(atomic_load(&f.fetches), 1);
	assert_true(atomic_load(&f.bytes) <= 3000 + 2 * WSNAP_CHUNK_SMALL);
	assert_int_equal(wsnap_chunks_read(c, buf, 1000, (7ull << 20) + 500),
			 1000);
	check_bytes(buf, 1000, (7ull << 20) + 500);
	assert_int_equal(atomic_load(&f.fetches), 1);
	/* the end of the object: short, then nothing */
	assert_int_equal(wsnap_chunks_read(c, buf, 100, f.size - 40), 40);
	check_bytes(buf, 40, f.size - 40);
	assert_int_equal(wsnap_chunks_read(c, buf, 100, f.size), 0);
	wsnap_chunks_free(c);
	(void)state;
}

struct reader_arg {
	struct wsnap_chunks *c;
	uint64_t off;
	size_t len;
	ssize_t got;
	unsigned char buf[4096];
};

static void *reader_main(void *p)
{
	struct reader_arg *r = p;

	r->got = wsnap_chunks_read(r->c, r->buf, r->len, r->off);
	return NULL;
}

#define READERS 8

/* Eight threads want the same bytes while the one fetch of them is held:
 * one fetch, and all get the bytes. */
static void test_chunks_single_flight(void **state)
{
	static struct reader_arg r[READERS];
	pthread_t th[READERS];
	struct wsnap_chunks *c;
	struct fake f;
	int i;

	fake_init(&f, 4ull << 20);
	f.hold = true;
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	for (i = 0; i < READERS; i++) {
		r[i].c = c;
		r[i].off = 100000;
		r[i].len = 4000;
		assert_int_equal(
			pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	/* the first fetch has begun (the others wait for it, or have not
	 * looked yet: either way they find its entry) */
	pthread_mutex_lock(&f.lock);
	while (f.held == 0)
		pthread_cond_wait(&f.cond, &f.lock);
	f.hold = false;
	pthread_cond_broadcast(&f.cond);
	pthread_mutex_unlock(&f.lock);
	for (i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(r[i].got, 4000);
		check_bytes(r[i].buf, 4000, 100000);
	}
	assert_int_equal(atomic_load(&f.fetches), 1);
	wsnap_chunks_free(c);
	(void)state;
}

/* A reader of bytes that a fetch in flight has already filled does not
 * wait for the rest: the second reader returns while the fetch is held
 * after its first half (were it to wait, the test would hang). */
static void test_chunks_partial(void **state)
{
	static struct reader_arg a, b;
	struct wsnap_chunks *c;
	pthread_t ta, tb;
	struct fake f;

	fake_init(&f, 1 << 20);
	f.hold_half = true;
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	a.c = b.c = c;
	a.off = 0;
	a.len = 4000; /* fetches [0, 16 KiB) */
	b.off = 10;
	b.len = 100;
	assert_int_equal(pthread_create(&ta, NULL, reader_main, &a), 0);
	pthread_mutex_lock(&f.lock);
	while (f.at_half == 0)
		pthread_cond_wait(&f.cond, &f.lock);
	pthread_mutex_unlock(&f.lock);
	assert_int_equal(pthread_create(&tb, NULL, reader_main, &b), 0);
	pthread_join(tb, NULL);
	assert_int_equal(b.got, 100);
	check_bytes(b.buf, 100, 10);
	pthread_mutex_lock(&f.lock);
	f.hold_half = false;
	pthread_cond_broadcast(&f.cond);
	pthread_mutex_unlock(&f.lock);
	pthread_join(ta, NULL);
	assert_int_equal(a.got, 4000);
	check_bytes(a.buf, 4000, 0);
	assert_int_equal(atomic_load(&f.fetches), 1);
	wsnap_chunks_free(c);
	(void)state;
}

/* A sequential read is served whole and right, through chunks and the
 * read-ahead, and fetches each chunk once. */
static void test_chunks_sequential(void **state)
{
	const size_t step = 128 << 10;
	static unsigned char buf[128 << 10];
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t off;

	fake_init(&f, (20ull << 20) + 12345);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	for (off = 0; off < f.size; off += step) {
		size_t want =
			f.size - off < step ? (size_t)(f.size - off) : step;

		assert_int_equal(wsnap_chunks_read(c, buf, step, off),
				 (ssize_t)want);
		check_bytes(buf, want, off);
	}
	wsnap_chunks_free(c); /* joins the read-ahead */
	/* every chunk once, plus the first small read */
	assert_true(atomic_load(&f.fetches) <= f.size / WSNAP_CHUNK + 2);
	assert_true(atomic_load(&f.bytes) <= f.size + step);
	(void)state;
}

/* A failed fetch is the read's error and is not kept: the next read
 * fetches again. */
static void test_chunks_errors(void **state)
{
	unsigned char buf[100];
	struct wsnap_chunks *c;
	struct fake f;

	fake_init(&f, 1 << 20);
	atomic_store(&f.fail, 1);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	assert_int_equal(wsnap_chunks_read(c, buf, 100, 5), -EIO);
	assert_int_equal(wsnap_chunks_read(c, buf, 100, 5), 100);
	check_bytes(buf, 100, 5);
	assert_int_equal(atomic_load(&f.fetches), 2);
	wsnap_chunks_free(c);
	(void)state;
}

/* Within its budget, the least recently used goes first. */
static void test_chunks_budget(void **state)
{
	static unsigned char buf[WSNAP_CHUNK];
	struct wsnap_chunks *c;
	struct fake f;
	unsigned before;

	fake_init(&f, 16ull << 20);
	assert_int_equal(
		wsnap_chunks_new(f.size, 2 * WSNAP_CHUNK, fake_fetch, &f, &c),
		0);
	assert_int_equal(wsnap_chunks_read(c, buf, WSNAP_CHUNK, 0),
			 WSNAP_CHUNK);
	assert_int_equal(
		wsnap_chunks_read(c, buf, WSNAP_CHUNK, 4 * WSNAP_CHUNK),
		WSNAP_CHUNK);
	assert_int_equal(wsnap_chunks_read(c, buf, 10, 5), 10); /* 0 used */
	assert_int_equal(
		wsnap_chunks_read(c, buf, WSNAP_CHUNK, 8 * WSNAP_CHUNK),
		WSNAP_CHUNK);
	before = atomic_load(&f.fetches);
	assert_int_equal(wsnap_chunks_read(c, buf, 10, 5), 10);
	assert_int_equal(atomic_load(&f.fetches), before); /* still there */
	assert_int_equal(wsnap_chunks_read(c, buf, 10, 4 * WSNAP_CHUNK + 5),
			 10);
	assert_int_equal(atomic_load(&f.fetches), before + 1); /* dropped */
	wsnap_chunks_free(c);
	(void)state;
}

/* A checker of what is fetched: counts, compares with the object,
 * refuses the next refuse entries. */
struct checker {
	atomic_uint calls;
	atomic_ullong bytes;
	atomic_int refuse;
};

static int check_entry(void *ctx, uint64_t off, const void *data, size_t len)
{
	struct checker *k = ctx;
	int left = atomic_load(&k->refuse);

	atomic_fetch_add(&k->calls, 1);
	atomic_fetch_add(&k->bytes, len);
	check_bytes(data, len, off);
	if (left > 0 &&
	    atomic_compare_exchange_strong(&k->refuse, &left, left - 1))
		return -EIO;
	return 0;
}

/* Every entry fetched is checked once, whole, read-ahead included. */
static void test_chunks_check_all(void **state)
{
	static unsigned char buf[128 << 10];
	struct checker k = {0};
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t off;

	fake_init(&f, (12ull << 20) + 777);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_check(c, check_entry, &k);
	for (off = 0; off < f.size; off += sizeof(buf))
		assert_true(wsnap_chunks_read(c, buf, sizeof(buf), off) > 0);
	wsnap_chunks_free(c); /* joins the read-ahead */
	assert_int_equal(atomic_load(&k.calls), atomic_load(&f.fetches));
	assert_int_equal(atomic_load(&k.bytes), atomic_load(&f.bytes));
	(void)state;
}

/* An entry the checker refuses is never served: the read (or fill) that
 * waited for it fails, and the next one fetches again. */
static void test_chunks_check_refused(void **state)
{
	unsigned char buf[100];
	struct checker k = {0};
	struct wsnap_chunks *c;
	struct fake f;

	fake_init(&f, 4 << 20);
	atomic_store(&k.refuse, 2);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_check(c, check_entry, &k);
	assert_int_equal(wsnap_chunks_read(c, buf, 100, 5), -EIO);
	assert_int_equal(wsnap_chunks_fill(c, 100, 5), -EIO);
	assert_int_equal(atomic_load(&f.fetches), 2);
	assert_int_equal(wsnap_chunks_read(c, buf, 100, 5), 100);
	check_bytes(buf, 100, 5);
	assert_int_equal(atomic_load(&f.fetches), 3);
	wsnap_chunks_free(c);
	(void)state;
}

/* Where the checker saw entries start and end. */
struct aligned_checker {
	atomic_uint calls;
	atomic_uint cut; /* entries not on the chunk grid */
	uint64_t size;
	atomic_bool seen[32]; /* chunks seen whole */
};

static int check_aligned(void *ctx, uint64_t off, const void *data, size_t len)
{
	struct aligned_checker *k = ctx;

	uint64_t i;

	atomic_fetch_add(&k->calls, 1);
	if (off % WSNAP_CHUNK || (len % WSNAP_CHUNK && off + len != k->size))
		atomic_fetch_add(&k->cut, 1);
	for (i = (off + WSNAP_CHUNK - 1) / WSNAP_CHUNK;
	     i < 32 && i * WSNAP_CHUNK < off + len; i++)
		if ((i + 1) * WSNAP_CHUNK <= off + len || off + len == k->size)
			atomic_store(&k->seen[i], true);
	(void)data;
	return 0;
}

/* Reads as a sidecar's check and the kernel make them (a fill of each
 * 1 MiB chunk not seen whole yet, then reads of 256 KiB in it, which are
 * the sequential reads once the read-ahead is ahead): every entry, read-ahead
 * included, starts and ends on the grid of the first, so that the check
 * on fill sees each chunk whole (issue 14: the read-ahead ended its last
 * piece where the read ended plus the window, mid-chunk, and the pieces
 * after it cut every chunk in two). */
static void test_chunks_ahead_keeps_grid(void **state)
{
	static unsigned char buf[256 << 10];
	struct aligned_checker k = {.size = (24ull << 20) + 4321};
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t off, at;

	fake_init(&f, k.size);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_check(c, check_aligned, &k);
	for (off = 0; off < f.size; off += WSNAP_CHUNK) {
		size_t n = f.size - off < WSNAP_CHUNK ? (size_t)(f.size - off)
						      : WSNAP_CHUNK;

		if (!atomic_load(&k.seen[off / WSNAP_CHUNK]))
			assert_int_equal(wsnap_chunks_fill(c, n, off), 0);
		for (at = off; at < off + n; at += sizeof(buf)) {
			assert_true(wsnap_chunks_read(c, buf, sizeof(buf), at) >
				    0);
			check_bytes(buf, 16, at);
		}
	}
	wsnap_chunks_free(c);
	assert_true(atomic_load(&k.calls) > 0);
	assert_int_equal(atomic_load(&k.cut), 0);
	(void)state;
}

/* A fill fetches (once) what a read then copies without fetching. */
static void test_chunks_fill(void **state)
{
	static unsigned char buf[WSNAP_CHUNK];
	struct wsnap_chunks *c;
	struct fake f;

	fake_init(&f, 8 << 20);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	assert_int_equal(wsnap_chunks_fill(c, WSNAP_CHUNK, 3 << 20), 0);
	assert_int_equal(wsnap_chunks_fill(c, WSNAP_CHUNK, 3 << 20), 0);
	assert_int_equal(atomic_load(&f.fetches), 1);
	assert_int_equal(wsnap_chunks_read(c, buf, WSNAP_CHUNK, 3 << 20),
			 WSNAP_CHUNK);
	check_bytes(buf, WSNAP_CHUNK, 3 << 20);
	assert_int_equal(atomic_load(&f.fetches), 1);
	wsnap_chunks_free(c);
	(void)state;
}

/* A directory of pieces of the test's own. */
struct piece_dir {
	char path[64];
	int fd;
};

static struct wsnap_pieces *pieces_in(struct piece_dir *d, uint64_t size)
{
	static const unsigned char key[WSNAP_PIECE_KEY] = {7};
	struct wsnap_pieces *p;

	if (!d->path[0]) {
		snprintf(d->path, sizeof(d->path), "/tmp/wsnap-chunks-XXXXXX");
		assert_non_null(mkdtemp(d->path));
		d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(d->fd >= 0);
	}
	assert_int_equal(
		wsnap_pieces_new(d->fd, key, size, 1ull << 30, NULL, &p), 0);
	return p;
}

static void piece_dir_remove(struct piece_dir *d)
{
	char cmd[128];

	close(d->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	assert_int_equal(system(cmd), 0);
}

/* Scattered reads, small and large, through a cache over pieces in d:
 * every byte right; the fetches the fake made. */
static unsigned reads_over(struct piece_dir *d, uint64_t size)
{
	static unsigned char buf[1 << 20];
	static const uint64_t at[] = {5, 3 << 20, (7 << 20) + 100, 100 << 10};
	static const size_t len[] = {3000, 1 << 20, 20000, 1 << 20};
	struct wsnap_pieces *p = pieces_in(d, size);
	struct wsnap_chunks *c;
	struct fake f;
	unsigned i, n;

	fake_init(&f, size);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_store(c, p);
	for (i = 0; i < 4; i++) {
		assert_int_equal(wsnap_chunks_read(c, buf, len[i], at[i]),
				 len[i]);
		check_bytes(buf, len[i], at[i]);
	}
	wsnap_chunks_free(c);
	wsnap_pieces_free(p);
	n = atomic_load(&f.fetches);
	return n;
}

/* What one cache fetched, the next one over the same pieces reads from
 * disk: no fetch at all. */
static void test_chunks_store_again(void **state)
{
	struct piece_dir d = {0};

	assert_true(reads_over(&d, 16 << 20) > 0);
	assert_int_equal(reads_over(&d, 16 << 20), 0);
	piece_dir_remove(&d);
	(void)state;
}

/* A chunk cache over a fake object of size bytes (f) that stores on p. */
static struct wsnap_chunks *stored_cache(struct fake *f, uint64_t size,
					 struct wsnap_pieces *p)
{
	struct wsnap_chunks *c;

	fake_init(f, size);
	assert_int_equal(
		wsnap_chunks_new(f->size, 128 << 20, fake_fetch, f, &c), 0);
	wsnap_chunks_set_store(c, p);
	return c;
}

/* A long sequential run stores its first WSNAP_CHUNK_SEQ_STORE bytes on
 * disk, not the rest: the next cache reading it again fetches only what
 * lies past them (within the read-ahead of the last stored entry); a
 * random read after it is stored again. */
static void test_chunks_store_seq_cutoff(void **state)
{
	static unsigned char buf[1 << 20];
	const uint64_t size = WSNAP_CHUNK_SEQ_STORE + (32u << 20);
	struct piece_dir d = {0};
	struct wsnap_pieces *p = pieces_in(&d, 2 * size);
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t off, bytes;
	unsigned i;

	for (i = 0; i < 2; i++) {
		c = stored_cache(&f, size, p);
		for (off = 0; off < size; off += sizeof(buf)) {
			assert_int_equal(
				wsnap_chunks_read(c, buf, sizeof(buf), off),
				sizeof(buf));
			check_bytes(buf, sizeof(buf), off);
		}
		wsnap_chunks_free(c);
		wsnap_pieces_flush(p);
		bytes = atomic_load(&f.bytes);
		if (i == 0) {
			assert_int_equal(bytes, size);
			continue;
		}
		/* what was stored comes from disk: the first 32 MiB, and the
		 * read-ahead made before the run passed them (at most a
		 * window and a request more); the rest is fetched */
		assert_true(bytes >=
			    size - WSNAP_CHUNK_SEQ_STORE -
				    2 * WSNAP_CHUNK_AHEAD * WSNAP_CHUNK);
		assert_true(bytes <=
			    size - WSNAP_CHUNK_SEQ_STORE + WSNAP_CHUNK);
	}
	/* small reads skipping ahead (files read in the archive's order)
	 * over more than the cutoff: all stored, all from disk next time */
	for (i = 0; i < 2; i++) {
		c = stored_cache(&f, size, p);
		for (off = 4096; off + 4096 <= size; off += 256u << 10) {
			assert_int_equal(wsnap_chunks_read(c, buf, 512, off),
					 512);
			check_bytes(buf, 512, off);
		}
		wsnap_chunks_free(c);
		wsnap_pieces_flush(p);
		if (i == 1)
			assert_int_equal(atomic_load(&f.fetches), 0);
	}
	/* a random read past the cutoff: stored, read from disk next time */
	for (i = 0; i < 2; i++) {
		c = stored_cache(&f, size, p);
		assert_int_equal(wsnap_chunks_read(c, buf, 4096, size - 8192),
				 4096);
		check_bytes(buf, 4096, size - 8192);
		wsnap_chunks_free(c);
		wsnap_pieces_flush(p);
		if (i == 1)
			assert_int_equal(atomic_load(&f.fetches), 0);
	}
	wsnap_pieces_free(p);
	piece_dir_remove(&d);
	(void)state;
}

/* An entry part of which pieces hold fetches only the ranges between
 * them, which are stored: the next read of it fetches nothing. */
static void test_chunks_store_gaps(void **state)
{
	static unsigned char buf[1 << 20], part[256 << 10];
	struct piece_dir d = {0};
	struct wsnap_pieces *p = pieces_in(&d, 4 << 20);
	struct wsnap_chunks *c;
	struct fake f;
	unsigned i;

	for (i = 0; i < sizeof(part); i++)
		part[i] = byte_at((256 << 10) + i);
	wsnap_pieces_put(p, 256 << 10, part, sizeof(part));
	wsnap_pieces_flush(p);
	for (i = 0; i < 2; i++) {
		fake_init(&f, 4 << 20);
		assert_int_equal(
			wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			0);
		wsnap_chunks_set_store(c, p);
		assert_int_equal(wsnap_chunks_read(c, buf, sizeof(buf), 0),
				 sizeof(buf));
		check_bytes(buf, sizeof(buf), 0);
		wsnap_chunks_free(c);
		wsnap_pieces_flush(p);
		/* [0, 256K) and [512K, 1M); then nothing */
		assert_int_equal(atomic_load(&f.fetches), i ? 0 : 2);
		assert_int_equal(atomic_load(&f.bytes), i ? 0 : 768 << 10);
	}
	wsnap_pieces_free(p);
	piece_dir_remove(&d);
	(void)state;
}

static int check_right(void *ctx, uint64_t off, const void *data, size_t len);

static int check_right(void *ctx, uint64_t off, const void *data, size_t len);

/* A fetch that fails beside good pieces fails the read and leaves the
 * pieces alone (only a checker's refusal removes them): the next read
 * fetches the rest only. */
static void test_chunks_store_fetch_error(void **state)
{
	static unsigned char buf[1 << 20], part[16 << 10];
	struct piece_dir d = {0};
	struct wsnap_pieces *p = pieces_in(&d, 4 << 20);
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t next;
	unsigned i;

	for (i = 0; i < sizeof(part); i++)
		part[i] = byte_at(i);
	wsnap_pieces_put(p, 0, part, sizeof(part));
	wsnap_pieces_flush(p);
	fake_init(&f, 4 << 20);
	atomic_store(&f.fail, 1);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_check(c, check_right, NULL);
	wsnap_chunks_set_store(c, p);
	assert_int_equal(wsnap_chunks_read(c, buf, sizeof(buf), 0), -EIO);
	assert_int_equal(wsnap_pieces_get(p, buf, 0, sizeof(part), &next),
			 sizeof(part));
	assert_int_equal(wsnap_chunks_read(c, buf, sizeof(buf), 0),
			 sizeof(buf));
	check_bytes(buf, sizeof(buf), 0);
	assert_int_equal(atomic_load(&f.bytes),
			 2 * (sizeof(buf) - sizeof(part)));
	wsnap_chunks_free(c);
	wsnap_pieces_free(p);
	piece_dir_remove(&d);
	(void)state;
}

/* Readers in threads (and the read-ahead beside them) over pieces: two
 * caches one after the other over the same pieces, and two at once over
 * stores of their own in the same directory (two processes): every byte
 * right; the first cache's pieces serve all of the second's reads. */
static void test_chunks_store_threads(void **state)
{
	static struct reader_arg r[2 * READERS];
	pthread_t th[2 * READERS];
	struct piece_dir d = {0};
	struct wsnap_pieces *p[2];
	struct wsnap_chunks *c[2];
	struct fake f[2];
	int i, round, n;

	for (round = 0; round < 3; round++) {
		n = round == 2 ? 2 : 1;
		for (i = 0; i < n; i++) {
			p[i] = pieces_in(&d, 16 << 20);
			fake_init(&f[i], 16 << 20);
			assert_int_equal(wsnap_chunks_new(f[i].size, 4 << 20,
							  fake_fetch, &f[i],
							  &c[i]),
					 0);
			wsnap_chunks_set_check(c[i], check_right, NULL);
			wsnap_chunks_set_store(c[i], p[i]);
		}
		for (i = 0; i < n * READERS; i++) {
			r[i].c = c[i / READERS];
			r[i].off = (uint64_t)(i % READERS) * (2 << 20) + 777;
			r[i].len = sizeof(r[i].buf);
			assert_int_equal(pthread_create(&th[i], NULL,
							reader_main, &r[i]),
					 0);
		}
		for (i = 0; i < n * READERS; i++) {
			pthread_join(th[i], NULL);
			assert_int_equal(r[i].got, sizeof(r[i].buf));
			check_bytes(r[i].buf, sizeof(r[i].buf), r[i].off);
		}
		for (i = 0; i < n; i++) {
			wsnap_chunks_free(c[i]);
			wsnap_pieces_free(p[i]);
			if (round == 1)
				assert_int_equal(atomic_load(&f[i].fetches), 0);
		}
	}
	piece_dir_remove(&d);
	(void)state;
}

/* Refuses bytes that are not the object's (without failing the test). */
static int check_right(void *ctx, uint64_t off, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	(void)ctx;
	for (i = 0; i < len; i++)
		if (b[i] != byte_at(off + i))
			return -EIO;
	return 0;
}

/* A piece made to look right (its checksum matches wrong bytes) is
 * refused by the checker: never served, the network's bytes are, and
 * they replace it on disk. */
static void test_chunks_store_forged(void **state)
{
	static unsigned char forged[16 << 10], buf[100];
	struct piece_dir d = {0};
	struct wsnap_pieces *p = pieces_in(&d, 4 << 20);
	struct wsnap_chunks *c;
	struct fake f;
	uint64_t next;

	memset(forged, 'x', sizeof(forged));
	wsnap_pieces_put(p, 0, forged, sizeof(forged));
	wsnap_pieces_flush(p);
	fake_init(&f, 4 << 20);
	assert_int_equal(wsnap_chunks_new(f.size, 64 << 20, fake_fetch, &f, &c),
			 0);
	wsnap_chunks_set_check(c, check_right, NULL);
	wsnap_chunks_set_store(c, p);
	assert_int_equal(wsnap_chunks_read(c, buf, sizeof(buf), 5),
			 sizeof(buf));
	check_bytes(buf, sizeof(buf), 5);
	assert_int_equal(atomic_load(&f.fetches), 1);
	wsnap_chunks_free(c);
	wsnap_pieces_free(p);
	p = pieces_in(&d, 4 << 20);
	assert_int_equal(wsnap_pieces_get(p, buf, 5, sizeof(buf), &next),
			 sizeof(buf));
	check_bytes(buf, sizeof(buf), 5);
	wsnap_pieces_free(p);
	piece_dir_remove(&d);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_content_range),
		cmocka_unit_test(test_chunks_store_again),
		cmocka_unit_test(test_chunks_store_seq_cutoff),
		cmocka_unit_test(test_chunks_store_gaps),
		cmocka_unit_test(test_chunks_store_forged),
		cmocka_unit_test(test_chunks_store_threads),
		cmocka_unit_test(test_chunks_store_fetch_error),
		cmocka_unit_test(test_number_and_header),
		cmocka_unit_test(test_credentials_file),
		cmocka_unit_test(test_label_and_redact),
		cmocka_unit_test(test_chunk_plan),
		cmocka_unit_test(test_chunks_small_reads),
		cmocka_unit_test(test_chunks_single_flight),
		cmocka_unit_test(test_chunks_partial),
		cmocka_unit_test(test_chunks_sequential),
		cmocka_unit_test(test_chunks_errors),
		cmocka_unit_test(test_chunks_budget),
		cmocka_unit_test(test_chunks_check_all),
		cmocka_unit_test(test_chunks_check_refused),
		cmocka_unit_test(test_chunks_fill),
		cmocka_unit_test(test_chunks_ahead_keeps_grid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
