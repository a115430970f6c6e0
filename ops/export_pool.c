/* SPDX-License-Identifier: MIT */
/*
 * Pass 1's regular files written on several threads (policy.md 7.2, 7.5).
 *
 * The calling thread has already made every directory member (in archive
 * order) and the parent of every file (export.c), so that the file writers
 * only create leaves; then the files are written by several workers, each a
 * struct exp of its own (parent cache, window, buffers, stats, error) over
 * the shared index, destination root and data descriptor. Each worker takes
 * units in archive order; every file is still created O_EXCL at 0600,
 * filled, fchmod'ed and dated exactly as in the sequential pass, through
 * the same descriptor discipline, so the invariants of export.h hold per
 * operation whatever the interleaving. Files of one directory stay on one
 * worker (ext4 and most filesystems serialize creates in a directory). On
 * failure the workers stop after their current file and the error of the
 * earliest file in archive order is reported; files later in the archive
 * may have been written by then (a fresh destination is removed anyway).
 *
 * Sharing: the pool's lock guards the next unit and the stop flag; the
 * done counters are atomic; only worker 0 (the calling thread) touches the
 * parent struct exp while the others run (its progress), and the workers'
 * stats and errors are merged into it after they are joined. Everything
 * else the workers share is read-only (the index, depth[], the root and
 * data descriptors) but created[], atomic bytes, which a worker sets only
 * when it has to make again a parent that another process removed after
 * the calling thread made it. A compressed input read again, or a node
 * callback, means one worker (wsnap_export_pool_workers), so no stream is
 * shared.
 */
#include "export_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Pass 1 writes files on up to EXP_MAX_WORKERS threads (one per online
 * CPU) when there are at least EXP_PAR_MIN_FILES of them; a unit of work is
 * a run of consecutive files of one directory, at most EXP_UNIT_FILES. */
#define EXP_MAX_WORKERS	  4
#define EXP_PAR_MIN_FILES 1024u
#define EXP_UNIT_FILES	  4096u

struct exp_unit {
	uint32_t first, end; /* indexes into the file keys */
};

struct exp_pool {
	pthread_mutex_t lock;
	const struct order_key *files;
	const struct exp_unit *units;
	uint32_t nunits, next;
	bool stop;
	_Atomic uint64_t members_done, bytes_done;
};

struct exp_worker {
	struct exp x;
	struct exp_pool *pool;
	struct wsnap_export_stats st;
	struct wsnap_error err;
	enum wsnap_status status;
	uint32_t fail_order; /* archive order of the failing file */
	bool main;	     /* the calling thread: reports progress */
	struct exp *parent;
};

unsigned wsnap_export_pool_workers(const struct exp *x, uint32_t nfiles)
{
	unsigned want = x->opts ? x->opts->workers : 0;
	long n;

	if (x->stream || (x->opts && x->opts->node) || nfiles < 2)
		return 1;
	if (want)
		return want > EXP_MAX_WORKERS ? EXP_MAX_WORKERS : want;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (nfiles < EXP_PAR_MIN_FILES || n < 2)
		return 1;
	return n > EXP_MAX_WORKERS ? EXP_MAX_WORKERS : (unsigned)n;
}

/* A worker's own state over the shared parts of x. */
static enum wsnap_status exp_worker_init(struct exp_worker *w, struct exp *x)
{
	w->x = *x;
	w->x.st = &w->st;
	w->x.err = &w->err;
	/* what the worker owns starts empty, so that release is safe */
	w->x.stack = NULL;
	w->x.chain = NULL;
	w->x.buf = NULL;
	w->x.win = NULL;
	w->x.stream = NULL;
	w->st.openat2 = x->st->openat2;
	w->parent = x;
	if (wsnap_export_cache_init(&w->x) < 0 ||
	    wsnap_export_copy_init(&w->x) < 0)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	return WSNAP_OK;
}

static void exp_worker_release(struct exp_worker *w)
{
	wsnap_export_cache_release(&w->x);
	wsnap_export_copy_release(&w->x);
}

