/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/stream/gzip.c, seek.c and seekstream.c: the gzip
 * decoder of the validation pass (members, trailers, header fields), the
 * seek points it records, the stored form of a table and its checks as
 * hostile input, and the seekable stream: random reads from many threads
 * byte for byte against the plain data, -EIO when the compressed bytes or
 * the table no longer decode to what was validated, or the file changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include "gzip.h"
#include "index.h"
#include "ixf.h"
#include "policy.h"
#include "reader.h"
#include "seek.h"
#include "stream.h"
#include "support.h"

/* ---- data --------------------------------------------------------------- */

/* len bytes of text that compresses about 4:1, the same for every seed. */
static unsigned char *make_data(size_t len, uint32_t seed)
{
	unsigned char *d = malloc(len);
	uint32_t x = seed * 2654435761u + 1;
	size_t i = 0;

	assert_non_null(d);
	while (i < len) {
		char line[64];
		int n;

		x = x * 1103515245u + 12345u;
		n = snprintf(line, sizeof(line), "line %u value %u\n",
			     (unsigned)(i / 17), (x >> 16) % 1000);
		if ((size_t)n > len - i)
			n = (int)(len - i);
		memcpy(d + i, line, (size_t)n);
		i += (size_t)n;
	}
	return d;
}

/* One gzip member of data (zlib's writer), appended to *buf. */
static void add_member(unsigned char **buf, size_t *blen, const void *data,
		       size_t len, int level)
{
	z_stream z;
	size_t cap = deflateBound(NULL, (uLong)len) + 64;

	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY),
			 Z_OK);
	*buf = realloc(*buf, *blen + cap);
	assert_non_null(*buf);
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	z.next_out = *buf + *blen;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*blen += cap - z.avail_out;
	deflateEnd(&z);
}

/* ---- a source over memory (bytes the test may change) ------------------- */

static struct wsnap_source *mem_source(const unsigned char *data, size_t len)
{
	struct wsnap_source *src;

	assert_int_equal(wsnap_source_memory(data, len, &src), 0);
	return src;
}

/* ---- the validation decoder --------------------------------------------- */

struct decoded {
	enum wsnap_gzip_status st;
	unsigned char *out;
	size_t len;
	uint64_t members;
	uint64_t used;
	struct wsnap_seek_table *t;
	const char *why;
	uint64_t at;
};

/* Decodes gz in chunks of chunk bytes (odd sizes cut headers and
 * trailers), recording when asked. */
static void decode(const unsigned char *gz, size_t len, size_t chunk,
		   bool record, struct decoded *d)
{
	struct wsnap_gzip *g;
	size_t pos = 0, cap = 1 << 20;
	unsigned char buf[65536];

	memset(d, 0, sizeof(*d));
	d->out = malloc(cap);
	assert_non_null(d->out);
	assert_int_equal(wsnap_gzip_new(&g, record), 0);
	do {
		size_t n = len - pos < chunk ? len - pos : chunk;
		const unsigned char *in = gz + pos;
		size_t in_len = n, got, calls = 0;
		bool eof = pos + n == len;

		/* with all input given, the decoder reaches an outcome */
		do {
			d->st = wsnap_gzip_decode(g, &in, &in_len, eof, buf,
						  sizeof(buf), &got);
			if (d->len + got > cap) {
				cap = 2 * (d->len + got);
				d->out = realloc(d->out, cap);
				assert_non_null(d->out);
			}
			memcpy(d->out + d->len, buf, got);
			d->len += got;
			assert_true(++calls < 100000000);
		} while (d->st == WSNAP_GZIP_OK && (in_len || got || eof));
		pos += n - in_len;
	} while (d->st == WSNAP_GZIP_OK);
	d->members = wsnap_gzip_members(g);
	d->used = wsnap_gzip_in_used(g);
	if (d->st == WSNAP_GZIP_END)
		d->t = wsnap_gzip_take_table(g);
	if (d->st == WSNAP_GZIP_CORRUPT || d->st == WSNAP_GZIP_TRAILER)
		d->why = wsnap_gzip_error(g, &d->at);
	wsnap_gzip_free(g);
}

static void decoded_release(struct decoded *d)
{
	free(d->out);
	wsnap_seek_table_free(d->t);
}

/* Three members back to back decode to their data, each trailer checked;
 * a bad CRC or length in any member, or a cut, is refused. */
