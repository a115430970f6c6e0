/* SPDX-License-Identifier: MIT */
/*
 * pack's read-ahead ring (pack_private.h): a second thread reads the files
 * in the order they are written while the calling thread formats and
 * writes them. Invariants: one reader, one writer; the ring's bytes and the
 * item queue are guarded by mu; memory is AHEAD_RING bytes and AHEAD_ITEMS
 * items whatever the file sizes.
 */
#include "pack_private.h"

#include <stdlib.h>
#include <string.h>

static void wake_writer(struct ahead *q)
{
	if (q->writer_sleeps) {
		q->writer_sleeps = false;
		pthread_cond_signal(&q->cv_writer);
	}
}

static void wake_reader(struct ahead *q)
{
	if (q->reader_sleeps) {
		q->reader_sleeps = false;
		pthread_cond_signal(&q->cv_reader);
	}
}

/* Reader (mu held): sleeps until woken; wakes a sleeping writer first, so
 * that the two never both sleep. */
static void reader_sleep(struct ahead *q)
{
	wake_writer(q);
	q->reader_sleeps = true;
	while (q->reader_sleeps && !q->stop)
		pthread_cond_wait(&q->cv_reader, &q->mu);
}

/* Reader: a contiguous place for want bytes; NULL when the writer stopped. */
static char *ahead_space(void *ctx, size_t want)
{
	struct ahead *q = ctx;
	char *buf = NULL;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		size_t room = AHEAD_RING - q->wpos;
		size_t need = want <= room ? want : room + want;

		if (q->stop)
			break;
		/* two items are kept for an END and an ERROR */
		if (q->used + need <= AHEAD_RING &&
		    q->count + 3 <= AHEAD_ITEMS) {
			if (want > room) {
				q->waste += room;
				q->used += room;
				q->wpos = 0;
			}
			buf = q->ring + q->wpos;
			break;
		}
		reader_sleep(q);
	}
	pthread_mutex_unlock(&q->mu);
	return buf;
}

/* Reader: queues an item (DATA: len bytes at wpos). */
static void ahead_push(struct ahead *q, uint8_t kind, size_t len)
{
	struct ahead_item *it;

	pthread_mutex_lock(&q->mu);
	while (!q->stop && q->count == AHEAD_ITEMS)
		reader_sleep(q);
	if (!q->stop) {
		it = &q->q[(q->head + q->count) % AHEAD_ITEMS];
		it->kind = kind;
		it->off = q->wpos;
		it->len = kind == AHEAD_DATA ? len : 0;
		it->waste = q->waste;
		q->waste = 0;
		q->wpos += it->len;
		q->used += it->len;
		q->count++;
		if (q->count >= AHEAD_BATCH || kind == AHEAD_ERROR)
			wake_writer(q);
	}
	pthread_mutex_unlock(&q->mu);
}

static enum wsnap_status ahead_put(void *ctx, char *buf, size_t n,
				   struct wsnap_error *err)
{
	ahead_push(ctx, AHEAD_DATA, n);
	return WSNAP_OK;
}

