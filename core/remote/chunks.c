/* SPDX-License-Identifier: MIT */
/*
 * The chunk cache (chunks.h). One mutex guards the list of entries, the
 * read-ahead queue and the sequential-read state; fetches run without it.
 * An entry's data is written only by the thread that fetches it, before
 * its state leaves FETCHING under the mutex, and read only after: readers
 * copy out of it without the mutex while they hold a reference, which
 * keeps it from being dropped. The list is short (the budget over a chunk
 * or a small extent), so lookups are a linear scan.
 *
 * Memory: bytes counts the buffers of the entries (their capacity) and
 * pooled those kept for reuse; an insert first drops what must go to make
 * room, takes a kept buffer of its size class if there is one, then frees
 * kept ones until entries and pool together are within the budget again
 * (entries in use excepted, as before). A buffer is of class k (k = 0, 1)
 * when it holds (k + 1) chunks and the entry needs more than k + 1/2.
 */
#include "chunks.h"
#include "pieces.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AHEAD_THREADS 2
#define AHEAD_PIECE   2 /* chunks per read-ahead request */
#define QUEUE_MAX     (2 * WSNAP_CHUNK_AHEAD)
#define POOL_CLASSES  2 /* buffers of 1 and of 2 chunks */
#define GAPS_MAX      8 /* fetches of one entry between pieces on disk */
/* how far from the end of a run of reads one may start and continue it */
#define RUN_NEAR (4u * WSNAP_CHUNK)

enum entry_state { E_FETCHING, E_READY, E_FAILED };

struct entry {
	struct entry *prev, *next;
	uint64_t start, len;
	char *data;
	uint64_t cap; /* bytes of data */
	int cls;      /* its pool class, -1 none */
	enum entry_state state;
	uint64_t filled; /* leading bytes of data that are final */
	int err;
	unsigned refs;
	uint64_t used;
	bool consumed;	  /* a sequential read copied its last byte */
	bool no_store;	  /* fetched for a sequential run past its first
			     WSNAP_CHUNK_SEQ_STORE bytes: not put on disk */
	unsigned partial; /* readers waiting for part of it */
};

struct wsnap_chunks {
	pthread_mutex_t lock;
	pthread_cond_t done; /* an entry left FETCHING */
	pthread_cond_t work; /* the queue has work, or stop */
	struct entry *head;
	uint64_t size, budget, bytes, tick;
	wsnap_chunk_fetch_fn fn;
	void *ctx;
	wsnap_chunk_check_fn check;
	void *check_ctx;
	struct wsnap_pieces *store;
	char *pool[POOL_CLASSES][WSNAP_CHUNK_POOL];
	unsigned npool[POOL_CLASSES];
	uint64_t pooled;
	uint64_t seq_next;
	/* the run of reads near each other that the last read was part of
	 * (reads the kernel sends together arrive out of order): the
	 * bytes [run_start, run_end), run_bytes of them read */
	uint64_t run_start, run_end, run_bytes;
	unsigned window;
	unsigned ahead_max; /* what fits in the budget beside the chunk read */
	struct entry *queue[QUEUE_MAX];
	unsigned qhead, qn;
	pthread_t threads[AHEAD_THREADS];
	unsigned nthreads;
	pid_t pid;
	bool stop;
};

void wsnap_chunks_plan(uint64_t off, size_t len, uint64_t size, int big,
		       uint64_t *start, uint64_t *end)
{
	const uint64_t align = WSNAP_CHUNK_SMALL;
	uint64_t s = off, e = off + WSNAP_CHUNK;

	if (!big) {
		s = off & ~(align - 1);
		e = off + len;
		if (e % align)
			e += align - e % align;
	}
	*start = s;
	*end = e < size ? e : size;
}

/* The entry holding off (not a failed one), else NULL; *next is the start
 * of the first entry after off (UINT64_MAX when none). */
static struct entry *find(struct wsnap_chunks *c, uint64_t off, uint64_t *next)
{
	struct entry *e;

	*next = UINT64_MAX;
	for (e = c->head; e; e = e->next) {
		if (e->state == E_FAILED)
			continue;
		if (e->start <= off && off < e->start + e->len)
			return e;
		if (e->start > off && e->start < *next)
			*next = e->start;
	}
	return NULL;
}