static void test_seek_gzip_members(void **state)
{
	const size_t sizes[3] = {100000, 1, 300000};
	unsigned char *data = make_data(400001, 1), *gz = NULL;
	size_t glen = 0, ends[3], i, chunk;
	const size_t chunks[] = {1, 7, 4096, 1 << 20};
	struct decoded d;

	for (i = 0, chunk = 0; i < 3; chunk += sizes[i], i++) {
		add_member(&gz, &glen, data + chunk, sizes[i], 6);
		ends[i] = glen;
	}
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		decode(gz, glen, chunks[i], i & 1, &d);
		assert_int_equal(d.st, WSNAP_GZIP_END);
		assert_int_equal(d.len, 400001);
		assert_memory_equal(d.out, data, d.len);
		assert_int_equal(d.members, 3);
		assert_int_equal(d.used, glen);
		decoded_release(&d);
	}
	/* each member's CRC (first trailer byte) and ISIZE (last) */
	for (i = 0; i < 3; i++) {
		size_t at[2] = {ends[i] - 8, ends[i] - 1}, k;

		for (k = 0; k < 2; k++) {
			gz[at[k]] ^= 0x10;
			decode(gz, glen, 4096, true, &d);
			assert_int_equal(d.st, WSNAP_GZIP_TRAILER);
			assert_int_equal(d.at, ends[i] - 8);
			assert_string_equal(d.why,
					    "gzip trailer (CRC-32 and length) "
					    "does not match the data");
			decoded_release(&d);
			gz[at[k]] ^= 0x10;
		}
	}
	/* cut inside the second member, inside its trailer */
	decode(gz, ends[0] + 5, 4096, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_TRUNCATED);
	decoded_release(&d);
	decode(gz, ends[2] - 3, 4096, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_TRUNCATED);
	decoded_release(&d);
	/* what follows the last member is not the stream's */
	gz = realloc(gz, glen + 3);
	memcpy(gz + glen, "\0\0x", 3);
	decode(gz, glen + 3, 4096, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_END);
	assert_int_equal(d.used, glen);
	assert_int_equal(d.len, 400001);
	decoded_release(&d);
	free(gz);
	free(data);
}

/* A header with every optional field; bad ones refused with a reason. */
static void test_seek_gzip_header_fields(void **state)
{
	unsigned char *data = make_data(5000, 2), *gz = NULL, *m;
	size_t glen = 0, hlen, mlen;
	unsigned char hdr[64] = {0x1f, 0x8b, 8, 0x1e, 0, 0, 0, 0, 0, 3};
	uLong crc;
	struct decoded d;

	add_member(&gz, &glen, data, 5000, 6);
	/* FEXTRA (2 bytes), FNAME, FCOMMENT, FHCRC in front of the deflate
	 * data of zlib's member (its header is 10 bytes) */
	hlen = 10;
	hdr[hlen++] = 2;
	hdr[hlen++] = 0;
	hdr[hlen++] = 'x';
	hdr[hlen++] = 'y';
	memcpy(hdr + hlen, "name\0comment\0", 13);
	hlen += 13;
	crc = crc32(0, hdr, (uInt)hlen);
	hdr[hlen++] = (unsigned char)crc;
	hdr[hlen++] = (unsigned char)(crc >> 8);
	mlen = hlen + glen - 10;
	m = malloc(mlen);
	assert_non_null(m);
	memcpy(m, hdr, hlen);
	memcpy(m + hlen, gz + 10, glen - 10);
	decode(m, mlen, 3, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_END);
	assert_memory_equal(d.out, data, 5000);
	decoded_release(&d);
	m[hlen - 1] ^= 1; /* FHCRC */
	decode(m, mlen, 3, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_CORRUPT);
	assert_string_equal(d.why, "gzip header CRC mismatch");
	decoded_release(&d);
	m[hlen - 1] ^= 1;
	m[3] |= 0x80; /* a reserved flag */
	decode(m, mlen, 3, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_CORRUPT);
	assert_string_equal(d.why, "reserved gzip header flags set");
	decoded_release(&d);
	m[3] &= 0x7f;
	m[2] = 7; /* not deflate */
	decode(m, mlen, 3, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_CORRUPT);
	assert_string_equal(d.why, "unknown gzip compression method");
	decoded_release(&d);
	free(m);
	/* a name that never ends stops at the bound, not at memory */
	mlen = WSNAP_GZIP_HEADER_MAX + 100;
	m = calloc(1, mlen);
	assert_non_null(m);
	memcpy(m, "\x1f\x8b\x08\x08\0\0\0\0\0\3", 10);
	memset(m + 10, 'n', mlen - 10);
	decode(m, mlen, 65536, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_CORRUPT);
	assert_string_equal(d.why, "gzip member header too long");
	decoded_release(&d);
	free(m);
	free(gz);
	free(data);
}

/* ---- points ------------------------------------------------------------- */

#define BIG (9u << 20)

/* Points every 4 MiB or so, strictly increasing, at block boundaries or
 * member starts, first at 0; a member start needs no window. */