static void *ahead_main(void *arg)
{
	struct ahead *q = arg;
	const struct plan *p = q->p;
	struct feed f = {ahead_space, ahead_put, q};
	struct wsnap_tree_cursor *cur = NULL;
	uint32_t ino, count = wsnap_index_count(p->idx);
	enum wsnap_status s;

	s = wsnap_tree_cursor_new(&cur, q->root_fd, p->label, &q->err);
	for (ino = WSNAP_ROOT_INO; ino <= count && s == WSNAP_OK; ino++) {
		const struct plan_entry *pe = wsnap_pack_entry_of(p, ino);

		/* the writer checks the plan itself */
		if (!pe || pe->type != WSNAP_RAW_FILE)
			continue;
		s = wsnap_pack_read_file(p, cur, pe, &f, &q->err);
		if (s == WSNAP_OK)
			ahead_push(q, AHEAD_END, 0);
	}
	if (s != WSNAP_OK)
		ahead_push(q, AHEAD_ERROR, 0);
	wsnap_tree_cursor_free(cur);
	pthread_mutex_lock(&q->mu);
	q->producing = false;
	wake_writer(q);
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

/* Writer: the next item, waiting for a batch or the reader's end. */
static struct ahead_item ahead_take(struct ahead *q)
{
	struct ahead_item it;

	pthread_mutex_lock(&q->mu);
	if (!q->count) {
		q->writer_sleeps = true;
		while (q->writer_sleeps && q->producing && !q->reader_sleeps)
			pthread_cond_wait(&q->cv_writer, &q->mu);
		q->writer_sleeps = false;
	}
	if (!q->count) {
		/* the reader ended without an item for this file: a bug */
		memset(&it, 0, sizeof(it));
		it.kind = AHEAD_ERROR;
		wsnap_error_io(&q->err, 0, q->p->label,
			       "directory and index disagree");
	} else {
		it = q->q[q->head];
	}
	pthread_mutex_unlock(&q->mu);
	return it;
}

/* Writer: gives back the item taken (and its ring bytes). */
static void ahead_done(struct ahead *q, const struct ahead_item *it)
{
	pthread_mutex_lock(&q->mu);
	q->head = (q->head + 1) % AHEAD_ITEMS;
	q->count--;
	q->used -= it->len + it->waste;
	if (q->used <= AHEAD_RING / 2 && q->count <= AHEAD_ITEMS / 2)
		wake_reader(q);
	pthread_mutex_unlock(&q->mu);
}

/* Writer: the bytes of one file, from the queue into libarchive. */
enum wsnap_status wsnap_pack_ahead_write(struct ahead *q, struct archive *a,
					 const struct sink *k,
					 struct wsnap_error *err)
{
	for (;;) {
		struct ahead_item it = ahead_take(q);

		if (it.kind == AHEAD_END) {
			ahead_done(q, &it);
			return WSNAP_OK;
		}
		if (it.kind == AHEAD_ERROR) {
			*err = q->err;
			return err->status ? err->status : WSNAP_IO;
		}
		if (archive_write_data(a, q->ring + it.off, it.len) !=
		    (la_ssize_t)it.len)
			return wsnap_pack_write_fail(a, k, err);
		ahead_done(q, &it);
	}
}

/* Starts the read-ahead thread; false when it cannot (read directly). */
bool wsnap_pack_ahead_start(struct ahead *q, pthread_t *th,
			    const struct plan *p, int root_fd)
{
	memset(q, 0, sizeof(*q));
	q->p = p;
	q->root_fd = root_fd;
	q->producing = true;
	q->ring = malloc(AHEAD_RING);
	if (!q->ring)
		return false;
	if (pthread_mutex_init(&q->mu, NULL) != 0)
		goto fail_ring;
	if (pthread_cond_init(&q->cv_writer, NULL) != 0)
		goto fail_mu;
	if (pthread_cond_init(&q->cv_reader, NULL) != 0)
		goto fail_cv;
	if (pthread_create(th, NULL, ahead_main, q) == 0)
		return true;
	pthread_cond_destroy(&q->cv_reader);
fail_cv:
	pthread_cond_destroy(&q->cv_writer);
fail_mu:
	pthread_mutex_destroy(&q->mu);
fail_ring:
	free(q->ring);
	q->ring = NULL;
	return false;
}

/* Stops the reader (if it still runs) and frees the queue. */
void wsnap_pack_ahead_stop(struct ahead *q, pthread_t th)
{
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->cv_reader);
	pthread_mutex_unlock(&q->mu);
	pthread_join(th, NULL);
	pthread_cond_destroy(&q->cv_reader);
	pthread_cond_destroy(&q->cv_writer);
	pthread_mutex_destroy(&q->mu);
	free(q->ring);
}
