/* SPDX-License-Identifier: MIT */
/*
 * The seekable stream (seek.h): the decoded bytes of a compressed source,
 * served span by span from a seek table through a cache of decoded spans
 * shared by every thread.
 *
 * Invariants:
 *  - the cache's entries are in a hash by span number; an entry is either
 *    being decoded (by the one thread that created it, without the lock:
 *    others wanting that span wait on the condition) or ready, in the LRU
 *    list; a failed decode removes its entry, so a later read tries again
 *    and fails again, never serves other bytes;
 *  - held counts the bytes of every entry, ready or being decoded (a
 *    decode reserves its span's length before it allocates); whenever it
 *    passes max, the least recently used ready entries that no reader
 *    holds are freed. Entries held by readers are never freed under them
 *    (refs), so the memory is max, or more only by the spans threads are
 *    reading or decoding at that moment;
 *  - a span's bytes are a mapping of their own (span_alloc), so that a
 *    span dropped is memory given back, not a hole in the heap;
 *  - the source's identity is not checked here but by whoever serves the
 *    bytes, before and after (stream.h; wsnap_index_pread): a span decoded
 *    while the archive changed is either a decode error (-EIO, not cached)
 *    or cached, and then never served, since every later check fails.
 */
#include "seek.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "frames.h"
#include "gzip.h"
#include "stream.h"

/* The span decoder of each kind (xz and zstd add theirs here). */
static const wsnap_seek_span_fn seek_kinds[WSNAP_SEEK_NKINDS] = {
	[WSNAP_SEEK_GZIP] = wsnap_gzip_span,
	[WSNAP_SEEK_XZ] = wsnap_seek_xz_span,
	[WSNAP_SEEK_ZSTD] = wsnap_seek_zstd_span,
};

#define SS_BUCKETS 256u

struct span {
	size_t idx;
	unsigned char *data;
	size_t len;
	bool ready;
	unsigned refs;
	struct span *hnext;	  /* hash chain */
	struct span *prev, *next; /* LRU list, most recent first (ready) */
};

struct seek_stream {
	struct wsnap_stream base;
	struct wsnap_source *src;
	struct wsnap_seek_table *t;
	wsnap_seek_span_fn decode;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct span *hash[SS_BUCKETS];
	struct span *lru_head, *lru_tail;
	size_t held, max;
	uint64_t decoded, hits;
};

static struct span **ss_slot(struct seek_stream *s, size_t idx)
{
	struct span **pp = &s->hash[idx % SS_BUCKETS];

	while (*pp && (*pp)->idx != idx)
		pp = &(*pp)->hnext;
	return pp;
}

static void lru_unlink(struct seek_stream *s, struct span *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct seek_stream *s, struct span *e)
{
	e->prev = NULL;
	e->next = s->lru_head;
	if (s->lru_head)
		s->lru_head->prev = e;
	s->lru_head = e;
	if (!s->lru_tail)
		s->lru_tail = e;
}

static void ss_remove(struct seek_stream *s, struct span *e)
{
	struct span **pp = ss_slot(s, e->idx);

	if (*pp == e)
		*pp = e->hnext;
}

static unsigned char *span_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void span_free(unsigned char *p, size_t len)
{
	if (p)
		munmap(p, len);
}

/* Frees the least recently used entries nobody holds while over max. */
static void ss_evict(struct seek_stream *s)
{
	struct span *e = s->lru_tail;

	while (e && s->held > s->max) {
		struct span *prev = e->prev;

		if (!e->refs) {
			lru_unlink(s, e);
			ss_remove(s, e);
			s->held -= e->len;
			span_free(e->data, e->len);
			free(e);
		}
		e = prev;
	}
}

