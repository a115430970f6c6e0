/* SPDX-License-Identifier: MIT */
/*
 * wsnap_index_build (index.h): the reader feeds the builder member by
 * member, then the builder finishes the policy and the index gets the
 * data descriptor and the reader's figures.
 *
 * The two run as a pipeline on two threads: a reader thread parses the
 * archive (libarchive, our header checks) and copies each member into a
 * batch; this thread takes full batches in archive order and hands their
 * members to the builder. Reading is the larger half, so the policy costs
 * little wall time on a machine with a second core. The outcome is exactly
 * that of the sequential loop:
 *  - the builder sees every member in archive order, the members before a
 *    stream error included, so a rejection of an earlier member wins over a
 *    stream error the reader meets further on;
 *  - once the builder fails, the reader is told to stop: at its next batch,
 *    and through opts->cancel (reader.h) before the next chunk of the
 *    stream; its own outcome is ignored. A batch is handed over as soon as
 *    its members announce or carry BP_BATCH_DATA bytes of file data and
 *    extension headers, so that the reader does not decode much of the
 *    stream before the builder sees the members (10 KB of bzip2 declaring
 *    a 100 GiB member took 20 s of CPU before the rejection was reported;
 *    1000 members with 500 KB pax comments were all parsed before the
 *    first was refused).
 * Invariants:
 *  - the ring holds BP_SLOTS batches; the reader fills slot
 *    (head + count) % BP_SLOTS, never one of the count full ones, so a
 *    batch is touched by one thread at a time (handed over under the lock);
 *  - a batch's bytes never move once a member points into them: a member
 *    that does not fit ends the batch, and only an empty batch grows (to
 *    hold one member bigger than BP_BATCH_BYTES, which the reader bounds by
 *    WSNAP_READER_MAX_HEADER_BYTES). Memory is BP_SLOTS batches.
 * When no thread can be started, or opts->sequential asks so, the reader
 * calls the builder directly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "fileid.h"
#include "index.h"
#include "index_impl.h"
#include "indexfile.h"
#include "reader.h"
#include "seek.h"

#define BP_SLOTS	 4
#define BP_BATCH_MEMBERS 1024
#define BP_BATCH_BYTES	 (64u << 10)
#define BP_BATCH_DATA	 (1u << 20)
#define BP_ALIGN	 _Alignof(struct wsnap_sparse_run)

/* How many members ahead the builder asks for its table slot. */
#define BP_PREFETCH 4

struct bp_batch {
	struct wsnap_raw_member m[BP_BATCH_MEMBERS];
	size_t n;
	char *bytes; /* names, targets, sparse runs of m[0..n) */
	size_t used, cap;
	uint64_t data; /* file data and extension headers of m[0..n) */
};

struct bp {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bp_batch slots[BP_SLOTS];
	unsigned head, count; /* the full batches, in archive order */
	unsigned fill;	    /* the reader's batch: (head + count) % BP_SLOTS */
	bool stop;	    /* the builder failed: the reader stops */
	bool done;	    /* the reader returned: rd_status is set */
	atomic_bool cancel; /* stop, for the reader's read callbacks */

	/* the reader thread's side */
	int fd;
	struct wsnap_reader_opts opts; /* the caller's, with cancel */
	struct wsnap_reader_result res;
	enum wsnap_status rd_status;
	struct wsnap_error rd_err;
};

/* Bytes a member takes in a batch, or SIZE_MAX when that overflows. */
static size_t bp_need(const struct wsnap_raw_member *m)
{
	size_t link = m->linkname ? m->linkname_len + 1 : 0;
	size_t runs;

	if (m->nsparse > SIZE_MAX / sizeof(*m->sparse) - BP_ALIGN)
		return SIZE_MAX;
	runs = m->nsparse * sizeof(*m->sparse) + BP_ALIGN;
	if (m->name_len > SIZE_MAX - 1 - link - runs)
		return SIZE_MAX;
	return m->name_len + 1 + link + runs;
}

static char *bp_copy(struct bp_batch *b, const void *p, size_t len)
{
	char *at = b->bytes + b->used;

	memcpy(at, p, len);
	b->used += len;
	return at;
}

/* Hands the batch being filled to the builder; waits for a free slot.
 * Returns false when the builder has failed. */
static bool bp_publish(struct bp *p)
{
	bool go;

	pthread_mutex_lock(&p->lock);
	p->count++;
	p->fill = (p->fill + 1) % BP_SLOTS;
	pthread_cond_broadcast(&p->cond);
	while (p->count == BP_SLOTS && !p->stop)
		pthread_cond_wait(&p->cond, &p->lock);
	go = !p->stop;
	pthread_mutex_unlock(&p->lock);
	return go;
}

/* The reader's callback on the reader thread: copies m into the batch. */
static enum wsnap_status bp_put(void *ctx, const struct wsnap_raw_member *m,
				struct wsnap_error *err)
{
	struct bp *p = ctx;
	struct bp_batch *b = &p->slots[p->fill];
	struct wsnap_raw_member *c;
	size_t need = bp_need(m), pad;

