/* SPDX-License-Identifier: MIT */
/*
 * The seekable stream (seek.h): the decoded bytes of a compressed source,
 * served span by span from a seek table through a cache of decoded spans
 * shared by every thread.
 *
 * Invariants:
 *  - the cache's entries are in a hash by span number; an entry is queued
 *    (claimed for read-ahead, in the queue, not started), being decoded
 *    (by exactly one thread, without the lock: others wanting that span
 *    wait on cond), or ready, in the LRU list. A reader that finds its
 *    span queued takes it from the queue and decodes it itself. A failed
 *    decode removes its entry, so a later read tries again and fails
 *    again, never serves other bytes;
 *  - read-ahead: a read of SS_SEQ_LEN or more, or one that starts at most
 *    SS_SEQ_SLACK past the end of the previous one, is sequential; it claims up
 * to SS_AHEAD of the spans after its own for one read-ahead thread per stream
 * (started on first use, stopped and joined by destroy), only while they fit in
 * max once spans outside [i, i + SS_AHEAD] that nobody holds are dropped
 *    (ss_room_ahead): read-ahead never evicts the span read, one in use
 *    or one decoded ahead, and under memory pressure (a bound of fewer
 *    than two spans, many readers) there is none. At most SS_AHEAD spans
 *    are queued at a time;
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
/* Most spans decoded ahead of a sequential reader at once. */
#define SS_AHEAD 2u
/* A read counts as sequential when it starts at most this far past where
 * the previous read of the stream ended, and not before that one began
 * (the kernel's read-ahead sends neighbouring requests at once, in any
 * order), or when it is at least SS_SEQ_LEN long: the kernel asks that
 * much only of a file read in large pieces or read ahead (dd bs=1M, cat),
 * not for a small pread at a random offset, and waiting for the second
 * request would leave the first span's decode without a second core.
 * Nothing is decoded ahead over a source that fetches (a remote object:
 * stream.h), which reads ahead itself. */
#define SS_SEQ_SLACK (1u << 20)
#define SS_SEQ_LEN   (64u << 10)

enum span_state {
	SPAN_QUEUED,   /* claimed for the read-ahead thread, not started */
	SPAN_DECODING, /* one thread decodes it, without the lock */
	SPAN_READY,    /* in the LRU list */
};

struct span {
	size_t idx;
	unsigned char *data;
	size_t len; /* reserved in held from the claim on */
	enum span_state state;
	unsigned refs;
	struct span *hnext;	  /* hash chain */
	struct span *prev, *next; /* LRU list, most recent first (ready) */
	struct span *qnext;	  /* read-ahead queue (queued) */
};