/* Span idx, ready and held (release with ss_put); or an error. */
static int ss_get(struct seek_stream *s, size_t idx, struct span **out)
{
	const struct wsnap_seek_table *t = s->t;
	struct span *e, **pp;
	unsigned char *buf;
	size_t len;
	int rc;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		pp = ss_slot(s, idx);
		e = *pp;
		if (!e)
			break;
		if (e->ready) {
			e->refs++;
			lru_unlink(s, e);
			lru_push(s, e);
			s->hits++;
			pthread_mutex_unlock(&s->lock);
			*out = e;
			return 0;
		}
		pthread_cond_wait(&s->cond, &s->lock);
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	e->idx = idx;
	e->refs = 1;
	*pp = e;
	/* room first: the bound holds while the span is decoded */
	len = (size_t)(wsnap_seek_span_end(t, idx) - t->points[idx].out);
	s->held += len;
	ss_evict(s);
	pthread_mutex_unlock(&s->lock);

	/* decoded without the lock: others wait for this span only */
	buf = span_alloc(len);
	rc = buf ? s->decode(t, idx, s->src, buf) : -ENOMEM;

	pthread_mutex_lock(&s->lock);
	if (rc) {
		ss_remove(s, e);
		s->held -= len;
		free(e);
		span_free(buf, len);
	} else {
		e->data = buf;
		e->len = len;
		e->ready = true;
		lru_push(s, e);
		s->decoded++;
		*out = e;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void ss_put(struct seek_stream *s, struct span *e)
{
	pthread_mutex_lock(&s->lock);
	e->refs--;
	ss_evict(s);
	pthread_mutex_unlock(&s->lock);
}

static int ss_check(struct wsnap_stream *st)
{
	struct seek_stream *s = (struct seek_stream *)st;

	return s->src->ops->check(s->src);
}

static ssize_t ss_pread(struct wsnap_stream *st, void *buf, size_t len,
			uint64_t off)
{
	struct seek_stream *s = (struct seek_stream *)st;
	const struct wsnap_seek_table *t = s->t;
	size_t done = 0;
	int rc;

	if (off >= t->stream_size)
		return 0;
	if (len > t->stream_size - off)
		len = (size_t)(t->stream_size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t at = off + done;
		size_t i = wsnap_seek_table_find(t, at), n;
		uint64_t start = t->points[i].out;
		struct span *e;

		rc = ss_get(s, i, &e);
		if (rc)
			return rc;
		n = e->len - (size_t)(at - start);
		if (n > len - done)
			n = len - done;
		memcpy((char *)buf + done, e->data + (at - start), n);
		ss_put(s, e);
		done += n;
	}
	return (ssize_t)done;
}

static void ss_destroy(struct wsnap_stream *st)
{
	struct seek_stream *s = (struct seek_stream *)st;
	struct span *e, *next;
	size_t i;

	for (i = 0; i < SS_BUCKETS; i++)
		for (e = s->hash[i]; e; e = next) {
			next = e->hnext;
			span_free(e->data, e->len);
			free(e);
		}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	wsnap_seek_table_free(s->t);
	wsnap_source_free(s->src);
	free(s);
}

static const struct wsnap_stream_ops seek_ops = {
	.pread = ss_pread,
	.check = ss_check,
	.destroy = ss_destroy,
};

size_t wsnap_seek_cache_default(const struct wsnap_seek_table *t)
{
	uint64_t longest = 0, share = t->stream_size / WSNAP_SEEK_CACHE_SHARE;
	size_t i;

	for (i = 0; i < t->n; i++) {
		uint64_t len = wsnap_seek_span_end(t, i) - t->points[i].out;

		if (len > longest)
			longest = len;
	}
	/* spans are at most WSNAP_SEEK_SPAN_MAX: two fit any size_t */
	if (share > WSNAP_SEEK_CACHE_DEFAULT)
		share = WSNAP_SEEK_CACHE_DEFAULT;
	if (share < 2 * longest)
		share = 2 * longest;
	return (size_t)share;
}

int wsnap_stream_seekable(struct wsnap_source *src, struct wsnap_seek_table *t,
			  size_t cache_bytes, struct wsnap_stream **out)
{
	struct seek_stream *s;

	*out = NULL;
	if (t->kind < 1 || t->kind >= WSNAP_SEEK_NKINDS ||
	    !seek_kinds[t->kind] || t->n == 0 || t->in_size > src->size) {
		wsnap_seek_table_free(t);
		wsnap_source_free(src);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		wsnap_seek_table_free(t);
		wsnap_source_free(src);
		return -ENOMEM;
	}
	s->base.ops = &seek_ops;
	s->base.size = t->stream_size;
	s->src = src;
	s->t = t;
	s->decode = seek_kinds[t->kind];
	s->max = cache_bytes ? cache_bytes : wsnap_seek_cache_default(t);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	*out = &s->base;
	return 0;
}

void wsnap_stream_seek_set_cache(struct wsnap_stream *st, size_t cache_bytes)
{
	struct seek_stream *s = (struct seek_stream *)st;

	if (!st || st->ops != &seek_ops)
		return;
	pthread_mutex_lock(&s->lock);
	s->max = cache_bytes ? cache_bytes : wsnap_seek_cache_default(s->t);
	ss_evict(s);
	pthread_mutex_unlock(&s->lock);
}

const struct wsnap_seek_table *
wsnap_stream_seek_table(const struct wsnap_stream *s)
{
	return s && s->ops == &seek_ops ? ((const struct seek_stream *)s)->t
					: NULL;
}

void wsnap_stream_seek_stats(struct wsnap_stream *st,
			     struct wsnap_seek_stats *out)
{
	struct seek_stream *s = (struct seek_stream *)st;

	memset(out, 0, sizeof(*out));
	if (!st || st->ops != &seek_ops)
		return;
	pthread_mutex_lock(&s->lock);
	out->spans_decoded = s->decoded;
	out->cache_hits = s->hits;
	out->cache_bytes = s->held;
	pthread_mutex_unlock(&s->lock);
}
