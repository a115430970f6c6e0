/* SPDX-License-Identifier: MIT */
/*
 * The identity of a file as the kernel dates it: device, inode, size,
 * mtime and ctime, both to the nanosecond. wsnap reads an archive, judges
 * it, and later serves bytes from it by offset; those bytes are trusted only
 * while the file's identity is the one it had before it was first read.
 *
 * Why ctime: mtime can be put back by anyone who may write the file
 * (touch -d, rsync --inplace -t), size and inode survive an in-place
 * rewrite, but every write, truncation and utimensat() sets ctime to the
 * current time, which no unprivileged caller can choose.
 *
 * Why 'settled': a filesystem dates changes with a coarse clock (one tick,
 * a few milliseconds) and some round them further (whole seconds; FAT two).
 * A change made within the same granule as the last one leaves ctime as it
 * was. An identity is therefore taken only once the clock has moved past
 * the granule of its ctime (wsnap_fileid_settle): from then on, any change
 * gives the file a ctime it did not have.
 *
 * What no identity sees: a store through a shared writable mapping that
 * is already writable (the kernel dates the file when the page is first
 * made writable after writeback, and tmpfs never dates mmap stores), a
 * change on another NFS client, or the wall clock set back by root.
 */
#ifndef WSNAP_FILEID_H
#define WSNAP_FILEID_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

struct wsnap_fileid {
	uint64_t dev;
	uint64_t ino;
	int64_t size;
	struct timespec mtime;
	struct timespec ctime;
};

/* Fills *id from a stat result. */
void wsnap_fileid_from_stat(const struct stat *st, struct wsnap_fileid *id);

/* The identity of the open file fd now: 0, or -errno from fstat. */
int wsnap_fileid_get(int fd, struct wsnap_fileid *id);

/* Whether a and b are the same file unchanged: every field equal. */
bool wsnap_fileid_same(const struct wsnap_fileid *a,
		       const struct wsnap_fileid *b);

/*
 * Whether a change made after 'now' (CLOCK_REALTIME_COARSE read before id
 * was taken) could leave id's ctime as it is: 'now' has not yet passed the
 * granule of the ctime. The granule is guessed from the ctime itself: two
 * seconds for a whole second (a filesystem that keeps seconds, or FAT),
 * else the largest power of ten (up to 0.1 s) its nanoseconds are a
 * multiple of. A ctime more than a second in the future (the clock was set
 * back, or the file is dated by another machine) is not racy: a change now
 * would date it earlier.
 */
bool wsnap_fileid_racy(const struct wsnap_fileid *id,
		       const struct timespec *now);

/*
 * The identity of fd once it is settled (not racy), waiting for the clock
 * as needed (at most a tick when the file was just written, up to two
 * seconds on a filesystem of whole seconds). 0, -errno from fstat, or
 * -EBUSY when the file keeps changing for WSNAP_FILEID_SETTLE_MAX_MS.
 */
#define WSNAP_FILEID_SETTLE_MAX_MS 5000
int wsnap_fileid_settle(int fd, struct wsnap_fileid *id);

#endif