static void test_seek_points_recorded(void **state)
{
	unsigned char *data = make_data(BIG, 3), *gz = NULL;
	size_t glen = 0, i, half = BIG / 2 + 12345;
	struct decoded d;
	const struct wsnap_seek_table *t;

	add_member(&gz, &glen, data, half, 6);
	add_member(&gz, &glen, data + half, BIG - half, 1);
	decode(gz, glen, 100000, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_END);
	t = d.t;
	assert_non_null(t);
	assert_int_equal(t->kind, WSNAP_SEEK_GZIP);
	assert_int_equal(t->stream_size, BIG);
	assert_int_equal(t->in_size, glen);
	assert_true(t->n >= 3 && t->n <= BIG / WSNAP_SEEK_GZIP_SPACING + 2);
	assert_int_equal(t->points[0].in, 0);
	assert_int_equal(t->points[0].out, 0);
	assert_true(t->points[0].flags & WSNAP_SEEK_UNIT_START);
	for (i = 1; i < t->n; i++) {
		const struct wsnap_seek_point *p = &t->points[i];

		assert_true(p->out >=
			    t->points[i - 1].out + WSNAP_SEEK_GZIP_SPACING);
		assert_true(p->in > t->points[i - 1].in);
		if (p->flags & WSNAP_SEEK_UNIT_START) {
			assert_int_equal(p->win_raw, 0);
			assert_int_equal(p->base, p->out);
		} else {
			assert_int_equal(p->win_raw, WSNAP_SEEK_WINDOW_MAX);
			/* stored compactly */
			assert_true(p->win_len < p->win_raw / 2);
		}
		assert_int_equal(p->check,
				 (uint32_t)crc32(0, data + p->base,
						 (uInt)(p->out - p->base)));
	}
	/* without recording there is none */
	decoded_release(&d);
	decode(gz, glen, 100000, false, &d);
	assert_null(d.t);
	decoded_release(&d);
	free(gz);
	free(data);
}

/* ---- the stream --------------------------------------------------------- */

struct fixture {
	unsigned char *data, *gz;
	size_t glen;
	struct wsnap_seek_table *t;
};

/* BIG bytes in three members (the middle one small), and their table. */
static void fixture_make(struct fixture *f)
{
	struct decoded d;
	size_t a = (4u << 20) + 100000, b = 1000;

	memset(f, 0, sizeof(*f));
	f->data = make_data(BIG, 4);
	add_member(&f->gz, &f->glen, f->data, a, 6);
	add_member(&f->gz, &f->glen, f->data + a, b, 9);
	add_member(&f->gz, &f->glen, f->data + a + b, BIG - a - b, 6);
	decode(f->gz, f->glen, 1 << 20, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_END);
	assert_non_null(d.t);
	f->t = d.t;
	d.t = NULL;
	decoded_release(&d);
}

static void fixture_release(struct fixture *f)
{
	wsnap_seek_table_free(f->t);
	free(f->gz);
	free(f->data);
}

static struct wsnap_stream *fixture_stream(struct fixture *f, size_t cache)
{
	struct wsnap_stream *s;
	unsigned char *pts, *copy;
	size_t plen;
	struct wsnap_seek_table *t;
	const char *why = NULL;

	/* through the stored form: what a cache entry gives */
	pts = wsnap_seek_table_encode(f->t, &plen);
	assert_non_null(pts);
	copy = malloc(f->t->windows_len + 1);
	memcpy(copy, f->t->windows, f->t->windows_len);
	assert_int_equal(wsnap_seek_table_decode(pts, plen, copy,
						 f->t->windows_len, f->glen,
						 BIG, 0, &t, &why),
			 0);
	free(pts);
	free(copy);
	assert_int_equal(
		wsnap_stream_seekable(mem_source(f->gz, f->glen), t, cache, &s),
		0);
	assert_int_equal(s->size, BIG);
	return s;
}

/* Reads across spans and members equal the data; sequential reads decode
 * each span once. */
static void test_seek_stream_reads(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	struct wsnap_seek_stats st;
	unsigned char *buf = malloc(BIG);
	uint32_t x = 7;
	size_t i;

	fixture_make(&f);
	s = fixture_stream(&f, 0);
	for (i = 0; i < BIG; i += 131072) {
		size_t n = BIG - i < 131072 ? BIG - i : 131072;

		assert_int_equal(wsnap_stream_read(s, buf + i, n, i), 0);
	}
	assert_memory_equal(buf, f.data, BIG);
	wsnap_stream_seek_stats(s, &st);
	assert_int_equal(st.spans_decoded, f.t->n);
	for (i = 0; i < 200; i++) {
		uint64_t off, len;

		x = x * 1103515245u + 12345u;
		off = x % BIG;
		x = x * 1103515245u + 12345u;
		len = x % (3u << 20);
		if (len > BIG - off)
			len = BIG - off;
		assert_int_equal(wsnap_stream_read(s, buf, len, off), 0);
		assert_memory_equal(buf, f.data + off, len);
	}
	assert_int_equal(s->ops->pread(s, buf, 10, BIG - 4), 4);
	assert_int_equal(s->ops->pread(s, buf, 10, BIG), 0);
	wsnap_stream_free(s);
	free(buf);
	fixture_release(&f);
}

