/* SPDX-License-Identifier: MIT */
/*
 * Sidecars (indexfile.h): an index made elsewhere, to be checked before
 * anything of it is served.
 *
 * Sections (doc/index-format.md), every integer little-endian:
 *   META     the archive's size and compression, counts, the chunk size,
 *            the digest algorithm (1: SHA-256) and what the index holds
 *            under the policy it was written with;
 *   POLICY   that policy (wsnap_policy_encode);
 *   MEMBERS  one record per member in archive order, skipped ones
 *            included: IXF_R_NFIELDS u64 (see ixf.h);
 *   STRINGS  the names and link names, each NUL-terminated;
 *   MRUNS    the sparse runs of the members, in member order (offset,
 *            length);
 *   DIGESTS  SHA-256 of each chunk of each regular file's stored data, in
 *            member order: the stored bytes split at every
 *            WSNAP_SIDECAR_CHUNK from the member's start, so that a member
 *            of at most one chunk has exactly one digest, its own.
 *
 * Why SHA-256 through OpenSSL's libcrypto (EVP): the digests are what
 * binds the bytes served to the bytes the sidecar's author saw, so they
 * must resist someone who chooses data, which no checksum does; libcrypto
 * is on every Debian system, maintained, and uses the CPU's SHA extensions.
 *
 * Trust: nothing the sidecar says is believed. Each member record is
 * checked against the reader's contract (strings inside the section and
 * NUL-terminated, runs inside their table, data extents 512-aligned, in
 * archive order, apart and inside the data stream), then given to the
 * policy engine as the reader would give it, so every rule and limit is
 * applied again. The digests are copied into the index and reads check
 * them (wsnap_index_verify) before serving a byte.
 */
#include "indexfile.h"

#include <errno.h>
#include <limits.h>
#include "crypto_dl.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "fileid.h"
#include "fsutil.h"
#include "grow.h"
#include "index_impl.h"
#include "ixf.h"
#include "seek.h"
#include "stream.h"

#define DIGEST_LEN	    32u
#define DIGEST_ALG_SHA256   1u
#define NO_LINK		    UINT64_MAX
#define TAR_BLOCK	    512u
#define SIDECAR_MAX_MEMBERS (UINT32_MAX - 2u)

enum meta_field {
	S_ARCHIVE_SIZE,
	S_COMPRESSION, /* index in ixf_compressions[] */
	S_STREAM_BYTES,
	S_INPUT_BYTES,
	S_NMEMBERS,
	S_STRINGS_LEN,
	S_NRUNS,
	S_NDIGESTS,
	S_CHUNK,
	S_DIGEST_ALG,
	S_POLICY_LEN,
	/* the index under the recorded policy */
	S_COUNT,
	S_MEMBERS,
	S_DIRS,
	S_IMPLICIT,
	S_FILES,
	S_SYMLINKS,
	S_TOTAL_BYTES,
	S_NFIELDS
};

/*
 * Verification is single-flight per chunk: the first thread to need an
 * unverified chunk sets its busy bit and reads and hashes it; others that
 * need it meanwhile wait on the chunk's stripe (digest number modulo
 * VERIFY_STRIPES) instead of hashing it too, as FUSE threads serving the
 * readahead of one file otherwise all do. A success sets the verified bit,
 * which later reads test without a lock. A failure is not remembered (a
 * read error may pass): a waiter takes the failed flight's result when
 * that flight was the only one to end on its stripe since it began to
 * wait, else it tries the chunk itself.
 *
 * Verify on fill: a stream that keeps what it reads (a remote object's
 * chunk cache, stream.h set_data_check) shows every piece it fetches to
 * check_filled, in the thread that fetched it (a read-ahead thread, ahead
 * of the reader), which hashes there, from the bytes that will be served,
 * each chunk of a file that lies whole in the piece. A piece with a chunk
 * that does not match never enters the cache. Such a check is a flight as
 * above but never waits (the fetching thread must not wait for a reader
 * that may be waiting for it): a chunk with a flight on is left to that
 * flight. A reader first has the stream fill the chunk (fill: no copy),
 * then finds it verified, and hashes it itself only when the pieces cut
 * it. Files are found by offset in spans, sorted, apart (a table that is
 * not gets no such check).
 */
#define VERIFY_STRIPES 64u
#define VERIFY_BUFS    4u /* chunk buffers kept for reader-side hashing */

/*
 * Verify ahead, for data that is not checked on fill (a local archive):
 * when a reader verifies the chunk after the last one verified of the
 * same file, the next VERIFY_AHEAD chunks are queued for one background
 * thread (started on first need, again in a forked child), which verifies
 * them as a reader would (the same flights: a reader that gets there
 * first waits for it, or takes the chunk itself), so that the reader
 * mostly finds its chunk verified while the thread hashes the next.
 */
#define VERIFY_AHEAD 4u
#define AHEAD_QMAX   8u

struct ahead_job {
	uint32_t ino;
	uint64_t k;
};

struct verify_ahead {
	pthread_mutex_t lock;
	pthread_cond_t work;
	const struct wsnap_index *idx;
	struct ahead_job q[AHEAD_QMAX];
	unsigned qhead, qn;
	uint32_t last_ino;  /* the file of the last chunk a reader verified */
	uint64_t last_k;    /* and that chunk */
	uint64_t queued_to; /* chunks of last_ino before this are queued */
	pthread_t thread;
	bool running, stop;
	pid_t pid;
};

struct verify_stripe {
	pthread_mutex_t lock;
	pthread_cond_t done;
	uint64_t ended;	   /* flights ended on this stripe */
	uint64_t last_bit; /* the digest of the last one to end */
	int last_rc;	   /* and its result */
};

struct wsnap_index_digests {
	unsigned char *sha; /* count digests of DIGEST_LEN bytes */
	uint64_t count;
	uint64_t *first;	    /* per ino - 1: first digest of a file */
	_Atomic uint64_t *verified; /* a bit per digest */
	_Atomic uint64_t *busy;	    /* a bit per digest: a flight is on */
	_Atomic uint64_t hashed;    /* chunks read and hashed */
	bool stripes_ready;
	struct verify_stripe stripes[VERIFY_STRIPES];
	/* regular files with stored data by offset (check_filled) */
	struct digest_span *spans;
	size_t nspans;
	/* buffers of WSNAP_SIDECAR_CHUNK bytes for hash_chunk */
	pthread_mutex_t bufs_lock;
	unsigned char *bufs[VERIFY_BUFS];
	unsigned nbufs;
	struct verify_ahead ahead;
	bool ahead_ready;
};