	if (need == SIZE_MAX)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	if (b->n == BP_BATCH_MEMBERS || (b->n && need > b->cap - b->used)) {
		if (!bp_publish(p))
			return WSNAP_REJECTED; /* the builder's error stands */
		b = &p->slots[p->fill];
	}
	if (need > b->cap - b->used) {
		/* an empty batch: nothing points into its bytes yet */
		size_t cap = need > BP_BATCH_BYTES ? need : BP_BATCH_BYTES;
		char *bytes = malloc(cap);

		if (!bytes)
			return wsnap_error_io(err, ENOMEM, NULL,
					      "out of memory");
		free(b->bytes);
		b->bytes = bytes;
		b->cap = cap;
		b->used = 0;
	}
	c = &b->m[b->n++];
	*c = *m;
	c->name = bp_copy(b, m->name, m->name_len + 1);
	if (m->linkname)
		c->linkname = bp_copy(b, m->linkname, m->linkname_len + 1);
	if (m->nsparse) {
		pad = (BP_ALIGN - (uintptr_t)(b->bytes + b->used) % BP_ALIGN) %
		      BP_ALIGN;
		b->used += pad;
		c->sparse =
			(const struct wsnap_sparse_run *)(const void *)bp_copy(
				b, m->sparse, m->nsparse * sizeof(*m->sparse));
	} else {
		c->sparse = NULL;
	}
	/* the reader decodes the data next: let the builder judge first */
	b->data += m->size < BP_BATCH_DATA ? m->size : BP_BATCH_DATA;
	b->data += m->ext_bytes;
	if (b->data >= BP_BATCH_DATA && !bp_publish(p))
		return WSNAP_REJECTED; /* the builder's error stands */
	return WSNAP_OK;
}

static void *bp_reader(void *arg)
{
	struct bp *p = arg;

	p->rd_status = wsnap_reader_run(p->fd, &p->opts, bp_put, p, &p->res,
					&p->rd_err);
	pthread_mutex_lock(&p->lock);
	/* the members before an error are the builder's to judge too */
	if (!p->stop && p->slots[p->fill].n)
		p->count++;
	p->done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Feeds the builder the batches in order until the reader is done or the
 * builder fails. */
static enum wsnap_status bp_consume(struct bp *p, struct wsnap_builder *b,
				    struct wsnap_error *err)
{
	enum wsnap_status st = WSNAP_OK;

	for (;;) {
		struct bp_batch *batch;
		size_t i;

		pthread_mutex_lock(&p->lock);
		while (!p->count && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->count) {
			pthread_mutex_unlock(&p->lock);
			return WSNAP_OK;
		}
		batch = &p->slots[p->head];
		pthread_mutex_unlock(&p->lock);

		for (i = 0; i < batch->n && st == WSNAP_OK; i++) {
			/* the slot a later member probes (engine.h) */
			if (i + BP_PREFETCH < batch->n)
				wsnap_builder_prefetch(
					b, &batch->m[i + BP_PREFETCH]);
			st = wsnap_builder_add(b, &batch->m[i], err);
		}

		pthread_mutex_lock(&p->lock);
		batch->n = 0;
		batch->used = 0;
		batch->data = 0;
		p->head = (p->head + 1) % BP_SLOTS;
		p->count--;
		if (st != WSNAP_OK) {
			p->stop = true;
			atomic_store(&p->cancel, true);
		}
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (st != WSNAP_OK)
			return st;
	}
}

/*
 * Runs the reader into the builder, on two threads when one can be
 * started. On success *res holds the reader's result.
 */
static enum wsnap_status bp_run(int fd, const struct wsnap_reader_opts *opts,
				struct wsnap_builder *b,
				struct wsnap_reader_result *res,
				struct wsnap_error *err)
{
	struct bp *p;
	enum wsnap_status st;
	pthread_t tid;
	size_t i;

	if (opts && opts->sequential)
		return wsnap_reader_run(fd, opts, wsnap_builder_add, b, res,
					err);
	p = calloc(1, sizeof(*p));
	if (!p)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	p->fd = fd;
	if (opts)
		p->opts = *opts;
	atomic_init(&p->cancel, false);
	p->opts.cancel = &p->cancel;
	p->res.data_fd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&tid, NULL, bp_reader, p) != 0) {
		st = wsnap_reader_run(fd, opts, wsnap_builder_add, b, res, err);
		goto out;
	}
	st = bp_consume(p, b, err);
	pthread_join(tid, NULL);
	if (st == WSNAP_OK && p->rd_status != WSNAP_OK) {
		st = p->rd_status;
		*err = p->rd_err;
	}
	if (st != WSNAP_OK) {
		if (p->res.data_fd >= 0)
			close(p->res.data_fd);
		wsnap_seek_table_free(p->res.seek);
	} else {
		*res = p->res;
	}
out:
	for (i = 0; i < BP_SLOTS; i++)
		free(p->slots[i].bytes);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return st;
}