static uint64_t class_cap(int cls)
{
	return (uint64_t)(cls + 1) * WSNAP_CHUNK;
}

/* The pool class of a buffer for len bytes, -1 for none. */
static int class_of(uint64_t len)
{
	int k;

	for (k = 0; k < POOL_CLASSES; k++)
		if (len > class_cap(k) - WSNAP_CHUNK / 2 && len <= class_cap(k))
			return k;
	return -1;
}

/* Frees kept buffers until entries and pool are within budget with room
 * for more bytes. */
static void pool_trim(struct wsnap_chunks *c, uint64_t more)
{
	int k;

	for (k = POOL_CLASSES - 1; k >= 0; k--)
		while (c->npool[k] && c->bytes + c->pooled + more > c->budget) {
			free(c->pool[k][--c->npool[k]]);
			c->pooled -= class_cap(k);
		}
}

static void drop(struct wsnap_chunks *c, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	c->bytes -= e->cap;
	if (e->cls >= 0 && c->npool[e->cls] < WSNAP_CHUNK_POOL) {
		c->pool[e->cls][c->npool[e->cls]++] = e->data;
		c->pooled += e->cap;
		pool_trim(c, 0);
	} else {
		free(e->data);
	}
	free(e);
}

static void unref(struct wsnap_chunks *c, struct entry *e)
{
	if (--e->refs == 0 && e->state == E_FAILED)
		drop(c, e);
}

/* Drops least recently used entries no one holds until within budget with
 * room for more bytes. */
static void evict(struct wsnap_chunks *c, uint64_t more)
{
	while (c->bytes + more > c->budget) {
		struct entry *e, *lru = NULL;

		for (e = c->head; e; e = e->next)
			if (e->refs == 0 && e->state == E_READY &&
			    (!lru || e->used < lru->used))
				lru = e;
		if (!lru)
			break;
		drop(c, lru);
	}
}

/* A new entry for [start, end), FETCHING, held once, at the head. */
static struct entry *insert(struct wsnap_chunks *c, uint64_t start,
			    uint64_t end)
{
	struct entry *e = calloc(1, sizeof(*e));
	int k = class_of(end - start);

	if (!e)
		return NULL;
	e->cls = k;
	e->cap = k >= 0 ? class_cap(k) : end - start;
	evict(c, e->cap);
	if (k >= 0 && c->npool[k]) {
		e->data = c->pool[k][--c->npool[k]];
		c->pooled -= e->cap;
	} else if (!(e->data = malloc(e->cap))) {
		free(e);
		return NULL;
	}
	pool_trim(c, e->cap);
	e->start = start;
	e->len = end - start;
	e->state = E_FETCHING;
	e->refs = 1;
	e->used = ++c->tick;
	e->no_store = c->run_bytes > WSNAP_CHUNK_SEQ_STORE;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	c->bytes += e->cap;
	return e;
}

struct filling {
	struct wsnap_chunks *c;
	struct entry *e;
	size_t base; /* where in e the fetch going on writes */
};

/* The fetch's progress: the bytes up to n are there for readers. */
static void filled_cb(void *p, size_t n)
{
	struct filling *f = p;

	n += f->base;
	pthread_mutex_lock(&f->c->lock);
	if (n > f->e->filled && n <= f->e->len) {
		f->e->filled = n;
		/* only readers of part of it care before it is whole */
		if (f->e->partial)
			pthread_cond_broadcast(&f->c->done);
	}
	pthread_mutex_unlock(&f->c->lock);
}

struct gap {
	uint64_t off, len;
};

/*
 * Fills e from the pieces on disk where they hold its bytes and from the
 * fetch elsewhere, without the lock: the ranges fetched go to g (*ng of
 * them; past GAPS_MAX - 1 the last runs to the end), *stored says whether
 * pieces gave any. Progress is told to readers (filled) only when no
 * checker may refuse the bytes (a refusal fetches them again in place).
 */