struct seek_stream {
	struct wsnap_stream base;
	struct wsnap_source *src;
	struct wsnap_seek_table *t;
	wsnap_seek_span_fn decode;
	pthread_mutex_t lock;
	pthread_cond_t cond;	   /* a span left SPAN_DECODING */
	pthread_cond_t ahead_cond; /* queue not empty, or stop */
	struct span *hash[SS_BUCKETS];
	struct span *lru_head, *lru_tail;
	struct span *queue_head, *queue_tail; /* read-ahead, oldest first */
	size_t held, max;
	uint64_t last_off, last_end; /* the previous read */
	uint64_t decoded, hits, ahead;
	pthread_t ahead_thread;
	bool ahead_started, stop;
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

static size_t span_len(const struct seek_stream *s, size_t idx)
{
	return (size_t)(wsnap_seek_span_end(s->t, idx) - s->t->points[idx].out);
}

static void ss_drop(struct seek_stream *s, struct span *e)
{
	lru_unlink(s, e);
	ss_remove(s, e);
	s->held -= e->len;
	span_free(e->data, e->len);
	free(e);
}

/* Frees the least recently used entries nobody holds while over max. */
static void ss_evict(struct seek_stream *s)
{
	struct span *e = s->lru_tail;

	while (e && s->held > s->max) {
		struct span *prev = e->prev;

		if (!e->refs)
			ss_drop(s, e);
		e = prev;
	}
}

/* A new entry for span idx at *pp in state st, its bytes reserved (lock
 * held); NULL when out of memory. */
static struct span *ss_claim(struct seek_stream *s, struct span **pp,
			     size_t idx, enum span_state st)
{
	struct span *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->idx = idx;
	e->state = st;
	e->len = span_len(s, idx);
	*pp = e;
	/* room first: the bound holds while the span is decoded */
	s->held += e->len;
	ss_evict(s);
	return e;
}

/* Decodes claimed entry e (state SPAN_DECODING, lock held on entry and on
 * return; dropped meanwhile). Returns 0 with e ready, or the error with e
 * gone. */
static int ss_fill(struct seek_stream *s, struct span *e)
{
	size_t idx = e->idx, len = e->len;
	unsigned char *buf;
	int rc;

	pthread_mutex_unlock(&s->lock);
	/* decoded without the lock: others wait for this span only */
	buf = span_alloc(len);
	rc = buf ? s->decode(s->t, idx, s->src, buf) : -ENOMEM;
	pthread_mutex_lock(&s->lock);
	if (rc) {
		ss_remove(s, e);
		s->held -= len;
		free(e);
		span_free(buf, len);
	} else {
		e->data = buf;
		e->state = SPAN_READY;
		lru_push(s, e);
		s->decoded++;
	}
	pthread_cond_broadcast(&s->cond);
	return rc;
}

static void queue_unlink(struct seek_stream *s, struct span *e)
{
	struct span **pp = &s->queue_head, *prev = NULL;

	while (*pp && *pp != e) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (!*pp)
		return;
	*pp = e->qnext;
	if (s->queue_tail == e)
		s->queue_tail = prev;
	e->qnext = NULL;
}

/* The read-ahead thread: decodes the queued spans, oldest first. */
static void *ss_ahead_main(void *arg)
{
	struct seek_stream *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct span *e = s->queue_head;

		if (s->stop)
			break;
		if (!e) {
			pthread_cond_wait(&s->ahead_cond, &s->lock);
			continue;
		}
		queue_unlink(s, e);
		e->state = SPAN_DECODING;
		ss_fill(s, e); /* an error: a reader tries again */
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/*
 * Room for len more bytes beside a sequential reader at span i (lock
 * held): drops, least recently used first, ready spans nobody holds that
 * are outside [i, i + SS_AHEAD] (behind the reader, or elsewhere), never
 * the one read nor those decoded ahead of it. Whether len now fits.
 */
static bool ss_room_ahead(struct seek_stream *s, size_t i, size_t len)
{
	struct span *e = s->lru_tail;

	while (e && s->held + len > s->max) {
		struct span *prev = e->prev;

		if (!e->refs && (e->idx < i || e->idx > i + SS_AHEAD))
			ss_drop(s, e);
		e = prev;
	}
	return s->held + len <= s->max;
}

/*
 * A sequential reader is at span i (lock held): up to SS_AHEAD of the spans
 * after it are claimed for the read-ahead thread, as long as they fit in
 * the bound beside what cannot be evicted (never at the cost of a span in
 * use: under memory pressure there is no read-ahead).
 */
static void ss_ahead(struct seek_stream *s, size_t i)
{
	size_t j, queued = 0;
	struct span *e;

	for (e = s->queue_head; e; e = e->qnext)
		queued++;
	for (j = i + 1; j < s->t->n && j <= i + SS_AHEAD; j++) {
		struct span **pp = ss_slot(s, j);

		if (*pp)
			continue;
		if (queued >= SS_AHEAD || !ss_room_ahead(s, i, span_len(s, j)))
			break;
		if (!s->ahead_started) {
			if (pthread_create(&s->ahead_thread, NULL,
					   ss_ahead_main, s) != 0)
				return; /* no read-ahead: reads still work */
			s->ahead_started = true;
		}
		e = ss_claim(s, pp, j, SPAN_QUEUED);
		if (!e)
			return;
		if (s->queue_tail)
			s->queue_tail->qnext = e;
		else
			s->queue_head = e;
		s->queue_tail = e;
		queued++;
		s->ahead++;
		pthread_cond_signal(&s->ahead_cond);
	}
}

/* Whether a read of [off, off + len) follows the previous one; records it
 * as the previous one. */
static bool ss_sequential(struct seek_stream *s, uint64_t off, size_t len)
{
	bool seq;

	pthread_mutex_lock(&s->lock);
	seq = len >= SS_SEQ_LEN ||
	      (s->last_end && off >= s->last_off &&
	       off - s->last_off <= s->last_end - s->last_off + SS_SEQ_SLACK);
	s->last_off = off;
	s->last_end = off + len;
	pthread_mutex_unlock(&s->lock);
	return seq && !s->src->fetches;
}

/* Span idx, ready and held (release with ss_put); or an error. seq: the
 * read is sequential, and gets read-ahead. */
static int ss_get(struct seek_stream *s, size_t idx, bool seq,
		  struct span **out)
{
	struct span *e, **pp;
	int rc;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		pp = ss_slot(s, idx);
		e = *pp;
		if (!e) {
			e = ss_claim(s, pp, idx, SPAN_DECODING);
			if (!e) {
				pthread_mutex_unlock(&s->lock);
				return -ENOMEM;
			}
			break;
		}
		if (e->state == SPAN_QUEUED) {
			/* not started: this thread decodes it (and the
			 * read-ahead thread the next one) */
			queue_unlink(s, e);
			e->state = SPAN_DECODING;
			break;
		}
		if (e->state == SPAN_READY) {
			e->refs++;
			lru_unlink(s, e);
			lru_push(s, e);
			s->hits++;
			if (seq)
				ss_ahead(s, idx);
			pthread_mutex_unlock(&s->lock);
			*out = e;
			return 0;
		}
		if (seq) {
			ss_ahead(s, idx);
			seq = false;
		}
		pthread_cond_wait(&s->cond, &s->lock);
	}
	/* ours to decode; the next spans start on the read-ahead thread */
	e->refs = 1;
	if (seq)
		ss_ahead(s, idx);
	rc = ss_fill(s, e);
	pthread_mutex_unlock(&s->lock);
	if (rc == 0)
		*out = e;
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
	bool seq;
	int rc;

	if (off >= t->stream_size)
		return 0;
	if (len > t->stream_size - off)
		len = (size_t)(t->stream_size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	seq = ss_sequential(s, off, len);
	while (done < len) {
		uint64_t at = off + done;
		size_t i = wsnap_seek_table_find(t, at), n;
		uint64_t start = t->points[i].out;
		struct span *e;

		rc = ss_get(s, i, seq, &e);
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

	if (s->ahead_started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->ahead_cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->ahead_thread, NULL);
	}
	for (i = 0; i < SS_BUCKETS; i++)
		for (e = s->hash[i]; e; e = next) {
			next = e->hnext;
			span_free(e->data, e->len);
			free(e);
		}
	pthread_cond_destroy(&s->ahead_cond);
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
	pthread_cond_init(&s->ahead_cond, NULL);
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
	out->spans_ahead = s->ahead;
	out->cache_bytes = s->held;
	pthread_mutex_unlock(&s->lock);
}