struct digest_span {
	uint64_t off, stored;
	uint32_t ino;
};

struct wsnap_sidecar {
	unsigned char *buf;
	uint64_t len;
	struct ixf_view v;
	uint64_t f[S_NFIELDS];
	const unsigned char *policy, *members, *strings, *runs, *digests;
	char *path;
};

/* ---- digests --------------------------------------------------------- */

static bool sha256(const void *p, size_t len, unsigned char out[DIGEST_LEN])
{
	unsigned int n = 0;

	return EVP_Digest(p, len, out, &n, EVP_sha256(), NULL) == 1 &&
	       n == DIGEST_LEN;
}

static uint64_t chunks_of(uint64_t stored)
{
	return stored / WSNAP_SIDECAR_CHUNK +
	       (stored % WSNAP_SIDECAR_CHUNK != 0);
}

void wsnap_index_digests_free(struct wsnap_index_digests *d)
{
	if (!d)
		return;
	wsnap_index_digests_stop(d);
	if (d->ahead_ready) {
		pthread_mutex_destroy(&d->ahead.lock);
		pthread_cond_destroy(&d->ahead.work);
	}
	if (d->stripes_ready) {
		for (unsigned i = 0; i < VERIFY_STRIPES; i++) {
			pthread_mutex_destroy(&d->stripes[i].lock);
			pthread_cond_destroy(&d->stripes[i].done);
		}
		pthread_mutex_destroy(&d->bufs_lock);
	}
	while (d->nbufs)
		free(d->bufs[--d->nbufs]);
	free(d->spans);
	free(d->sha);
	free(d->first);
	free((void *)d->verified);
	free((void *)d->busy);
	free(d);
}

/* A new digest table with its stripes, the rest zero; NULL without memory
 * or when a lock cannot be made. */
static struct wsnap_index_digests *digests_new(void)
{
	struct wsnap_index_digests *d = calloc(1, sizeof(*d));
	unsigned i;

	if (!d)
		return NULL;
	for (i = 0; i < VERIFY_STRIPES; i++) {
		if (pthread_mutex_init(&d->stripes[i].lock, NULL) != 0)
			break;
		if (pthread_cond_init(&d->stripes[i].done, NULL) != 0) {
			pthread_mutex_destroy(&d->stripes[i].lock);
			break;
		}
	}
	if (i == VERIFY_STRIPES) {
		if (pthread_mutex_init(&d->bufs_lock, NULL) == 0) {
			d->stripes_ready = true;
			/* without it, no verify-ahead: reads hash by themselves
			 */
			if (pthread_mutex_init(&d->ahead.lock, NULL) == 0) {
				if (pthread_cond_init(&d->ahead.work, NULL) ==
				    0)
					d->ahead_ready = true;
				else
					pthread_mutex_destroy(&d->ahead.lock);
			}
			d->ahead.pid = getpid();
			return d;
		}
	}
	while (i-- > 0) {
		pthread_mutex_destroy(&d->stripes[i].lock);
		pthread_cond_destroy(&d->stripes[i].done);
	}
	free(d);
	return NULL;
}

uint64_t wsnap_index_digest_reads(const struct wsnap_index *idx)
{
	return idx && idx->digests ? atomic_load(&idx->digests->hashed) : 0;
}

bool wsnap_index_has_digests(const struct wsnap_index *idx)
{
	return idx && idx->digests;
}

/* Bytes stored for a regular file: its size, or its runs' total. */
static uint64_t node_stored(const struct wsnap_index *idx,
			    const struct wsnap_node *n)
{
	const struct wsnap_index_sparse *sp;
	const struct wsnap_index_run *last;

	if (!(n->flags & WSNAP_NODE_SPARSE))
		return n->size;
	sp = &idx->sparse[n->sparse - 1];
	if (!sp->count)
		return 0;
	last = &idx->runs[sp->first + sp->count - 1];
	return last->stored + last->length;
}

/* Bytes of chunk k of a file of stored bytes. */
static size_t chunk_len(uint64_t stored, uint64_t k)
{
	uint64_t at = k * WSNAP_SIDECAR_CHUNK;

	return (size_t)(stored - at < WSNAP_SIDECAR_CHUNK
				? stored - at
				: WSNAP_SIDECAR_CHUNK);
}

/* Whether data of len bytes is what digest bit says: 0 or -EIO. */
static int hash_check(struct wsnap_index_digests *d, uint64_t bit,
		      const void *data, size_t len)
{
	unsigned char md[DIGEST_LEN];

	atomic_fetch_add(&d->hashed, 1);
	if (!sha256(data, len, md) ||
	    memcmp(md, d->sha + bit * DIGEST_LEN, DIGEST_LEN))
		return -EIO;
	return 0;
}

/* A buffer of WSNAP_SIDECAR_CHUNK bytes (kept or new), NULL without
 * memory; back with buf_put. Kept ones are mapped and faulted in already. */
static unsigned char *buf_get(struct wsnap_index_digests *d)
{
	unsigned char *b = NULL;

	pthread_mutex_lock(&d->bufs_lock);
	if (d->nbufs)
		b = d->bufs[--d->nbufs];
	pthread_mutex_unlock(&d->bufs_lock);
	return b ? b : malloc(WSNAP_SIDECAR_CHUNK);
}

static void buf_put(struct wsnap_index_digests *d, unsigned char *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&d->bufs_lock);
	if (d->nbufs < VERIFY_BUFS) {
		d->bufs[d->nbufs++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&d->bufs_lock);
	free(b);
}

/* Reads chunk k of file n (digest bit) and checks it: 0 or -errno. */
static int hash_chunk(const struct wsnap_index *idx,
		      struct wsnap_index_digests *d, const struct wsnap_node *n,
		      uint64_t stored, uint64_t k, uint64_t bit,
		      unsigned char **buf)
{
	size_t clen = chunk_len(stored, k);
	ssize_t r;

	if (!*buf && !(*buf = buf_get(d)))
		return -ENOMEM;
	r = wsnap_index_read_stored(idx, *buf, clen,
				    n->offset + k * WSNAP_SIDECAR_CHUNK);
	if (r < 0)
		return (int)r;
	if ((size_t)r != clen)
		return -EIO;
	return hash_check(d, bit, *buf, clen);
}