static int fill_entry(struct wsnap_chunks *c, struct entry *e,
		      struct filling *f, bool tell, struct gap *g, unsigned *ng,
		      bool *stored)
{
	uint64_t p = e->start, end = e->start + e->len, next, t;
	size_t n;
	int rc;

	*ng = 0;
	*stored = false;
	while (p < end) {
		n = c->store ? wsnap_pieces_get(c->store,
						e->data + (p - e->start), p,
						(size_t)(end - p), &next)
			     : 0;
		if (n) {
			p += n;
			*stored = true;
			if (tell)
				filled_cb(f, (size_t)(p - e->start));
			continue;
		}
		t = !c->store			       ? end
		    : next < end && *ng < GAPS_MAX - 1 ? next
						       : end;
		f->base = (size_t)(p - e->start);
		rc = c->fn(c->ctx, e->data + f->base, p, (size_t)(t - p),
			   tell ? filled_cb : NULL, f);
		f->base = 0;
		if (rc)
			return rc;
		g[*ng].off = p;
		g[(*ng)++].len = t - p;
		p = t;
	}
	return 0;
}

/* Called with the lock held: fetches e (held once) and settles it; then,
 * past the readers waiting for it, stores what the network gave (checked)
 * on disk. */
static int fetch_locked(struct wsnap_chunks *c, struct entry *e)
{
	struct filling f = {c, e, 0};
	wsnap_chunk_check_fn check = c->check;
	void *cctx = c->check_ctx;
	struct gap g[GAPS_MAX];
	unsigned ng = 0, i;
	bool stored = false, checked_bad = false;
	int rc;

	pthread_mutex_unlock(&c->lock);
	rc = fill_entry(c, e, &f, !check || !c->store, g, &ng, &stored);
	/* a refusal of the checker, not a fetch that failed */
	if (rc == 0 && check)
		checked_bad = (rc = check(cctx, e->start, e->data,
					  (size_t)e->len)) != 0;
	if (checked_bad && stored) {
		/* a piece whose own checksum holds but whose bytes the
		 * checker refuses (made to look right): never again, and
		 * the bytes from the network instead (nothing was told) */
		wsnap_pieces_drop(c->store, e->start, e->len);
		rc = c->fn(c->ctx, e->data, e->start, (size_t)e->len, NULL,
			   NULL);
		if (rc == 0)
			rc = check(cctx, e->start, e->data, (size_t)e->len);
		g[0].off = e->start;
		g[0].len = e->len;
		ng = 1;
	}
	pthread_mutex_lock(&c->lock);
	e->state = rc ? E_FAILED : E_READY;
	e->err = rc;
	pthread_cond_broadcast(&c->done);
	if (rc == 0 && c->store && ng && !e->no_store) {
		pthread_mutex_unlock(&c->lock);
		for (i = 0; i < ng; i++)
			wsnap_pieces_put(c->store, g[i].off,
					 e->data + (g[i].off - e->start),
					 (size_t)g[i].len);
		pthread_mutex_lock(&c->lock);
	}
	return rc;
}

/* Counts a read of [off, off + len) into the run of reads (lock held):
 * one that starts within RUN_NEAR of where the run ends continues it.
 * What counts is the bytes read, not the span: small files read in the
 * archive's order skip ahead by little but read little. */
static void run_note(struct wsnap_chunks *c, uint64_t off, size_t len)
{
	if (c->run_end > c->run_start && off + RUN_NEAR >= c->run_end &&
	    off <= c->run_end + RUN_NEAR && off >= c->run_start) {
		if (off + len > c->run_end)
			c->run_end = off + len;
		c->run_bytes += len;
		return;
	}
	c->run_start = off;
	c->run_end = off + len;
	c->run_bytes = len;
}

/* In a forked child: no thread of the parent is here to finish what it
 * had in flight, nor to let go of what it held. */
static void after_fork(struct wsnap_chunks *c)
{
	struct entry *e, *next;

	for (e = c->head; e; e = next) {
		next = e->next;
		e->refs = 0;
		if (e->state != E_READY)
			drop(c, e);
	}
	c->qn = 0;
	c->qhead = 0;
	c->nthreads = 0;
	c->pid = getpid();
	/* the parent's read-ahead threads may have been waiting on these
	 * at the fork: a glibc condition with waiters that are not there
	 * can block a signal for good */
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->done, NULL);
}

/* An entry holding off, held by the caller, READY or with the bytes up to
 * end (or its own end) filled (made for [off, end) when there is none): 0,
 * or the fetch's error. */
