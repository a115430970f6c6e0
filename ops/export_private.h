/* SPDX-License-Identifier: MIT */
/*
 * Shared by the files of the export (ops/export*.c) only; export.h is the
 * public API and states the invariants all of them keep.
 *
 *  export.c        entry point, the three passes of policy.md section 7,
 *                  errors and progress
 *  export_dirs.c   the parent cache: reaching directories from the root one
 *                  component at a time, never following a symlink; making
 *                  room for a leaf
 *  export_copy.c   regular files: their data (windows, buffers, holes, the
 *                  compressed input read again), mode and mtime
 *  export_pool.c   pass 1's files written on several threads
 *  export_fresh.c  a destination that does not exist: built beside it and
 *                  renamed into place; removing a tree
 *  export_case.c   destinations that fold case (7.7): the archive's
 *                  hazards, and probing the directories they lie in
 *
 * One struct exp is one export on one thread: its parent cache, buffers,
 * stats and error are its own. Pass 1's workers each have a struct exp of
 * their own over the shared index, destination root, data descriptor and
 * per-ino arrays (depth, created).
 */
#ifndef WSNAP_EXPORT_PRIVATE_H
#define WSNAP_EXPORT_PRIVATE_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "error.h"
#include "export.h"
#include "index.h"
#include "select.h"

#define DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Attempts at one leaf while another process keeps changing it. */
#define LEAF_RETRIES 16

struct exp_level {
	uint32_t ino;
	int fd; /* -1: not open (reopened on demand) */
};

struct exp_stream; /* export_copy.c */

/* A directory whose entries are not the same entries where names fold
 * (export_case.c): member is named in the rejection, other in its reason. */
struct exp_case {
	uint32_t member;
	uint32_t other;
};

struct exp {
	const struct wsnap_index *idx;
	const struct wsnap_export_opts *opts;
	struct wsnap_export_stats *st;
	struct wsnap_error *err;
	const char *label; /* the destination as the user named it */
	int rootfd;
	int datafd;
	bool use_openat2;
	bool use_copy_range;
	bool fresh; /* the root was created by this export */
	uint32_t count;
	uint32_t *depth; /* per ino */
	/* per ino: directory created by us; atomic because a pool worker
	 * sets it when it makes again a parent another process removed */
	_Atomic unsigned char *created;
	/* per ino: the hazard of a directory, or NULL when the archive has
	 * none (export_case.c); shared read-only by the pool's workers */
	struct exp_case *cases;
	uint32_t maxdepth;	 /* deepest node's depth */
	struct exp_level *stack; /* levels 0..maxdepth; 0 is the root */
	uint32_t top;		 /* deepest valid level */
	uint32_t ncached;	 /* open descriptors in stack, root excluded */
	uint32_t *chain;	 /* scratch: inos from a target up */
	char *buf;		 /* pread/pwrite fallback */
	char *win;		 /* read-ahead window of the data stream */
	uint64_t win_off;	 /* its offset in the data stream */
	size_t win_len;		 /* bytes valid in it */
	struct exp_stream *stream; /* compressed input, read again */
	struct wsnap_export_progress prog;
	uint64_t next_members;
	uint64_t next_bytes;
};

/* Whether node ino is written (opts->select). */
static inline bool exp_selected(const struct exp *x, uint32_t ino)
{
	return !x->opts || !x->opts->select ||
	       x->opts->select[ino] == WSNAP_SELECT_YES;
}

/* A node and the order it is written in (archive order, or depth). */
struct order_key {
	uint32_t key;
	uint32_t ino;
};

static inline const struct wsnap_node *node_of(const struct exp *x,
					       uint32_t ino)
{
	return wsnap_index_node(x->idx, ino);
}

/* The archived mtime of n, atime left alone (for futimens/utimensat). */
static inline void node_times(const struct wsnap_node *n, struct timespec ts[2])
{
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = (time_t)n->mtime_sec;
	ts[1].tv_nsec = (long)n->mtime_nsec;
}

/* ---- export.c -------------------------------------------------------- */

/* Sets x->err to an I/O error about DEST/rel (rel NULL or "" is DEST
 * itself); returns WSNAP_IO. */
enum wsnap_status wsnap_export_fail_io(struct exp *x, int errnum,
				       const char *rel, const char *what);

/* Calls the progress callback when enough was done since the last call,
 * or always when final. */
