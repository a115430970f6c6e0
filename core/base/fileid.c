/* SPDX-License-Identifier: MIT */
/* File identities (fileid.h). */
#include "fileid.h"

#include <errno.h>
#include <string.h>

#define NS_PER_SEC INT64_C(1000000000)
/* Sleeps while settling: at least one, at most this many milliseconds. */
#define SETTLE_STEP_MAX_NS 100000000L
#define SETTLE_STEP_MIN_NS 1000000L

void wsnap_fileid_from_stat(const struct stat *st, struct wsnap_fileid *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = (int64_t)st->st_size;
	id->mtime = st->st_mtim;
	id->ctime = st->st_ctim;
}

int wsnap_fileid_get(int fd, struct wsnap_fileid *id)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		memset(id, 0, sizeof(*id));
		return -errno;
	}
	wsnap_fileid_from_stat(&st, id);
	return 0;
}

bool wsnap_fileid_same(const struct wsnap_fileid *a,
		       const struct wsnap_fileid *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* The granule a ctime with these nanoseconds was probably rounded to. */
static int64_t granule_ns(int64_t nsec)
{
	int64_t g = 1;

	if (nsec == 0)
		return 2 * NS_PER_SEC;
	while (g < NS_PER_SEC / 10 && nsec % (g * 10) == 0)
		g *= 10;
	return g;
}

/* How long after now a change could still keep id's ctime: 0 if never. */
static int64_t racy_ns(const struct wsnap_fileid *id,
		       const struct timespec *now)
{
	int64_t d; /* now - ctime, in nanoseconds */

	/* compared before subtracting: ctime may be anything */
	if (id->ctime.tv_sec < now->tv_sec - 3 ||
	    id->ctime.tv_sec > now->tv_sec + 2)
		return 0;
	d = (int64_t)(now->tv_sec - id->ctime.tv_sec) * NS_PER_SEC +
	    (now->tv_nsec - id->ctime.tv_nsec);
	if (d < -NS_PER_SEC)
		return 0; /* dated ahead of this clock */
	return d < granule_ns(id->ctime.tv_nsec)
		       ? granule_ns(id->ctime.tv_nsec) - d
		       : 0;
}

bool wsnap_fileid_racy(const struct wsnap_fileid *id,
		       const struct timespec *now)
{
	return racy_ns(id, now) > 0;
}

static long elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000 +
	       (b->tv_nsec - a->tv_nsec) / 1000000;
}

int wsnap_fileid_settle(int fd, struct wsnap_fileid *id)
{
	struct timespec start, now, step = {0, 0};
	int64_t wait;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		/* the clock first: a change after it is dated no earlier */
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		rc = wsnap_fileid_get(fd, id);
		if (rc)
			return rc;
		wait = racy_ns(id, &now);
		if (wait == 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (elapsed_ms(&start, &now) >= WSNAP_FILEID_SETTLE_MAX_MS)
			return -EBUSY;
		if (wait < SETTLE_STEP_MIN_NS)
			wait = SETTLE_STEP_MIN_NS;
		step.tv_nsec =
			(long)(wait < SETTLE_STEP_MAX_NS ? wait
							 : SETTLE_STEP_MAX_NS);
		nanosleep(&step, NULL);
	}
}