static int get(struct wsnap_chunks *c, uint64_t off, uint64_t end, int big,
	       bool whole, struct entry **out)
{
	uint64_t s, t, next;
	struct entry *e;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	e = find(c, off, &next);
	if (e) {
		/* the bytes wanted of it, from its start */
		uint64_t need =
			(end < e->start + e->len ? end : e->start + e->len) -
			e->start;

		e->refs++;
		e->used = ++c->tick;
		if (!whole)
			e->partial++;
		while (e->state == E_FETCHING && (whole || e->filled < need))
			pthread_cond_wait(&c->done, &c->lock);
		if (!whole)
			e->partial--;
		if (e->state == E_FAILED)
			rc = e->err;
	} else {
		wsnap_chunks_plan(off, (size_t)(end - off), c->size, big, &s,
				  &t);
		/* not again what the next entry holds */
		if (t > next)
			t = next;
		e = insert(c, s, t);
		rc = e ? fetch_locked(c, e) : -ENOMEM;
	}
	if (rc && e)
		unref(c, e);
	pthread_mutex_unlock(&c->lock);
	*out = rc ? NULL : e;
	return rc;
}

static void put(struct wsnap_chunks *c, struct entry *e, bool consumed)
{
	pthread_mutex_lock(&c->lock);
	if (consumed)
		e->consumed = true;
	unref(c, e);
	evict(c, 0);
	pthread_mutex_unlock(&c->lock);
}

static void *ahead_main(void *arg)
{
	struct wsnap_chunks *c = arg;
	struct entry *e;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->stop && c->qn == 0)
			pthread_cond_wait(&c->work, &c->lock);
		if (c->stop)
			break;
		e = c->queue[c->qhead];
		c->qhead = (c->qhead + 1) % QUEUE_MAX;
		c->qn--;
		fetch_locked(c, e);
		unref(c, e);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/*
 * Read-ahead of n chunks from p (lock held): when less than half of that is
 * there or on its way, the rest is queued in requests of up to
 * AHEAD_PIECE chunks, which the threads fetch side by side.
 */
static void read_ahead(struct wsnap_chunks *c, uint64_t p, unsigned n)
{
	uint64_t limit = p + (uint64_t)n * WSNAP_CHUNK, q = p, t, next;
	struct entry *e, *en;

	/* drop-behind: what a sequential read has gone past (by two chunks,
	 * for reads the kernel sent together and we serve out of order)
	 * gives its buffer to the read-ahead that follows, while the pool
	 * has room for it; the kernel's page cache keeps what was read */
	for (e = c->head; e; e = en) {
		en = e->next;
		if (e->consumed && e->refs == 0 && e->state == E_READY &&
		    e->cls >= 0 && c->npool[e->cls] < WSNAP_CHUNK_POOL &&
		    e->start + e->len <= p &&
		    p - (e->start + e->len) >= 2 * WSNAP_CHUNK)
			drop(c, e);
	}

	if (limit > c->size)
		limit = c->size;
	while (q < limit && (e = find(c, q, &next)) != NULL)
		q = e->start + e->len;
	if (q >= limit || (q - p) * 2 >= limit - p)
		return;
	while (c->nthreads < AHEAD_THREADS &&
	       pthread_create(&c->threads[c->nthreads], NULL, ahead_main, c) ==
		       0)
		c->nthreads++;
	if (c->nthreads == 0)
		return;
	/* whole chunks from q, where what is there ends: the pieces keep the
	 * alignment of the entries before them (a sidecar's chunks, which
	 * the check on fill hashes only when they lie whole in a piece) */
	limit = q + (limit - q + WSNAP_CHUNK - 1) / WSNAP_CHUNK * WSNAP_CHUNK;
	if (limit > c->size)
		limit = c->size;
	if (next > limit)
		next = limit;
	while (q < next && c->qn < QUEUE_MAX) {
		t = q + AHEAD_PIECE * WSNAP_CHUNK < next
			    ? q + AHEAD_PIECE * WSNAP_CHUNK
			    : next;
		e = insert(c, q, t);
		if (!e)
			break;
		c->queue[(c->qhead + c->qn) % QUEUE_MAX] = e;
		c->qn++;
		q = t;
	}
	pthread_cond_broadcast(&c->work);
}

