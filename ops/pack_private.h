/* SPDX-License-Identifier: MIT */
/*
 * What the files of pack share (internal to ops/pack*.c): the plan of
 * step 1, the output sink, the feed file bytes go through, and the
 * read-ahead ring of pack_ring.c.
 */
#ifndef WSNAP_PACK_PRIVATE_H
#define WSNAP_PACK_PRIVATE_H

#include "archive_dl.h"
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tree.h"

struct plan_entry {
	const char *path; /* rel path, "" for the root; set by plan_build */
	const char *target;
	size_t path_off;
	size_t target_off;
	size_t path_len;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint16_t mode;
	uint8_t type; /* enum wsnap_raw_type */
};

struct plan {
	const char *label;
	struct wsnap_builder *builder;
	struct wsnap_index *idx;
	struct plan_entry *e;
	size_t n;
	size_t cap;
	char *arena;
	size_t used;
	size_t acap;
};

struct wsnap_fwriter;
struct sink {
	int fd;
	const char *label; /* OUT as the user named it */
	uint64_t bytes;
	int errnum;
	/* zstd and xz: wsnap's own seekable writer (frames.h) between
	 * libarchive's uncompressed tar and fd; NULL otherwise */
	struct wsnap_fwriter *fw;
};

/*
 * Where the bytes of files go: space() gives a buffer for at least want
 * bytes (NULL: stop, the consumer gave up), put() takes the n bytes read
 * into it. Directly into libarchive (struct direct), or through the queue of
 * the read-ahead thread (struct ahead).
 */
struct feed {
	char *(*space)(void *ctx, size_t want);
	enum wsnap_status (*put)(void *ctx, char *buf, size_t n,
				 struct wsnap_error *err);
	void *ctx;
};

/* ---- the read-ahead thread ----
 *
 * Opening and reading a hundred thousand small files is most of the system
 * time of a pack, libarchive's formatting and the output writes most of the
 * rest: a second thread reads the files, in the order they are written,
 * into a ring of AHEAD_RING bytes, while this one writes. Each piece read is
 * an item (its place in the ring); a file ends with an END item, an error
 * ends the queue with an ERROR item (the error in q->err). Memory:
 * AHEAD_RING bytes and AHEAD_ITEMS items. The writer sleeps until a batch
 * of AHEAD_BATCH items is there and the reader until half the ring is free,
 * so that small files do not cost a wake-up each.
 */
#define AHEAD_RING  (8u << 20)
#define AHEAD_ITEMS 4096u
#define AHEAD_BATCH 256u

enum ahead_kind { AHEAD_DATA, AHEAD_END, AHEAD_ERROR };

struct ahead_item {
	uint8_t kind;
	size_t off;   /* DATA: place in the ring */
	size_t len;   /* DATA: bytes */
	size_t waste; /* ring bytes skipped before off (a wrap) */
};

struct ahead {
	pthread_mutex_t mu;
	pthread_cond_t cv_writer;
	pthread_cond_t cv_reader;
	char *ring;
	size_t wpos;  /* where the reader writes next */
	size_t used;  /* ring bytes in items not yet written, waste included */
	size_t waste; /* skipped by the reservation not yet pushed */
	struct ahead_item q[AHEAD_ITEMS];
	uint32_t head;	/* next item to take */
	uint32_t count; /* items queued */
	bool stop;	/* the writer gave up */
	bool producing; /* the reader has not finished */
	bool writer_sleeps;
	bool reader_sleeps;
	struct wsnap_error err; /* with an ERROR item */
	/* the reader's */
	const struct plan *p;
	int root_fd;
};

/*
 * Reads the file of pe through the cursor: exactly pe->size bytes, then its
 * end (a size 0 file too), handing them to the feed (pack.c).
 */
enum wsnap_status wsnap_pack_read_file(const struct plan *p,
				       struct wsnap_tree_cursor *cur,
				       const struct plan_entry *pe,
				       const struct feed *f,
				       struct wsnap_error *err);

/* The plan entry of index node ino (the order the builder received them
 * in is the plan's); NULL when the two disagree (a bug). pack.c. */
const struct plan_entry *wsnap_pack_entry_of(const struct plan *p,
					     uint32_t ino);

/* The error of a failed libarchive write to the sink k (pack.c). */
enum wsnap_status wsnap_pack_write_fail(struct archive *a, const struct sink *k,
					struct wsnap_error *err);

/* Starts the read-ahead thread over p's files; false when it cannot (the
 * caller reads directly). */
bool wsnap_pack_ahead_start(struct ahead *q, pthread_t *th,
			    const struct plan *p, int root_fd);

/* Writer: the bytes of one file, from the queue into libarchive. */
enum wsnap_status wsnap_pack_ahead_write(struct ahead *q, struct archive *a,
					 const struct sink *k,
					 struct wsnap_error *err);

/* Stops the reader (if it still runs) and frees the queue. */
void wsnap_pack_ahead_stop(struct ahead *q, pthread_t th);

#endif