static void *exp_worker_run(void *arg)
{
	struct exp_worker *w = arg;
	struct exp_pool *pool = w->pool;
	enum wsnap_status s = WSNAP_OK;

	for (;;) {
		const struct exp_unit *u;
		uint32_t i;

		pthread_mutex_lock(&pool->lock);
		u = pool->stop || pool->next == pool->nunits
			    ? NULL
			    : &pool->units[pool->next++];
		pthread_mutex_unlock(&pool->lock);
		if (!u)
			break;
		for (i = u->first; i < u->end; i++) {
			const struct wsnap_node *n =
				node_of(&w->x, pool->files[i].ino);

			s = wsnap_export_check_cancel(&w->x);
			if (s == WSNAP_OK)
				s = wsnap_export_put_file(&w->x,
							  pool->files[i].ino);
			if (s != WSNAP_OK) {
				w->fail_order = pool->files[i].key;
				break;
			}
			w->st.members++;
			atomic_fetch_add(&pool->members_done, 1);
			atomic_fetch_add(&pool->bytes_done, n->size);
			if (w->main) {
				struct exp *p = w->parent;

				p->prog.members_done =
					atomic_load(&pool->members_done);
				p->prog.bytes_done =
					atomic_load(&pool->bytes_done);
				wsnap_export_progress_tick(p, false);
			}
		}
		if (s != WSNAP_OK) {
			pthread_mutex_lock(&pool->lock);
			pool->stop = true;
			pthread_mutex_unlock(&pool->lock);
			break;
		}
	}
	w->status = s;
	return NULL;
}

static void exp_stats_add(struct wsnap_export_stats *to,
			  const struct wsnap_export_stats *from)
{
	to->members += from->members;
	to->dirs += from->dirs;
	to->dirs_kept += from->dirs_kept;
	to->files += from->files;
	to->symlinks += from->symlinks;
	to->replaced += from->replaced;
	to->bytes += from->bytes;
	to->openat2 = to->openat2 && from->openat2;
	to->copy_range = to->copy_range || from->copy_range;
}

/* Splits the files (archive order) into units: runs of one directory. */
static struct exp_unit *exp_units(const struct exp *x,
				  const struct order_key *files, uint32_t n,
				  uint32_t *nunits)
{
	struct exp_unit *u = calloc(n ? n : 1, sizeof(*u));
	uint32_t i, k = 0;

	if (!u)
		return NULL;
	for (i = 0; i < n; i++) {
		uint32_t parent = node_of(x, files[i].ino)->parent;

		if (i == 0 || u[k - 1].end - u[k - 1].first >= EXP_UNIT_FILES ||
		    node_of(x, files[i - 1].ino)->parent != parent)
			u[k++] = (struct exp_unit){i, i};
		u[k - 1].end = i + 1;
	}
	*nunits = k;
	return u;
}

enum wsnap_status wsnap_export_pool_write(struct exp *x,
					  const struct order_key *files,
					  uint32_t nfiles, unsigned nworkers)
{
	struct exp_worker *w = calloc(nworkers, sizeof(*w));
	pthread_t tid[EXP_MAX_WORKERS];
	bool started[EXP_MAX_WORKERS] = {false};
	struct exp_pool pool = {.files = files};
	struct exp_worker *first = NULL;
	enum wsnap_status s = WSNAP_OK;
	unsigned i;

	if (!w)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	pool.units = exp_units(x, files, nfiles, &pool.nunits);
	if (!pool.units) {
		free(w);
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	}
	pthread_mutex_init(&pool.lock, NULL);
	atomic_init(&pool.members_done, x->prog.members_done);
	atomic_init(&pool.bytes_done, x->prog.bytes_done);
	for (i = 0; i < nworkers && s == WSNAP_OK; i++) {
		w[i].pool = &pool;
		w[i].main = i == 0;
		s = exp_worker_init(&w[i], x);
	}
	for (i = 1; i < nworkers && s == WSNAP_OK; i++)
		started[i] = pthread_create(&tid[i], NULL, exp_worker_run,
					    &w[i]) == 0;
	if (s == WSNAP_OK)
		exp_worker_run(&w[0]); /* with fewer threads, it does more */
	for (i = 1; i < nworkers; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
	for (i = 0; i < nworkers; i++) {
		exp_stats_add(x->st, &w[i].st);
		if (w[i].status != WSNAP_OK &&
		    (!first || w[i].fail_order < first->fail_order))
			first = &w[i];
		exp_worker_release(&w[i]);
	}
	if (s == WSNAP_OK && first) {
		*x->err = first->err;
		s = first->status;
	}
	x->prog.members_done = atomic_load(&pool.members_done);
	x->prog.bytes_done = atomic_load(&pool.bytes_done);
	pthread_mutex_destroy(&pool.lock);
	free((void *)pool.units);
	free(w);
	return s;
}