struct reader_arg {
	struct wsnap_stream *s;
	const unsigned char *data;
	uint32_t seed;
	int bad;
};

static void *reader_thread(void *p)
{
	struct reader_arg *a = p;
	unsigned char *buf = malloc(1 << 20);
	uint32_t x = a->seed;
	uint64_t next = 0;
	int i;

	/* odd seeds read on from where they were (read-ahead), the others
	 * at random */
	for (i = 0; i < 60 && buf; i++) {
		uint64_t off, len;

		x = x * 1103515245u + 12345u;
		off = a->seed & 1 ? next % BIG : x % BIG;
		x = x * 1103515245u + 12345u;
		len = 1 + x % (1u << 20);
		if (len > BIG - off)
			len = BIG - off;
		if (wsnap_stream_read(a->s, buf, len, off) != 0 ||
		    memcmp(buf, a->data + off, len) != 0)
			a->bad++;
		next = off + len;
	}
	free(buf);
	return NULL;
}

/* Eight threads reading random ranges (half of them sequential runs, with
 * read-ahead), with a cache that holds one span (every read evicts) and
 * with the default: every byte as the data. */
static void test_seek_stream_threads(void **state)
{
	const size_t caches[2] = {1, 0};
	struct fixture f;
	size_t c;
	int i;

	fixture_make(&f);
	for (c = 0; c < 2; c++) {
		struct wsnap_stream *s = fixture_stream(&f, caches[c]);
		struct reader_arg args[8];
		pthread_t tid[8];
		struct wsnap_seek_stats st;

		for (i = 0; i < 8; i++) {
			args[i] = (struct reader_arg){s, f.data,
						      (uint32_t)i * 77 + 1, 0};
			assert_int_equal(pthread_create(&tid[i], NULL,
							reader_thread,
							&args[i]),
					 0);
		}
		for (i = 0; i < 8; i++) {
			pthread_join(tid[i], NULL);
			assert_int_equal(args[i].bad, 0);
		}
		wsnap_stream_seek_stats(s, &st);
		if (caches[c] == 1) /* only what readers hold is left */
			assert_true(st.cache_bytes <= WSNAP_SEEK_SPAN_MAX);
		wsnap_stream_free(s);
	}
	fixture_release(&f);
}

/* The default span cache: 1% of the decoded size, at least two of the
 * longest spans, at most 64 MiB; -o span_cache= sets it on a live stream. */
static void test_seek_cache_default(void **state)
{
	const uint64_t sizes[3] = {1ull << 30, 2ull << 30, 10ull << 30};
	struct wsnap_seek_table t;
	size_t i, c;

	for (c = 0; c < 3; c++) {
		size_t want = (size_t)(sizes[c] / 100);

		wsnap_seek_table_init(&t, WSNAP_SEEK_GZIP);
		t.n = (size_t)(sizes[c] >> 22);
		t.points = calloc(t.n, sizeof(*t.points));
		assert_non_null(t.points);
		for (i = 0; i < t.n; i++)
			t.points[i].out = (uint64_t)i << 22;
		t.stream_size = sizes[c];
		if (want < (8u << 20))
			want = 8u << 20;
		if (want > WSNAP_SEEK_CACHE_DEFAULT)
			want = WSNAP_SEEK_CACHE_DEFAULT;
		assert_int_equal(wsnap_seek_cache_default(&t), want);
		wsnap_seek_table_release(&t);
	}
}

/* A table decoded with its windows borrowed reads them where they are
 * and leaves them alone (ASan: no free of the caller's bytes); the cache
 * bound set on a live stream drops what is over it at once. */