/* wsnap_chunks_read into buf, or wsnap_chunks_fill when buf is NULL. */
static ssize_t read_or_fill(struct wsnap_chunks *c, void *buf, size_t len,
			    uint64_t off)
{
	uint64_t pos, end;
	struct entry *e;
	unsigned window;
	size_t done = 0, n;
	bool seq, inside;
	int big, rc;

	if (off >= c->size || len == 0)
		return 0;
	if (len > c->size - off)
		len = (size_t)(c->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	pthread_mutex_lock(&c->lock);
	if (c->pid != getpid())
		after_fork(c);
	/* sequential: where the last read ended; a read inside what was
	 * read (a digest check's chunk, then its reads; reads the kernel
	 * sent together, served out of order) changes nothing */
	inside = c->seq_next != UINT64_MAX && off + len <= c->seq_next &&
		 off + WSNAP_CHUNK >= c->seq_next;
	seq = off == c->seq_next || inside;
	if (!inside) {
		c->window = !seq			   ? 0
			    : c->window == 0		   ? 1
			    : c->window * 2 > c->ahead_max ? c->ahead_max
							   : c->window * 2;
		c->seq_next = off + len;
	}
	window = inside ? 0 : c->window;
	run_note(c, off, len);
	pthread_mutex_unlock(&c->lock);
	big = len >= WSNAP_CHUNK / 2 || seq;
	end = off + len;
	while (done < len) {
		pos = off + done;
		rc = get(c, pos, end, big, !buf, &e);
		if (rc)
			return rc;
		n = e->start + e->len - pos < end - pos
			    ? (size_t)(e->start + e->len - pos)
			    : (size_t)(end - pos);
		if (buf)
			memcpy((char *)buf + done, e->data + (pos - e->start),
			       n);
		put(c, e, buf && seq && pos + n == e->start + e->len);
		done += n;
	}
	if (big && window) {
		pthread_mutex_lock(&c->lock);
		if (!c->stop)
			read_ahead(c, end, window);
		pthread_mutex_unlock(&c->lock);
	}
	return (ssize_t)len;
}

ssize_t wsnap_chunks_read(struct wsnap_chunks *c, void *buf, size_t len,
			  uint64_t off)
{
	return read_or_fill(c, buf, len, off);
}

int wsnap_chunks_fill(struct wsnap_chunks *c, size_t len, uint64_t off)
{
	ssize_t r = read_or_fill(c, NULL, len, off);

	return r < 0 ? (int)r : 0;
}

void wsnap_chunks_set_check(struct wsnap_chunks *c, wsnap_chunk_check_fn fn,
			    void *ctx)
{
	pthread_mutex_lock(&c->lock);
	c->check = fn;
	c->check_ctx = ctx;
	pthread_mutex_unlock(&c->lock);
}

void wsnap_chunks_set_store(struct wsnap_chunks *c, struct wsnap_pieces *p)
{
	pthread_mutex_lock(&c->lock);
	c->store = p;
	pthread_mutex_unlock(&c->lock);
}

int wsnap_chunks_new(uint64_t size, uint64_t budget, wsnap_chunk_fetch_fn fn,
		     void *ctx, struct wsnap_chunks **out)
{
	struct wsnap_chunks *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return -ENOMEM;
	}
	pthread_cond_init(&c->done, NULL);
	pthread_cond_init(&c->work, NULL);
	c->size = size;
	c->budget = budget;
	c->fn = fn;
	c->ctx = ctx;
	c->seq_next = UINT64_MAX;
	/* read-ahead beyond the budget would drop what it fetched before it
	 * is read */
	c->ahead_max = budget / WSNAP_CHUNK > 1
			       ? (unsigned)(budget / WSNAP_CHUNK) - 1
			       : 0;
	if (c->ahead_max > WSNAP_CHUNK_AHEAD)
		c->ahead_max = WSNAP_CHUNK_AHEAD;
	c->pid = getpid();
	*out = c;
	return 0;
}

void wsnap_chunks_free(struct wsnap_chunks *c)
{
	unsigned i;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->work);
	pthread_mutex_unlock(&c->lock);
	if (c->pid == getpid())
		for (i = 0; i < c->nthreads; i++)
			pthread_join(c->threads[i], NULL);
	c->budget = 0;
	while (c->head)
		drop(c, c->head);
	pool_trim(c, 0);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