/*
 * A regular file is dated (fileid.h) before it is first read, and its
 * identity must be the same once it has been read and when the index takes
 * its data descriptor: otherwise the bytes judged may mix two versions of
 * the file, or the index would vouch for bytes it never saw. With
 * keep_data, dirty pages are written back first, so that the next store
 * through a shared writable mapping dates the file again.
 */
static enum wsnap_status build_date(int fd, bool keep_data,
				    struct wsnap_fileid *id, bool *dated,
				    struct wsnap_error *err)
{
	struct stat st;
	int rc;

	*dated = false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return WSNAP_OK; /* the reader reports what it cannot use */
	if (keep_data && fdatasync(fd) != 0) {
		/* not every file can be synced (EINVAL, EROFS): no loss */
	}
	rc = wsnap_fileid_settle(fd, id);
	if (rc == -EBUSY)
		return wsnap_error_io(err, EBUSY, NULL,
				      "archive keeps changing");
	if (rc)
		return wsnap_error_io(err, -rc, NULL, "cannot stat archive");
	*dated = true;
	return WSNAP_OK;
}

static bool build_same(int fd, const struct wsnap_fileid *then)
{
	struct wsnap_fileid now;

	return wsnap_fileid_get(fd, &now) == 0 && wsnap_fileid_same(&now, then);
}

/*
 * A compressed archive read in place: the index reads through a seekable
 * stream over the archive (the dup in res->data_fd) and the seek table,
 * identified as it was dated before the read (then, NULL when it could not
 * be dated: a file that is not regular never gets here).
 */
static enum wsnap_status build_seekable(struct wsnap_index *idx, int fd,
					struct wsnap_reader_result *res,
					const struct wsnap_fileid *then,
					const struct wsnap_reader_opts *opts,
					struct wsnap_index **out,
					struct wsnap_error *err)
{
	int dfd = res->data_fd, rc;

	res->data_fd = -1;
	wsnap_index_attach_data(idx, -1, res);
	rc = wsnap_index_attach_seekable(idx, dfd, res->seek,
					 opts->span_cache_bytes);
	res->seek = NULL;
	if (rc) {
		wsnap_index_free(idx);
		return wsnap_error_io(err, rc == -EINVAL ? EIO : -rc, NULL,
				      "cannot read archive in place");
	}
	/* the source took its identity after then: both are the same file
	 * as long as it is still then (a ctime never comes back) */
	if (!then || !build_same(fd, then)) {
		wsnap_index_free(idx);
		return wsnap_error_io(err, EIO, NULL,
				      "archive changed while it was read");
	}
	*out = idx;
	return WSNAP_OK;
}

enum wsnap_status wsnap_index_build(struct wsnap_index **out, int fd,
				    const struct wsnap_policy *policy,
				    const struct wsnap_reader_opts *opts,
				    struct wsnap_error *err)
{
	struct wsnap_reader_result res = {.data_fd = -1};
	struct wsnap_builder *b = NULL;
	struct wsnap_index *idx = NULL;
	struct wsnap_fileid then;
	enum wsnap_status st;
	bool dated;

	*out = NULL;
	st = build_date(fd, opts && opts->keep_data, &then, &dated, err);
	if (st != WSNAP_OK)
		return st;
	st = wsnap_builder_new(&b, policy, err);
	if (st != WSNAP_OK)
		return st;
	st = bp_run(fd, opts, b, &res, err);
	if (st != WSNAP_OK) {
		/* the reader keeps no descriptor nor table on failure */
		wsnap_builder_free(b);
		return st;
	}
	st = wsnap_builder_finish(b, &idx, err); /* frees b */
	if (st == WSNAP_OK && dated && !build_same(fd, &then))
		st = wsnap_error_io(err, EIO, NULL,
				    "archive changed while it was read");
	if (st != WSNAP_OK) {
		wsnap_index_free(idx);
		if (res.data_fd >= 0)
			close(res.data_fd);
		wsnap_seek_table_free(res.seek);
		return st;
	}
	if (res.seek && res.data_fd >= 0)
		return build_seekable(idx, fd, &res, dated ? &then : NULL, opts,
				      out, err);
	wsnap_index_attach_data(idx, res.data_fd, &res);
	/* kept for the index cache (a build without data) */
	idx->seek = res.seek;
	/* the archive itself serves the data: dated as it was before reading */
	if (dated && res.data_fd >= 0 && !res.spilled &&
	    (!idx->data_stat_valid ||
	     !wsnap_fileid_same(&idx->data_id, &then))) {
		wsnap_index_free(idx);
		return wsnap_error_io(err, EIO, NULL,
				      "archive changed while it was read");
	}
	/* a compressed stream whose seek table was given up: spilled now */
	if (opts && opts->keep_data && res.data_fd < 0) {
		struct wsnap_reader_opts ro = *opts;

		ro.no_seek = true;
		st = wsnap_index_attach_archive(idx, fd, &ro, err);
		if (st != WSNAP_OK) {
			wsnap_index_free(idx);
			return st;
		}
	}
	*out = idx;
	return WSNAP_OK;
}