static void test_seek_borrowed_windows(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	struct wsnap_seek_table *t;
	struct wsnap_seek_stats st;
	unsigned char *pts, *win, *buf = malloc(BIG);
	const char *why = NULL;
	size_t plen, i;

	fixture_make(&f);
	pts = wsnap_seek_table_encode(f.t, &plen);
	win = malloc(f.t->windows_len + 1);
	assert_non_null(pts);
	assert_non_null(win);
	memcpy(win, f.t->windows, f.t->windows_len);
	assert_int_equal(wsnap_seek_table_decode(
				 pts, plen, win, f.t->windows_len, f.glen, BIG,
				 WSNAP_SEEK_BORROW_WINDOWS, &t, &why),
			 0);
	assert_ptr_equal(t->windows, win);
	assert_int_equal(
		wsnap_stream_seekable(mem_source(f.gz, f.glen), t, 0, &s), 0);
	for (i = 0; i < BIG; i += 1u << 20)
		assert_int_equal(wsnap_stream_read(s, buf + i, 1u << 20, i), 0);
	assert_memory_equal(buf, f.data, BIG);
	wsnap_stream_seek_stats(s, &st);
	assert_true(st.cache_bytes > 0);
	assert_true(st.cache_bytes <= wsnap_seek_cache_default(f.t));
	wsnap_stream_seek_set_cache(s, 1);
	wsnap_stream_seek_stats(s, &st);
	assert_int_equal(st.cache_bytes, 0);
	/* still reads, one span at a time */
	assert_int_equal(wsnap_stream_read(s, buf, 4096, BIG - 4096), 0);
	assert_memory_equal(buf, f.data + BIG - 4096, 4096);
	wsnap_stream_free(s);
	/* the windows are still the caller's */
	assert_memory_equal(win, f.t->windows, f.t->windows_len);
	free(win);
	free(pts);
	free(buf);
	fixture_release(&f);
}

/* The resident kB of the mapping of this process that starts at p. */
static long mapping_rss_kb(const void *p)
{
	char line[512], want[32];
	long rss = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' '))
			in = strncmp(line, want, strlen(want)) == 0;
		if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
			break;
	}
	fclose(f);
	return rss;
}

/* Windows borrowed from a read-only file mapping (a cache entry) do not
 * stay resident in the process once decoded, and still read right after
 * their pages were dropped. */
static void test_seek_windows_dropped(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	struct wsnap_seek_table *t;
	unsigned char *pts, *win, *buf = malloc(BIG);
	char path[] = "/tmp/wsnap-test-seek-XXXXXX";
	const char *why = NULL;
	size_t plen, i;
	int fd;

	fixture_make(&f);
	pts = wsnap_seek_table_encode(f.t, &plen);
	assert_non_null(pts);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, f.t->windows, f.t->windows_len),
			 (ssize_t)f.t->windows_len);
	win = mmap(NULL, f.t->windows_len, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(win != MAP_FAILED);
	close(fd);
	assert_int_equal(wsnap_seek_table_decode(
				 pts, plen, win, f.t->windows_len, f.glen, BIG,
				 WSNAP_SEEK_BORROW_WINDOWS |
					 WSNAP_SEEK_WINDOWS_IN_FILE_MAP,
				 &t, &why),
			 0);
	assert_int_equal(
		wsnap_stream_seekable(mem_source(f.gz, f.glen), t, 0, &s), 0);
	/* twice: the second time from pages faulted in again */
	for (int round = 0; round < 2; round++) {
		memset(buf, 0, BIG);
		wsnap_stream_seek_set_cache(s, 1);
		for (i = 0; i < BIG; i += 1u << 20)
			assert_int_equal(
				wsnap_stream_read(s, buf + i, 1u << 20, i), 0);
		assert_memory_equal(buf, f.data, BIG);
		assert_int_equal(mapping_rss_kb(win), 0);
	}
	wsnap_stream_free(s);
	assert_memory_equal(win, f.t->windows, f.t->windows_len);
	munmap(win, f.t->windows_len);
	free(pts);
	free(buf);
	fixture_release(&f);
}

/* A sequential reader gets the next span decoded ahead: every span after
 * the first is claimed for read-ahead once and decoded once; reads at
 * random offsets, and a bound too small for two spans, get none. */
static void test_seek_read_ahead(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	struct wsnap_seek_stats st;
	unsigned char *buf = malloc(BIG);
	size_t i;

	fixture_make(&f);
	assert_true(f.t->n >= 3);
	s = fixture_stream(&f, 0);
	for (i = 0; i < BIG; i += 65536)
		assert_int_equal(wsnap_stream_read(s, buf + i, 65536, i), 0);
	assert_memory_equal(buf, f.data, BIG);
	wsnap_stream_seek_stats(s, &st);
	assert_int_equal(st.spans_ahead, f.t->n - 1);
	assert_int_equal(st.spans_decoded, f.t->n);
	assert_true(st.cache_bytes <= wsnap_seek_cache_default(f.t));
	wsnap_stream_free(s);

	/* far apart: not sequential */
	s = fixture_stream(&f, 0);
	assert_int_equal(wsnap_stream_read(s, buf, 4096, BIG - 8192), 0);
	assert_int_equal(wsnap_stream_read(s, buf, 4096, 0), 0);
	assert_memory_equal(buf, f.data, 4096);
	wsnap_stream_seek_stats(s, &st);
	assert_int_equal(st.spans_ahead, 0);
	wsnap_stream_free(s);

	/* a bound of one byte: only what readers hold, no read-ahead */
	s = fixture_stream(&f, 1);
	for (i = 0; i < BIG; i += 65536)
		assert_int_equal(wsnap_stream_read(s, buf + i, 65536, i), 0);
	assert_memory_equal(buf, f.data, BIG);
	wsnap_stream_seek_stats(s, &st);
	assert_int_equal(st.spans_ahead, 0);
	wsnap_stream_free(s);
	free(buf);
	fixture_release(&f);
}