/* Ends the flight on bit (its stripe's lock held) with result rc. */
static void flight_end(struct wsnap_index_digests *d, struct verify_stripe *sp,
		       uint64_t bit, int rc)
{
	uint64_t mask = (uint64_t)1 << (bit % 64), w = bit / 64;

	if (rc == 0)
		atomic_fetch_or(&d->verified[w], mask);
	atomic_fetch_and(&d->busy[w], ~mask);
	sp->ended++;
	sp->last_bit = bit;
	sp->last_rc = rc;
	pthread_cond_broadcast(&sp->done);
}

/*
 * The check on fill of chunk bit from data (len bytes): 0 when verified
 * (here or before) or when another flight is on it (which decides), -EIO
 * on a mismatch. Never waits but for the stripe's lock.
 */
static int verify_from(struct wsnap_index_digests *d, uint64_t bit,
		       const void *data, size_t len)
{
	struct verify_stripe *sp = &d->stripes[bit % VERIFY_STRIPES];
	uint64_t mask = (uint64_t)1 << (bit % 64), w = bit / 64;
	int rc;

	if (atomic_load(&d->verified[w]) & mask)
		return 0;
	pthread_mutex_lock(&sp->lock);
	if (atomic_fetch_or(&d->busy[w], mask) & mask) {
		pthread_mutex_unlock(&sp->lock); /* another flight's */
		return 0;
	}
	if (atomic_load(&d->verified[w]) & mask) {
		/* done since the test above */
		atomic_fetch_and(&d->busy[w], ~mask);
		pthread_mutex_unlock(&sp->lock);
		return 0;
	}
	pthread_mutex_unlock(&sp->lock);
	rc = hash_check(d, bit, data, len);
	pthread_mutex_lock(&sp->lock);
	flight_end(d, sp, bit, rc);
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

/* The first span that ends after off (d->nspans when none). */
static size_t span_after(const struct wsnap_index_digests *d, uint64_t off)
{
	size_t lo = 0, hi = d->nspans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->spans[mid].off + d->spans[mid].stored <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* wsnap_data_check_fn over the digests of idx (stream.h). */
static int check_filled(void *ctx, uint64_t off, const void *data, size_t len)
{
	const struct wsnap_index *idx = ctx;
	struct wsnap_index_digests *d = idx->digests;
	uint64_t end = off + len, k, cs, ce;
	size_t i;
	int rc;

	for (i = span_after(d, off); i < d->nspans && d->spans[i].off < end;
	     i++) {
		const struct digest_span *sp = &d->spans[i];

		/* the first chunk that starts at or after off */
		k = off > sp->off ? (off - sp->off + WSNAP_SIDECAR_CHUNK - 1) /
					    WSNAP_SIDECAR_CHUNK
				  : 0;
		for (; k * WSNAP_SIDECAR_CHUNK < sp->stored; k++) {
			cs = sp->off + k * WSNAP_SIDECAR_CHUNK;
			ce = cs + chunk_len(sp->stored, k);
			if (ce > end)
				break;
			rc = verify_from(d, d->first[sp->ino - 1] + k,
					 (const char *)data + (cs - off),
					 (size_t)(ce - cs));
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct digest_span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The spans of idx's files: false (and none) without memory or when two
 * overlap. */
static bool spans_make(const struct wsnap_index *idx,
		       struct wsnap_index_digests *d)
{
	size_t n = 0, i;
	uint32_t ino;

	for (ino = 1; ino <= idx->count; ino++)
		n += idx->nodes[ino - 1].type == WSNAP_TYPE_FILE;
	d->spans = malloc((n ? n : 1) * sizeof(*d->spans));
	if (!d->spans)
		return false;
	for (ino = 1; ino <= idx->count; ino++) {
		const struct wsnap_node *nd = &idx->nodes[ino - 1];
		uint64_t st;

		if (nd->type != WSNAP_TYPE_FILE)
			continue;
		st = node_stored(idx, nd);
		if (st)
			d->spans[d->nspans++] = (struct digest_span){
				.off = nd->offset, .stored = st, .ino = ino};
	}
	qsort(d->spans, d->nspans, sizeof(*d->spans), span_cmp);
	for (i = 1; i < d->nspans; i++)
		if (d->spans[i].off <
		    d->spans[i - 1].off + d->spans[i - 1].stored) {
			free(d->spans);
			d->spans = NULL;
			d->nspans = 0;
			return false;
		}
	return true;
}

void wsnap_index_digests_watch(struct wsnap_index *idx)
{
	struct wsnap_stream *s = idx ? idx->stream : NULL;

	if (!s || !idx->digests || !s->ops->set_data_check || !s->ops->fill ||
	    idx->digests->spans || !spans_make(idx, idx->digests))
		return;
	s->ops->set_data_check(s, check_filled, idx);
}

/* Chunk k of file n verified once: hashed here, or by the flight on it. */
static int verify_chunk(const struct wsnap_index *idx,
			struct wsnap_index_digests *d,
			const struct wsnap_node *n, uint64_t stored, uint64_t k,
			uint64_t bit, unsigned char **buf)
{
	struct verify_stripe *sp = &d->stripes[bit % VERIFY_STRIPES];
	uint64_t mask = (uint64_t)1 << (bit % 64), w = bit / 64, seen;
	struct wsnap_stream *s = idx->stream;
	int rc;

	if (atomic_load(&d->verified[w]) & mask)
		return 0;
	/* a stream that checks what it fetches (check_filled): fetched and
	 * hashed there, most often ahead of us */
	if (s && d->spans && s->ops->fill) {
		rc = s->ops->fill(s, chunk_len(stored, k),
				  n->offset + k * WSNAP_SIDECAR_CHUNK);
		if (rc)
			return rc;
		if (atomic_load(&d->verified[w]) & mask)
			return 0;
	}
	pthread_mutex_lock(&sp->lock);
	while (atomic_fetch_or(&d->busy[w], mask) & mask) {
		seen = sp->ended;
		pthread_cond_wait(&sp->done, &sp->lock);
		if (atomic_load(&d->verified[w]) & mask) {
			pthread_mutex_unlock(&sp->lock);
			return 0;
		}
		if (sp->ended == seen + 1 && sp->last_bit == bit) {
			rc = sp->last_rc; /* the flight waited for failed */
			pthread_mutex_unlock(&sp->lock);
			return rc;
		}
	}
	/* ours: the busy bit was clear, and a success may have come since
	 * the test above */
	if (atomic_load(&d->verified[w]) & mask) {
		atomic_fetch_and(&d->busy[w], ~mask);
		pthread_mutex_unlock(&sp->lock);
		return 0;
	}
	pthread_mutex_unlock(&sp->lock);
	rc = hash_chunk(idx, d, n, stored, k, bit, buf);
	pthread_mutex_lock(&sp->lock);
	flight_end(d, sp, bit, rc);
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

static void *ahead_main(void *arg)
{
	struct wsnap_index_digests *d = arg;
	struct verify_ahead *a = &d->ahead;
	unsigned char *buf = NULL;
	struct ahead_job j;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->stop && a->qn == 0)
			pthread_cond_wait(&a->work, &a->lock);
		if (a->stop)
			break;
		j = a->q[a->qhead];
		a->qhead = (a->qhead + 1) % AHEAD_QMAX;
		a->qn--;
		pthread_mutex_unlock(&a->lock);
		{
			const struct wsnap_node *n =
				wsnap_index_node(a->idx, j.ino);

			/* an error is the reader's to meet, not ours */
			(void)verify_chunk(a->idx, d, n, node_stored(a->idx, n),
					   j.k, d->first[j.ino - 1] + j.k,
					   &buf);
		}
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	buf_put(d, buf);
	return NULL;
}

/* A reader verified chunks up to kend of file ino (of chunks in all):
 * queues the next ones when that continues the last such read. */
static void ahead_note(const struct wsnap_index *idx,
		       struct wsnap_index_digests *d, uint32_t ino, uint64_t k0,
		       uint64_t kend, uint64_t chunks)
{
	struct verify_ahead *a = &d->ahead;
	uint64_t k, to, mask, w, bit;
	bool seq;

	if (!d->ahead_ready)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->pid != getpid()) {
		/* a forked child: the thread is the parent's */
		a->running = false;
		a->qn = 0;
		a->pid = getpid();
	}
	/* near where the last read was (one chunk behind it too: reads the
	 * kernel sent together arrive out of order) */
	seq = ino == a->last_ino && k0 <= a->last_k + 1 &&
	      kend + 1 >= a->last_k;
	if (!seq) {
		a->last_ino = ino;
		a->last_k = kend;
		a->queued_to = kend + 1;
		goto out;
	}
	if (kend > a->last_k)
		a->last_k = kend;
	if (a->stop)
		goto out;
	if (!a->running) {
		a->idx = idx;
		if (pthread_create(&a->thread, NULL, ahead_main, d) != 0)
			goto out;
		a->running = true;
	}
	k = kend + 1 > a->queued_to ? kend + 1 : a->queued_to;
	to = kend + 1 + VERIFY_AHEAD < chunks ? kend + 1 + VERIFY_AHEAD
					      : chunks;
	for (; k < to && a->qn < AHEAD_QMAX; k++) {
		bit = d->first[ino - 1] + k;
		mask = (uint64_t)1 << (bit % 64);
		w = bit / 64;
		if (!(atomic_load(&d->verified[w]) & mask)) {
			a->q[(a->qhead + a->qn) % AHEAD_QMAX] =
				(struct ahead_job){ino, k};
			a->qn++;
		}
		a->queued_to = k + 1;
	}
	pthread_cond_signal(&a->work);
out:
	pthread_mutex_unlock(&a->lock);
}

void wsnap_index_digests_stop(struct wsnap_index_digests *d)
{
	struct verify_ahead *a = d ? &d->ahead : NULL;
	bool join;

	if (!d || !d->ahead_ready)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	a->qn = 0;
	join = a->running && a->pid == getpid();
	a->running = false;
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->lock);
	if (join)
		pthread_join(a->thread, NULL);
}

int wsnap_index_verify(const struct wsnap_index *idx, uint32_t ino,
		       uint64_t phys, uint64_t len)
{
	struct wsnap_index_digests *d = idx ? idx->digests : NULL;
	const struct wsnap_node *n;
	unsigned char *buf = NULL;
	uint64_t s0, stored, k, kend;
	int rc = 0;

	if (!d || !len)
		return 0;
	n = wsnap_index_node(idx, ino);
	if (!n || n->type != WSNAP_TYPE_FILE)
		return -EINVAL;
	stored = node_stored(idx, n);
	if (phys < n->offset || phys - n->offset > stored ||
	    len > stored - (phys - n->offset))
		return -EIO;
	s0 = phys - n->offset;
	kend = (s0 + len - 1) / WSNAP_SIDECAR_CHUNK;
	for (k = s0 / WSNAP_SIDECAR_CHUNK; k <= kend && !rc; k++)
		rc = verify_chunk(idx, d, n, stored, k, d->first[ino - 1] + k,
				  &buf);
	buf_put(d, buf);
	/* a stream that checks on fill reads ahead by itself */
	if (rc == 0 && !d->spans)
		ahead_note(idx, d, ino, s0 / WSNAP_SIDECAR_CHUNK, kend,
			   chunks_of(stored));
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

/* The members as the reader gave them, recorded while the builder judges
 * them. */
struct recorder {
	struct wsnap_builder *b;
	unsigned char *recs;
	size_t nrecs, caprecs;
	char *strings;
	size_t nstrings, capstrings;
	unsigned char *runs;
	size_t nruns, capruns;
	uint64_t nchunks;
};

static bool rec_string(struct recorder *r, const char *s, size_t len,
		       uint64_t *off)
{
	char *p;

	if (len >= SIZE_MAX - r->nstrings - 1)
		return false;
	p = wsnap_grow(r->strings, &r->capstrings, r->nstrings + len + 1, 1);
	if (!p)
		return false;
	r->strings = p;
	memcpy(p + r->nstrings, s, len);
	p[r->nstrings + len] = '\0';
	*off = r->nstrings;
	r->nstrings += len + 1;
	return true;
}

static uint64_t member_stored(const struct wsnap_raw_member *m)
{
	uint64_t s = 0;
	size_t i;

	if (m->type != WSNAP_RAW_FILE)
		return 0;
	if (!m->sparse)
		return m->size;
	for (i = 0; i < m->nsparse; i++)
		s += m->sparse[i].length;
	return s;
}

static enum wsnap_status record(void *ctx, const struct wsnap_raw_member *m,
				struct wsnap_error *err)
{
	struct recorder *r = ctx;
	uint64_t f[IXF_R_NFIELDS] = {0};
	unsigned char *p;
	size_t i;
	enum wsnap_status st;

	st = wsnap_builder_add(r->b, m, err);
	if (st != WSNAP_OK)
		return st;
	if (r->nrecs >= SIDECAR_MAX_MEMBERS)
		return wsnap_error_reject(err, m->name,
					  "archive member count exceeds limit");
	p = wsnap_grow(r->recs, &r->caprecs, r->nrecs + 1, IXF_REC_SIZE);
	if (!p)
		goto oom;
	r->recs = p;
	if (!rec_string(r, m->name, m->name_len, &f[IXF_R_NAME_OFF]))
		goto oom;
	f[IXF_R_LINK_OFF] = NO_LINK;
	if (m->linkname &&
	    !rec_string(r, m->linkname, m->linkname_len, &f[IXF_R_LINK_OFF]))
		goto oom;
	f[IXF_R_NAME_LEN] = m->name_len;
	f[IXF_R_TYPE] = (uint64_t)m->type;
	f[IXF_R_TYPEFLAG] = (unsigned char)m->typeflag;
	f[IXF_R_MODE] = m->mode;
	f[IXF_R_LINK_LEN] = m->linkname ? m->linkname_len : 0;
	f[IXF_R_SIZE] = m->size;
	f[IXF_R_DATA_OFFSET] = m->data_offset;
	f[IXF_R_MTIME_SEC] = (uint64_t)m->mtime_sec;
	f[IXF_R_MTIME_NSEC] = m->mtime_nsec;
	f[IXF_R_NSPARSE] = m->nsparse;
	for (i = 0; i < IXF_R_NFIELDS; i++)
		ixf_put64(r->recs + r->nrecs * IXF_REC_SIZE + 8 * i, f[i]);
	r->nrecs++;
	if (m->nsparse) {
		p = wsnap_grow(r->runs, &r->capruns, r->nruns + m->nsparse, 16);
		if (!p)
			goto oom;
		r->runs = p;
	}
	for (i = 0; i < m->nsparse; i++, r->nruns++) {
		ixf_put64(r->runs + r->nruns * 16, m->sparse[i].offset);
		ixf_put64(r->runs + r->nruns * 16 + 8, m->sparse[i].length);
	}
	r->nchunks += chunks_of(member_stored(m));
	return WSNAP_OK;
oom:
	return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
}

/* The digests of every file member's data, read from the stream. */
static int put_digests(struct ixf_writer *w, const struct recorder *r,
		       struct wsnap_stream *data)
{
	unsigned char *buf = malloc(WSNAP_SIDECAR_CHUNK), md[DIGEST_LEN];
	size_t i, run = 0;
	int e = buf ? 0 : ENOMEM;

	ixf_writer_begin(w, IXF_DIGESTS);
	for (i = 0; i < r->nrecs && !e; i++) {
		const unsigned char *rec = r->recs + i * IXF_REC_SIZE;
		uint64_t ns = ixf_get64(rec + 8 * IXF_R_NSPARSE), stored, at, j;
		uint64_t off = ixf_get64(rec + 8 * IXF_R_DATA_OFFSET);

		stored = ixf_get64(rec + 8 * IXF_R_SIZE);
		if (ixf_get64(rec + 8 * IXF_R_TYPE) != WSNAP_RAW_FILE)
			stored = 0;
		else if (ns)
			for (stored = 0, j = 0; j < ns; j++)
				stored +=
					ixf_get64(r->runs + (run + j) * 16 + 8);
		run += ns;
		for (at = 0; at < stored && !e; at += WSNAP_SIDECAR_CHUNK) {
			size_t len = (size_t)(stored - at < WSNAP_SIDECAR_CHUNK
						      ? stored - at
						      : WSNAP_SIDECAR_CHUNK);
			int rc = wsnap_stream_read(data, buf, len, off + at);

			e = rc < 0 ? -rc : 0;
			if (!e && !sha256(buf, len, md))
				e = ENOMEM;
			if (!e)
				ixf_writer_put(w, md, DIGEST_LEN);
		}
	}
	ixf_writer_end(w);
	free(buf);
	return e;
}

static int write_file(int out_fd, const struct recorder *r,
		      const struct wsnap_index *idx,
		      const struct wsnap_reader_result *res,
		      struct wsnap_stream *data, uint64_t archive_size,
		      const struct wsnap_policy *policy)
{
	const struct wsnap_seek_table *seek = wsnap_stream_seek_table(data);
	unsigned char *seek_bytes = NULL;
	uint64_t f[S_NFIELDS] = {0};
	struct ixf_writer w;
	unsigned char *pol;
	size_t plen, seek_len = 0;
	int e;

	pol = ixf_policy_bytes(policy, &plen);
	if (seek && !(seek_bytes = wsnap_seek_table_encode(seek, &seek_len))) {
		free(pol);
		return ENOMEM;
	}
	if (!pol || ixf_writer_init(&w, out_fd, seek ? 8 : 6) != 0) {
		free(pol);
		free(seek_bytes);
		return ENOMEM;
	}
	f[S_ARCHIVE_SIZE] = archive_size;
	f[S_COMPRESSION] = ixf_compression_code(res->compression);
	f[S_STREAM_BYTES] = res->stream_bytes;
	f[S_INPUT_BYTES] = res->input_bytes;
	f[S_NMEMBERS] = r->nrecs;
	f[S_STRINGS_LEN] = r->nstrings;
	f[S_NRUNS] = r->nruns;
	f[S_NDIGESTS] = r->nchunks;
	f[S_CHUNK] = WSNAP_SIDECAR_CHUNK;
	f[S_DIGEST_ALG] = DIGEST_ALG_SHA256;
	f[S_POLICY_LEN] = plen;
	f[S_COUNT] = idx->count;
	f[S_MEMBERS] = idx->stats.members;
	f[S_DIRS] = idx->stats.dirs;
	f[S_IMPLICIT] = idx->stats.implicit;
	f[S_FILES] = idx->stats.files;
	f[S_SYMLINKS] = idx->stats.symlinks;
	f[S_TOTAL_BYTES] = idx->stats.total_bytes;
	ixf_writer_u64s(&w, IXF_META, f, S_NFIELDS);
	ixf_writer_section(&w, IXF_POLICY, pol, plen);
	ixf_writer_section(&w, IXF_MEMBERS, r->recs, r->nrecs * IXF_REC_SIZE);
	ixf_writer_section(&w, IXF_STRINGS, r->strings, r->nstrings);
	ixf_writer_section(&w, IXF_MRUNS, r->runs, r->nruns * 16);
	free(pol);
	if (seek) {
		ixf_writer_section(&w, IXF_SEEK, seek_bytes, seek_len);
		ixf_writer_section(&w, IXF_SEEK_WINDOWS, seek->windows,
				   seek->windows_len);
	}
	free(seek_bytes);
	e = put_digests(&w, r, data);
	if (e) {
		ixf_writer_release(&w);
		return e;
	}
	return ixf_writer_finish(&w, IXF_KIND_SIDECAR, 0);
}

static enum wsnap_status ignore_member(void *ctx,
				       const struct wsnap_raw_member *m,
				       struct wsnap_error *err)
{
	return WSNAP_OK;
}

/*
 * The decoded stream of the archive the reader read: in place through its
 * seek table, the archive itself, or a spill (made now, decoding again,
 * when a compressed stream's table was given up). Takes over res's
 * descriptor and table. Returns 0 or an errno.
 */
static int data_stream(int archive_fd, const struct wsnap_reader_opts *opts,
		       struct wsnap_reader_result *res,
		       struct wsnap_stream **out, struct wsnap_error *err)
{
	struct wsnap_reader_result spill = {.data_fd = -1};
	struct wsnap_source *src = NULL;
	int fd = res->data_fd, rc;

	*out = NULL;
	res->data_fd = -1;
	if (fd < 0) {
		struct wsnap_reader_opts ro = *opts;

		ro.keep_data = true;
		ro.no_seek = true;
		if (wsnap_reader_run(archive_fd, &ro, ignore_member, NULL,
				     &spill, err) != WSNAP_OK)
			return err->errnum ? err->errnum : EIO;
		fd = spill.data_fd;
		if (spill.stream_bytes != res->stream_bytes) {
			close(fd);
			return EIO;
		}
	}
	rc = wsnap_source_file(fd, "", &src);
	if (rc) {
		wsnap_seek_table_free(res->seek);
		res->seek = NULL;
		return -rc;
	}
	if (res->seek)
		rc = wsnap_stream_seekable(src, res->seek, 0, out);
	else
		rc = wsnap_stream_plain(src, out);
	res->seek = NULL;
	return -rc;
}

enum wsnap_status wsnap_sidecar_write(int out_fd, int archive_fd,
				      const struct wsnap_policy *policy,
				      const struct wsnap_reader_opts *opts,
				      struct wsnap_error *err)
{
	struct wsnap_reader_opts ro = *opts;
	struct wsnap_reader_result res = {.data_fd = -1};
	struct wsnap_stream *data = NULL;
	struct recorder r;
	struct wsnap_index *idx = NULL;
	struct wsnap_fileid before, after;
	enum wsnap_status st;
	struct stat sb;
	int e;

	memset(&r, 0, sizeof(r));
	if (fstat(archive_fd, &sb) != 0 ||
	    wsnap_fileid_get(archive_fd, &before) != 0)
		return wsnap_error_io(err, errno, NULL, "cannot stat archive");
	st = wsnap_builder_new(&r.b, policy, err);
	if (st != WSNAP_OK)
		return st;
	ro.keep_data = true;
	st = wsnap_reader_run(archive_fd, &ro, record, &r, &res, err);
	if (st == WSNAP_OK)
		st = wsnap_builder_finish(r.b, &idx, err);
	else
		wsnap_builder_free(r.b);
	if (st == WSNAP_OK) {
		e = data_stream(archive_fd, opts, &res, &data, err);
		if (!e)
			e = write_file(out_fd, &r, idx, &res, data,
				       (uint64_t)sb.st_size, policy);
		/* the digests are of the bytes validated: the data stream
		 * does not check its file on every read, so the file is
		 * checked once, against what it was before validation */
		if (!e && (wsnap_fileid_get(archive_fd, &after) != 0 ||
			   !wsnap_fileid_same(&before, &after)))
			st = wsnap_error_io(err, EIO, NULL,
					    "archive changed while it was "
					    "indexed");
		else if (e)
			st = wsnap_error_io(
				err, e, NULL,
				e == ENOSPC ? "no space left writing "
					      "index file"
					    : "cannot write index file");
	}
	if (res.data_fd >= 0)
		close(res.data_fd);
	wsnap_seek_table_free(res.seek);
	wsnap_stream_free(data);
	wsnap_index_free(idx);
	free(r.recs);
	free(r.strings);
	free(r.runs);
	return st;
}

/* ---- reading ---------------------------------------------------------- */

static enum wsnap_status invalid(const struct wsnap_sidecar *sc,
				 struct wsnap_error *err, const char *why)
{
	return wsnap_error_io(err, 0, sc->path, "invalid index file (%s)", why);
}

void wsnap_sidecar_free(struct wsnap_sidecar *sc)
{
	if (!sc)
		return;
	free(sc->buf);
	free(sc->path);
	free(sc);
}

uint64_t wsnap_sidecar_archive_size(const struct wsnap_sidecar *sc)
{
	return sc->f[S_ARCHIVE_SIZE];
}

const char *wsnap_sidecar_compression(const struct wsnap_sidecar *sc)
{
	return ixf_compressions[sc->f[S_COMPRESSION]];
}

uint64_t wsnap_sidecar_stream_bytes(const struct wsnap_sidecar *sc)
{
	return sc->f[S_STREAM_BYTES];
}

/* The section of type t of exactly n elements of elem bytes (the padding
 * to 8 aside), or NULL. */
static const unsigned char *exact(const struct wsnap_sidecar *sc, uint32_t t,
				  uint64_t n, uint64_t elem)
{
	const struct ixf_section *s = ixf_find(&sc->v, t);

	if (!s || n > s->length / elem || s->length - n * elem >= 8)
		return NULL;
	return ixf_data(&sc->v, s);
}

/* The sections and META fields, checked for size and sense. */
static const char *parse(struct wsnap_sidecar *sc)
{
	const struct ixf_section *ms = ixf_find(&sc->v, IXF_META);
	uint64_t *f = sc->f;
	int i;

	if (!ms || ms->length != S_NFIELDS * 8)
		return "bad meta section";
	for (i = 0; i < S_NFIELDS; i++)
		f[i] = ixf_get64(ixf_data(&sc->v, ms) + 8 * i);
	if (f[S_COMPRESSION] >= IXF_NCOMPRESSIONS ||
	    f[S_CHUNK] != WSNAP_SIDECAR_CHUNK ||
	    f[S_DIGEST_ALG] != DIGEST_ALG_SHA256 ||
	    f[S_NMEMBERS] > SIDECAR_MAX_MEMBERS)
		return "unsupported parameters";
	sc->policy = exact(sc, IXF_POLICY, f[S_POLICY_LEN], 1);
	sc->members = exact(sc, IXF_MEMBERS, f[S_NMEMBERS], IXF_REC_SIZE);
	sc->strings = exact(sc, IXF_STRINGS, f[S_STRINGS_LEN], 1);
	sc->runs = exact(sc, IXF_MRUNS, f[S_NRUNS], 16);
	sc->digests = exact(sc, IXF_DIGESTS, f[S_NDIGESTS], DIGEST_LEN);
	if (!sc->policy || !sc->members || !sc->strings || !sc->runs ||
	    !sc->digests)
		return "bad section sizes";
	return NULL;
}

enum wsnap_status wsnap_sidecar_read(struct wsnap_sidecar **out, int fd,
				     const char *path, struct wsnap_error *err)
{
	struct wsnap_sidecar *sc;
	const char *why = NULL;
	struct stat sb;
	size_t got;
	int e;

	*out = NULL;
	sc = calloc(1, sizeof(*sc));
	if (!sc || !(sc->path = strdup(path ? path : ""))) {
		free(sc);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	if (fstat(fd, &sb) != 0) {
		e = errno;
		wsnap_sidecar_free(sc);
		return wsnap_error_io(err, e, path, "cannot stat");
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size < IXF_HEADER_SIZE ||
	    (uint64_t)sb.st_size > SIZE_MAX / 2) {
		enum wsnap_status st = invalid(sc, err, "not an index file");

		wsnap_sidecar_free(sc);
		return st;
	}
	sc->len = (uint64_t)sb.st_size;
	sc->buf = malloc((size_t)sc->len);
	if (!sc->buf) {
		wsnap_sidecar_free(sc);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	e = wsnap_read_full(fd, sc->buf, (size_t)sc->len, &got);
	if (e) {
		wsnap_sidecar_free(sc);
		return wsnap_error_io(err, e, path, "cannot read");
	}
	if (got != sc->len)
		why = "truncated";
	else if (!ixf_parse(&sc->v, sc->buf, sc->len, IXF_KIND_SIDECAR, &why))
		;
	else
		why = parse(sc);
	if (why) {
		enum wsnap_status st = invalid(sc, err, why);

		wsnap_sidecar_free(sc);
		return st;
	}
	*out = sc;
	return WSNAP_OK;
}

/* Member i of the sidecar as the reader would give it, checked against
 * the reader's contract; *run is the index of its first sparse run
 * (advanced past them), *sparse where the caller's runs go. */
struct feed {
	const struct wsnap_sidecar *sc;
	uint64_t stream_bytes;
	uint64_t run;	   /* next sparse run */
	uint64_t data_end; /* end of the last data extent */
	uint64_t digest;   /* next digest */
	uint64_t *dfirst;  /* per member: its first digest */
	struct wsnap_sparse_run *sp;
	size_t capsp;
};

static const char *string_at(const struct wsnap_sidecar *sc, uint64_t off,
			     uint64_t len)
{
	uint64_t n = sc->f[S_STRINGS_LEN];

	if (off >= n || len >= n - off || sc->strings[off + len] != '\0')
		return NULL;
	return (const char *)sc->strings + off;
}

static const char *member_at(struct feed *fd, uint64_t i,
			     struct wsnap_raw_member *m)
{
	const struct wsnap_sidecar *sc = fd->sc;
	const unsigned char *rec = sc->members + i * IXF_REC_SIZE;
	uint64_t f[IXF_R_NFIELDS], stored = 0, j;
	int k;

	for (k = 0; k < IXF_R_NFIELDS; k++)
		f[k] = ixf_get64(rec + 8 * k);
	memset(m, 0, sizeof(*m));
	if (f[IXF_R_TYPE] > WSNAP_RAW_OTHER || f[IXF_R_TYPEFLAG] > 255 ||
	    f[IXF_R_MODE] > 07777 || f[IXF_R_MTIME_NSEC] >= 1000000000u)
		return "bad member record";
	m->name = string_at(sc, f[IXF_R_NAME_OFF], f[IXF_R_NAME_LEN]);
	if (!m->name)
		return "bad member name";
	m->name_len = (size_t)f[IXF_R_NAME_LEN];
	if (f[IXF_R_LINK_OFF] != NO_LINK) {
		m->linkname =
			string_at(sc, f[IXF_R_LINK_OFF], f[IXF_R_LINK_LEN]);
		if (!m->linkname)
			return "bad member link name";
		m->linkname_len = (size_t)f[IXF_R_LINK_LEN];
	}
	m->type = (enum wsnap_raw_type)f[IXF_R_TYPE];
	m->typeflag = (char)(unsigned char)f[IXF_R_TYPEFLAG];
	m->mode = (uint32_t)f[IXF_R_MODE];
	m->size = f[IXF_R_SIZE];
	m->data_offset = f[IXF_R_DATA_OFFSET];
	m->mtime_sec = (int64_t)f[IXF_R_MTIME_SEC];
	m->mtime_nsec = (uint32_t)f[IXF_R_MTIME_NSEC];
	if (f[IXF_R_NSPARSE] > sc->f[S_NRUNS] - fd->run)
		return "bad sparse runs";
	if (f[IXF_R_NSPARSE]) {
		struct wsnap_sparse_run *sp =
			wsnap_grow(fd->sp, &fd->capsp, (size_t)f[IXF_R_NSPARSE],
				   sizeof(*sp));

		if (!sp)
			return "out of memory";
		fd->sp = sp;
		for (j = 0; j < f[IXF_R_NSPARSE]; j++) {
			const unsigned char *r = sc->runs + (fd->run + j) * 16;

			sp[j].offset = ixf_get64(r);
			sp[j].length = ixf_get64(r + 8);
			if (sp[j].length > UINT64_MAX - stored)
				return "bad sparse runs";
			stored += sp[j].length;
		}
		m->sparse = sp;
		m->nsparse = (size_t)f[IXF_R_NSPARSE];
		if (m->type != WSNAP_RAW_FILE)
			return "bad sparse runs";
	} else if (m->type == WSNAP_RAW_FILE) {
		stored = m->size;
	}
	fd->run += f[IXF_R_NSPARSE];
	if (m->type != WSNAP_RAW_FILE && m->size)
		return "bad member record";
	fd->dfirst[i] = fd->digest;
	if (chunks_of(stored) > sc->f[S_NDIGESTS] - fd->digest)
		return "too few digests";
	fd->digest += chunks_of(stored);
	if (!stored)
		return NULL;
	/* a header block before every member's data, extents apart and in
	 * archive order, inside the stream */
	if (m->data_offset % TAR_BLOCK || m->data_offset < fd->data_end ||
	    m->data_offset - fd->data_end < TAR_BLOCK)
		return "member data overlaps";
	if (m->data_offset > fd->stream_bytes ||
	    stored > fd->stream_bytes - m->data_offset)
		return "member data past the end of the archive";
	fd->data_end = m->data_offset + stored;
	return NULL;
}

/* The digest table of idx from the sidecar's, per node. */
static bool attach_digests(struct wsnap_index *idx,
			   const struct wsnap_sidecar *sc,
			   const uint64_t *dfirst)
{
	struct wsnap_index_digests *d = digests_new();
	uint64_t n = sc->f[S_NDIGESTS];
	uint32_t ino;

	if (!d)
		return false;
	idx->digests = d;
	d->count = n;
	d->sha = malloc(n ? n * DIGEST_LEN : 1);
	d->first = calloc(idx->count, sizeof(*d->first));
	d->verified = calloc(n / 64 + 1, sizeof(*d->verified));
	d->busy = calloc(n / 64 + 1, sizeof(*d->busy));
	if (!d->sha || !d->first || !d->verified || !d->busy)
		return false;
	memcpy(d->sha, sc->digests, n * DIGEST_LEN);
	for (ino = 1; ino <= idx->count; ino++) {
		const struct wsnap_node *nd = &idx->nodes[ino - 1];

		/* a file's order is its 1-based position among the members
		 * given to the builder: the sidecar's record number */
		if (nd->type == WSNAP_TYPE_FILE)
			d->first[ino - 1] = dfirst[nd->order - 1];
	}
	return true;
}

/* Whether idx is what the sidecar claims (under its own policy). */
static bool as_claimed(const struct wsnap_index *idx, const uint64_t *f)
{
	const struct wsnap_index_stats *s = &idx->stats;

	return f[S_COUNT] == idx->count && f[S_MEMBERS] == s->members &&
	       f[S_DIRS] == s->dirs && f[S_IMPLICIT] == s->implicit &&
	       f[S_FILES] == s->files && f[S_SYMLINKS] == s->symlinks &&
	       f[S_TOTAL_BYTES] == s->total_bytes;
}

/* The seek kind a compression's table must be of (0: none may be). */
static uint32_t seek_kind_of(const char *compression)
{
	if (strcmp(compression, "gzip") == 0)
		return WSNAP_SEEK_GZIP;
	if (strcmp(compression, "xz") == 0)
		return WSNAP_SEEK_XZ;
	if (strcmp(compression, "zstd") == 0)
		return WSNAP_SEEK_ZSTD;
	return 0;
}

/* The sidecar's seek table, checked against the archive and stream sizes
 * it records (which the caller checked against the archive); NULL or why
 * it is refused. */
static const char *sidecar_seek(const struct wsnap_sidecar *sc,
				struct wsnap_seek_table **out)
{
	const char *why = NULL;

	if (wsnap_ixf_seek_load(&sc->v, sc->f[S_ARCHIVE_SIZE],
				sc->f[S_STREAM_BYTES], out, &why) != 0)
		return why;
	if (*out &&
	    (*out)->kind != seek_kind_of(wsnap_sidecar_compression(sc))) {
		wsnap_seek_table_free(*out);
		*out = NULL;
		return "seek table of another compression";
	}
	return NULL;
}

enum wsnap_status wsnap_sidecar_index(const struct wsnap_sidecar *sc,
				      const struct wsnap_policy *policy,
				      uint64_t stream_bytes,
				      struct wsnap_index **out,
				      struct wsnap_error *err)
{
	struct feed fd = {.sc = sc, .stream_bytes = stream_bytes};
	struct wsnap_builder *b = NULL;
	struct wsnap_index *idx = NULL;
	unsigned char *pol = NULL;
	const char *why = NULL;
	size_t plen;
	uint64_t i;
	enum wsnap_status st;

	*out = NULL;
	fd.dfirst = malloc((size_t)(sc->f[S_NMEMBERS] + 1) * sizeof(uint64_t));
	if (!fd.dfirst)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	st = wsnap_builder_new(&b, policy, err);
	for (i = 0; st == WSNAP_OK && i < sc->f[S_NMEMBERS]; i++) {
		struct wsnap_raw_member m;

		why = member_at(&fd, i, &m);
		if (why)
			break;
		st = wsnap_builder_add(b, &m, err);
	}
	if (st == WSNAP_OK && !why && fd.digest != sc->f[S_NDIGESTS])
		why = "too many digests";
	if (st != WSNAP_OK || why) {
		wsnap_builder_free(b);
		goto out;
	}
	st = wsnap_builder_finish(b, &idx, err);
	if (st != WSNAP_OK)
		goto out;
	idx->stats.stream_bytes = sc->f[S_STREAM_BYTES];
	idx->stats.input_bytes = sc->f[S_INPUT_BYTES];
	idx->stats.compression = wsnap_sidecar_compression(sc);
	why = sidecar_seek(sc, &idx->seek);
	if (why)
		goto out;
	pol = ixf_policy_bytes(policy, &plen);
	if (!pol || !attach_digests(idx, sc, fd.dfirst)) {
		st = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (plen == sc->f[S_POLICY_LEN] && !memcmp(pol, sc->policy, plen) &&
	    !as_claimed(idx, sc->f))
		why = "its members do not give the index it claims";
out:
	if (st == WSNAP_OK && why)
		st = invalid(sc, err, why);
	if (st == WSNAP_OK) {
		*out = idx;
		idx = NULL;
	}
	wsnap_index_free(idx);
	free(pol);
	free(fd.sp);
	free(fd.dfirst);
	return st;
}