void wsnap_export_progress_tick(struct exp *x, bool final);

/* Before each member: WSNAP_IO 'interrupted' (EINTR) when the caller has
 * asked us to stop, else WSNAP_OK. */
enum wsnap_status wsnap_export_check_cancel(struct exp *x);

/* Exports idx into the directory open on rootfd (not closed); fresh says
 * that this export created it. label names rootfd in messages. */
enum wsnap_status wsnap_export_at(const struct wsnap_index *idx, int rootfd,
				  const char *label, bool fresh,
				  const struct wsnap_export_opts *opts,
				  struct wsnap_export_stats *stats,
				  struct wsnap_error *err);

/* ---- export_dirs.c --------------------------------------------------- */

/* Allocates x's parent cache (levels 0..x->maxdepth) with the root at
 * level 0. Returns 0, or -1 when out of memory (the caller reports it; the
 * cache is then released safely). */
int wsnap_export_cache_init(struct exp *x);

/* Closes the cached descriptors (never the root's) and frees the cache;
 * harmless on a cache never allocated. */
void wsnap_export_cache_release(struct exp *x);

/*
 * The descriptor of directory ino (owned by the cache, valid until the
 * next call), reached from the root without following symlinks, creating
 * missing directories when create is set. member names the node being
 * exported, for messages. -1 with x->err set on failure.
 */
int wsnap_export_dir_fd(struct exp *x, uint32_t ino,
			const struct wsnap_node *member, bool create);

/* Pass 1, directory member ino: keeps a directory, replaces anything else.
 * Leaves its descriptor on top of the cache. */
enum wsnap_status wsnap_export_put_dir(struct exp *x, uint32_t ino);

/*
 * Makes room for non-directory leaf n in dirfd: unlinks whatever
 * non-directory is there. Returns WSNAP_OK (also when it vanished
 * meanwhile), the 'destination directory already exists' rejection, or
 * WSNAP_IO.
 */
enum wsnap_status wsnap_export_clear_leaf(struct exp *x, int dirfd,
					  const struct wsnap_node *n);

/* ---- export_copy.c --------------------------------------------------- */

/* Allocates x's copy buffer and read-ahead window (empty). Returns 0, or
 * -1 when out of memory (the caller reports it; the buffers are then
 * released safely). */
int wsnap_export_copy_init(struct exp *x);

/* Frees what wsnap_export_copy_init and wsnap_export_stream_open made. */
void wsnap_export_copy_release(struct exp *x);

/* Makes x read file data from the compressed archive open on fd,
 * decompressed again from its start (x->stream). */
enum wsnap_status wsnap_export_stream_open(struct exp *x, int fd);

/* Pass 1, regular file ino: created, filled, then its mode and mtime. */
enum wsnap_status wsnap_export_put_file(struct exp *x, uint32_t ino);

/* ---- export_pool.c --------------------------------------------------- */

/* How many threads should write pass 1's nfiles files (1: this one). */
unsigned wsnap_export_pool_workers(const struct exp *x, uint32_t nfiles);

/* Writes the files (keys in archive order, their parents already made) on
 * nworkers threads, the calling one included; the error is that of the
 * earliest failing file in archive order. */
enum wsnap_status wsnap_export_pool_write(struct exp *x,
					  const struct order_key *files,
					  uint32_t nfiles, unsigned nworkers);

/* ---- export_case.c -------------------------------------------------- */

/* Finds the archive's hazards (x->cases) and, when there are any, turns
 * openat2 off and probes the root: WSNAP_OK, the 'destination folds case'
 * rejection, or WSNAP_IO (out of memory). */
enum wsnap_status wsnap_export_case_init(struct exp *x);

/* fd, a descriptor just taken of directory ino; or -1 (fd closed, x->err
 * set to the rejection) when ino is a hazard and fd folds. */
int wsnap_export_case_check(struct exp *x, int fd, uint32_t ino);

/* ---- export_fresh.c -------------------------------------------------- */

/* Exports idx to dest, which does not exist (path: a writable copy of
 * dest without trailing slashes), under a temporary name beside it. */
enum wsnap_status wsnap_export_fresh(const struct wsnap_index *idx,
				     const char *dest, char *path,
				     const struct wsnap_export_opts *opts,
				     struct wsnap_export_stats *stats,
				     struct wsnap_error *err);

#endif