/* Compressed bytes that no longer decode, a window that does not, a
 * table that says more or fewer bytes: -EIO, never other bytes. */
static void test_seek_stream_eio(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	unsigned char buf[4096];
	size_t mid;
	struct wsnap_seek_point *p;

	fixture_make(&f);
	/* a byte in the middle of the first span's deflate data */
	mid = f.t->points[1].in / 2;
	f.gz[mid] ^= 0xff;
	s = fixture_stream(&f, 0);
	assert_int_equal(s->ops->pread(s, buf, sizeof(buf), 0), -EIO);
	/* other spans still read */
	assert_int_equal(
		wsnap_stream_read(s, buf, sizeof(buf), f.t->points[1].out), 0);
	assert_memory_equal(buf, f.data + f.t->points[1].out, sizeof(buf));
	wsnap_stream_free(s);
	f.gz[mid] ^= 0xff;
	/* the last member's CRC: the span that reaches its end fails */
	f.gz[f.glen - 8] ^= 1;
	s = fixture_stream(&f, 0);
	assert_int_equal(s->ops->pread(s, buf, 1, BIG - 1), -EIO);
	wsnap_stream_free(s);
	f.gz[f.glen - 8] ^= 1;
	/* a point whose window is damaged */
	for (p = &f.t->points[1]; p < f.t->points + f.t->n && !p->win_len; p++)
		;
	assert_true(p < f.t->points + f.t->n && p->win_len > 10);
	f.t->windows[p->win_off + 5] ^= 0x40;
	s = fixture_stream(&f, 0);
	assert_int_equal(s->ops->pread(s, buf, 1, p->out), -EIO);
	wsnap_stream_free(s);
	f.t->windows[p->win_off + 5] ^= 0x40;
	/* a span the table says is one byte longer (and the next one byte
	 * shorter) */
	p->out += 1;
	s = fixture_stream(&f, 0);
	assert_int_equal(s->ops->pread(s, buf, 1, p[-1].out), -EIO);
	assert_int_equal(s->ops->pread(s, buf, 1, p->out), -EIO);
	wsnap_stream_free(s);
	p->out -= 1;
	fixture_release(&f);
}

/* A file source: the stream reads -EIO once the archive is rewritten, also
 * for spans in the cache. */
static void test_seek_stream_file_changed(void **state)
{
	struct fixture f;
	struct wsnap_stream *s;
	struct wsnap_source *src;
	unsigned char buf[100];
	char *dir = ts_tempdir(), *path;
	int fd;

	fixture_make(&f);
	path = ts_write_file(dir, "a.gz", f.gz, f.glen);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(wsnap_source_file(fd, path, &src), 0);
	assert_int_equal(wsnap_stream_seekable(src, f.t, 0, &s), 0);
	f.t = NULL;
	assert_int_equal(wsnap_stream_read(s, buf, sizeof(buf), 1000), 0);
	assert_memory_equal(buf, f.data + 1000, sizeof(buf));
	assert_int_equal(wsnap_stream_check(s), 0);
	/* the same bytes, written again in place */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, f.gz, 10, 0), 10);
	close(fd);
	/* the read does not check (stream.h): the caller's check does, and
	 * stays -EIO, so no span cached from here on is ever served */
	assert_int_equal(wsnap_stream_check(s), -EIO);
	s->ops->pread(s, buf, sizeof(buf), 1000);
	assert_int_equal(wsnap_stream_check(s), -EIO);
	wsnap_stream_free(s);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
	fixture_release(&f);
}

/* ---- one deflate block of any length ------------------------------------ */

struct bitw {
	unsigned char *p;
	size_t len, cap;
	uint32_t acc;
	int n;
};

static void put_bits(struct bitw *w, uint32_t v, int n)
{
	while (n--) {
		w->acc |= (v & 1u) << w->n++;
		v >>= 1;
		if (w->n == 8) {
			if (w->len == w->cap) {
				w->cap = w->cap ? 2 * w->cap : 4096;
				w->p = realloc(w->p, w->cap);
				assert_non_null(w->p);
			}
			w->p[w->len++] = (unsigned char)w->acc;
			w->acc = 0;
			w->n = 0;
		}
	}
}

/* A fixed Huffman code, most significant bit first. */
static void put_code(struct bitw *w, uint32_t code, int n)
{
	while (n--)
		put_bits(w, code >> n, 1);
}

static void put_lit(struct bitw *w, unsigned v)
{
	if (v < 144)
		put_code(w, 0x30 + v, 8);
	else
		put_code(w, 0x190 + (v - 144), 9);
}

/*
 * A gzip member of data in ONE fixed-Huffman block: runs of zeros as copies
 * of 258 bytes from distance 1, so the block is as long as the data (zlib
 * never writes blocks of more than a few MiB).
 */
static unsigned char *one_block_gzip(const unsigned char *data, size_t len,
				     size_t *glen)
{
	struct bitw w = {0};
	static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0,
					      0,    0,	  0, 0, 3};
	size_t i = 0, k;
	uint32_t crc = (uint32_t)crc32(0, data, (uInt)len);

	for (k = 0; k < sizeof(hdr); k++)
		put_bits(&w, hdr[k], 8);
	put_bits(&w, 1, 1); /* BFINAL */
	put_bits(&w, 1, 2); /* BTYPE 01: fixed codes */
	while (i < len) {
		size_t z = 0;

		while (i && data[i - 1] == 0 && i + z < len && z < 258 &&
		       data[i + z] == 0)
			z++;
		if (z == 258) {
			put_code(&w, 0xc5, 8); /* length code 285: 258 */
			put_code(&w, 0, 5);    /* distance code 0: 1 */
			i += 258;
		} else {
			put_lit(&w, data[i++]);
		}
	}
	put_code(&w, 0, 7);		/* end of block */
	put_bits(&w, 0, (8 - w.n) % 8); /* to a byte boundary */
	for (k = 0; k < 4; k++)
		put_bits(&w, (crc >> (8 * k)) & 0xff, 8);
	for (k = 0; k < 4; k++)
		put_bits(&w, ((uint32_t)len >> (8 * k)) & 0xff, 8);
	*glen = w.len;
	return w.p;
}

/* A stream whose points would lie more than WSNAP_SEEK_SPAN_MAX apart (one
 * block of 40 MiB) gets no table: it is spilled, and reads right. */
static void test_seek_span_too_long_spills(void **state)
{
	const size_t zlen = 40u << 20;
	unsigned char *zeros = calloc(1, zlen), *tar, *gz, buf[4096];
	struct ts_archive *a = ts_archive_new();
	struct wsnap_reader_opts opts = {.keep_data = true};
	struct wsnap_policy policy;
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	struct decoded d;
	size_t len, glen;
	uint32_t ino;
	int fd;

	assert_non_null(zeros);
	ts_add_file(a, "zeros", 0644, zeros, zlen);
	ts_add_file(a, "tail", 0644, "tail", 4);
	tar = ts_archive_finish(a, 1, &len);
	gz = one_block_gzip(tar, len, &glen);
	decode(gz, glen, 1 << 20, true, &d);
	assert_int_equal(d.st, WSNAP_GZIP_END);
	assert_int_equal(d.len, len);
	assert_memory_equal(d.out, tar, len);
	assert_null(d.t); /* given up */
	decoded_release(&d);
	fd = ts_memfd(gz, glen);
	wsnap_policy_init(&policy);
	assert_int_equal(wsnap_index_build(&idx, fd, &policy, &opts, &err),
			 WSNAP_OK);
	/* a descriptor (the spill), not a stream */
	assert_true(wsnap_index_data_fd(idx) >= 0);
	ino = wsnap_index_lookup(idx, "tail", 4);
	assert_int_not_equal(ino, 0);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "tail", 4);
	ino = wsnap_index_lookup(idx, "zeros", 5);
	assert_int_equal(
		wsnap_index_pread(idx, ino, buf, sizeof(buf), zlen - 100), 100);
	assert_memory_equal(buf, zeros, 100);
	wsnap_index_free(idx);
	wsnap_policy_release(&policy);
	close(fd);
	free(gz);
	free(tar);
	free(zeros);
}

/* ---- hostile stored tables ---------------------------------------------- */

struct stored {
	unsigned char *pts, *win;
	size_t plen, wlen;
};

static void stored_of(const struct wsnap_seek_table *t, struct stored *s)
{
	s->pts = wsnap_seek_table_encode(t, &s->plen);
	assert_non_null(s->pts);
	s->wlen = t->windows_len;
	s->win = malloc(s->wlen + 1);
	memcpy(s->win, t->windows, s->wlen);
}

static int stored_decode(const struct stored *s, uint64_t archive,
			 uint64_t stream)
{
	struct wsnap_seek_table *t = NULL;
	const char *why = NULL;
	int rc = wsnap_seek_table_decode(s->pts, s->plen, s->win, s->wlen,
					 archive, stream, 0, &t, &why);

	if (rc == 0)
		wsnap_seek_table_free(t);
	else
		assert_non_null(why);
	return rc;
}

/* Field k (u64 index) of the stored points set to v, decoded, restored. */
static int with_field(struct stored *s, size_t k, uint64_t v, uint64_t archive)
{
	uint64_t old = ixf_get64(s->pts + 8 * k);
	int rc;

	ixf_put64(s->pts + 8 * k, v);
	rc = stored_decode(s, archive, BIG);
	ixf_put64(s->pts + 8 * k, old);
	return rc;
}

#define PT(i, field)                                                           \
	(WSNAP_SEEK_HEADER_FIELDS + (i)*WSNAP_SEEK_POINT_FIELDS + (field))

/* Every invariant of seek.h is checked on a stored table. */
static void test_seek_table_hostile(void **state)
{
	struct fixture f;
	struct stored s;
	uint64_t a;
	size_t n;

	fixture_make(&f);
	a = f.glen;
	n = f.t->n;
	assert_true(n >= 3);
	stored_of(f.t, &s);
	assert_int_equal(stored_decode(&s, a, BIG), 0);
	/* sizes: the stream's, the archive's */
	assert_int_equal(stored_decode(&s, a, BIG - 1), -EINVAL);
	assert_int_equal(stored_decode(&s, a - 1, BIG), -EINVAL);
	/* header: kind, a count larger than the bytes, reserved */
	assert_int_equal(with_field(&s, 0, 0, a), -EINVAL);
	assert_int_equal(with_field(&s, 0, 9, a), -EINVAL);
	assert_int_equal(with_field(&s, 1, UINT64_MAX, a), -EINVAL);
	assert_int_equal(with_field(&s, 1, n + 1, a), -EINVAL);
	assert_int_equal(with_field(&s, 1, 0, a), -EINVAL);
	assert_int_equal(with_field(&s, 4, s.wlen + 1, a), -EINVAL);
	assert_int_equal(with_field(&s, 5, 1, a), -EINVAL);
	/* the first point at 0, a member start */
	assert_int_equal(with_field(&s, PT(0, 0), 1, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(0, 6), 0, a), -EINVAL);
	/* offsets in order and inside the sizes */
	assert_int_equal(with_field(&s, PT(2, 0),
				    ixf_get64(s.pts + 8 * PT(1, 0)) - 1, a),
			 -EINVAL);
	assert_int_equal(
		with_field(&s, PT(2, 1), ixf_get64(s.pts + 8 * PT(1, 1)), a),
		-EINVAL);
	assert_int_equal(with_field(&s, PT(n - 1, 0), a, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(n - 1, 1), BIG, a), -EINVAL);
	/* a span past the bounds */
	assert_int_equal(
		with_field(&s, PT(1, 1), WSNAP_SEEK_SPAN_MAX + 1ull, a),
		-EINVAL);
	/* base after out, windows misplaced or too large, bits > 7 */
	assert_int_equal(with_field(&s, PT(1, 2), BIG, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 3), 1, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 5),
				    ixf_get64(s.pts + 8 * PT(1, 5)) +
					    (1ull << 32) * 40000,
				    a),
			 -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 5), UINT32_MAX, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 6), 8, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 6), 1ull << 33, a), -EINVAL);
	assert_int_equal(with_field(&s, PT(1, 7), 1ull << 32, a), -EINVAL);
	/* gzip has no aux */
	assert_int_equal(with_field(&s, PT(1, 4), 1, a), -EINVAL);
	/* truncated sections */
	s.plen -= 8;
	assert_int_equal(stored_decode(&s, a, BIG), -EINVAL);
	s.plen = 8;
	assert_int_equal(stored_decode(&s, a, BIG), -EINVAL);
	free(s.pts);
	free(s.win);
	fixture_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seek_gzip_members),
		cmocka_unit_test(test_seek_gzip_header_fields),
		cmocka_unit_test(test_seek_points_recorded),
		cmocka_unit_test(test_seek_stream_reads),
		cmocka_unit_test(test_seek_stream_threads),
		cmocka_unit_test(test_seek_cache_default),
		cmocka_unit_test(test_seek_borrowed_windows),
		cmocka_unit_test(test_seek_windows_dropped),
		cmocka_unit_test(test_seek_read_ahead),
		cmocka_unit_test(test_seek_stream_eio),
		cmocka_unit_test(test_seek_stream_file_changed),
		cmocka_unit_test(test_seek_table_hostile),
		cmocka_unit_test(test_seek_span_too_long_spills),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
