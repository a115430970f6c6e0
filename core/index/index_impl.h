/* SPDX-License-Identifier: MIT */
/*
 * The layout of struct wsnap_index, shared by index.c (the read side and
 * the freezing of a tree into an index) and the policy engine
 * (core/policy/engine.c fills the tree, resolve.c and engine.c check the
 * frozen index). Internal to core: nothing outside core/ includes this.
 */
#ifndef WSNAP_INDEX_IMPL_H
#define WSNAP_INDEX_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "arena.h"
#include "error.h"
#include "fileid.h"
#include "hash.h"
#include "index.h"

/* One data run of a sparse file: logical range and where its bytes start
 * relative to the member's data offset (runs are stored back to back). */
struct wsnap_index_run {
	uint64_t logical;
	uint64_t length;
	uint64_t stored;
};

/* The runs of one sparse file: runs[first .. first + count). */
struct wsnap_index_sparse {
	size_t first;
	size_t count;
};

struct wsnap_index {
	struct wsnap_node *nodes; /* nodes[ino - 1], exactly count of them */
	uint32_t count;
	uint32_t *children; /* count - 1 inos, grouped by parent, by name */
	uint32_t *buckets;  /* (parent ino, name) hash; 0 ends a chain */
	uint32_t mask;	    /* buckets - 1 (a power of two minus one) */
	struct wsnap_hash_key key;
	char *paths; /* every node's path, NUL-terminated, exact size */
	size_t paths_bytes;
	struct wsnap_arena targets; /* every symlink target, NUL-terminated */
	struct wsnap_index_run *runs;
	size_t nruns;
	struct wsnap_index_sparse *sparse; /* node->sparse is 1-based in it */
	size_t nsparse;
	struct wsnap_index_stats stats;
	/* symlinks whose folded resolution differs (resolve.c, at most one
	 * per directory) */
	struct wsnap_index_case_dep *case_deps;
	size_t ncase_deps;
	/* data (wsnap_index_attach_data) */
	int data_fd;
	bool data_spilled;    /* data_fd is our own spill file */
	bool data_stat_valid; /* data_id was taken */
	struct wsnap_fileid data_id;
	/* or the data through a stream (stream.h), data_fd then -1 */
	struct wsnap_stream *stream;
	/* the seek table of a compressed archive while no stream holds it
	 * (built without keep_data, or loaded from an index file and not
	 * attached yet): written into index files */
	struct wsnap_seek_table *seek;
	/* loaded from a cache entry (indexfile.c): the private mapping the
	 * tables point into, unmapped instead of freeing them, but for the
	 * nodes, in an anonymous mapping of nodes_map_len bytes of their own */
	void *map;
	size_t map_len;
	size_t nodes_map_len;
	const char *map_targets; /* the symlink targets there (the arena
				  * 'targets' is empty) */
	size_t map_targets_bytes;
	/* loaded from a sidecar (sidecar.c): digests of the data, or NULL */
	struct wsnap_index_digests *digests;
};

struct wsnap_index_digests;

/*
 * Makes idx read its data in place through seek table t from the
 * compressed archive on fd (a seekable stream, seek.h, whose span cache
 * holds at most cache_bytes, 0 the default). Takes over fd and t, also on
 * failure. Returns 0, -EINVAL (t's stream is not the one idx records),
 * -ENOMEM, or the error of identifying fd.
 */
struct wsnap_seek_table;
int wsnap_index_attach_seekable(struct wsnap_index *idx, int fd,
				struct wsnap_seek_table *t, size_t cache_bytes);

/* The seek table of idx: the one it keeps or its stream's; NULL. */
const struct wsnap_seek_table *
wsnap_index_seek_table(const struct wsnap_index *idx);

/*
 * Has idx's stream, if it keeps what it fetches (stream.h set_data_check),
 * check the digests of every chunk that arrives whole (sidecar.c
 * check_filled): no-op without digests or such a stream, or without
 * memory (reads then hash by themselves). Before the first read.
 */
void wsnap_index_digests_watch(struct wsnap_index *idx);

/* Stops and joins the verify-ahead thread of d (sidecar.c), if one runs:
 * before what it reads (the data descriptor, the stream) goes. NULL does
 * nothing. */
void wsnap_index_digests_stop(struct wsnap_index_digests *d);

/* Frees a digest table (sidecar.c). NULL does nothing. */
void wsnap_index_digests_free(struct wsnap_index_digests *d);

/*
 * The tree the builder hands over: nodes[id - 1] for ids 1..count, id 1 the
 * root; parents have smaller ids than their children. In each node 'path'
 * is the entry's own name (not NUL-terminated necessarily), 'name_off' its
 * length, 'parent' the parent's id, 'mode' the header's mode bits, 'size'
 * the target length of a symlink, 'target' a NUL-terminated target in the
 * targets arena; the other public fields are final. The node array
 * (capacity at least count), runs and sparse tables and the targets arena
 * are taken over whatever the outcome (targets are not copied): the
 * pointers in the tree are set to NULL and the arena emptied. So is the
 * arena 'names' the names are in (if the caller gives it there): released
 * as soon as the full paths are written, before anything else is
 * allocated, which is when the build peaks.
 */
struct wsnap_index_tree {
	struct wsnap_node *nodes;
	uint32_t count;
	struct wsnap_index_run *runs;
	size_t nruns;
	struct wsnap_index_sparse *sparse;
	size_t nsparse;
	struct wsnap_arena targets;
	struct wsnap_arena names;
};

/*
 * What the policy engine charges against --max-index-size (doc/policy.md
 * section 5) for what it adds to the tree: per entry (member, implicit
 * directory, the root) WSNAP_INDEX_ENTRY_BYTES and its full rel path with a
 * NUL; per symlink its target with a NUL; per sparse file
 * WSNAP_INDEX_SPARSE_BYTES and WSNAP_INDEX_RUN_BYTES per run. That is at
 * least what the frozen index holds for it (node, children slot, lookup
 * buckets, paths, targets, maps); wsnap_index_stats' memory_bytes adds only
 * the index's fixed struct and the arena's chunk slack to the charge.
 */
#define WSNAP_INDEX_ENTRY_BYTES	 96u
#define WSNAP_INDEX_SPARSE_BYTES ((uint64_t)sizeof(struct wsnap_index_sparse))
#define WSNAP_INDEX_RUN_BYTES	 ((uint64_t)sizeof(struct wsnap_index_run))
/* node, one children slot, up to two lookup buckets (a power of two of
 * them, at least one per node) */
_Static_assert(sizeof(struct wsnap_node) + 3 * sizeof(uint32_t) <=
		       WSNAP_INDEX_ENTRY_BYTES,
	       "entry charge");

/*
 * Freezes a tree into an index: full paths, inos in bytewise path order,
 * children tables, the lookup hash, stats. The node array is permuted and
 * presented in place, so the peak stays near one node array. On success
 * *out owns the index and *inomap (malloc'd, the caller's to free: an array
 * of tree->count + 1 entries) gives each id's ino: inomap[id]. Errors:
 * WSNAP_IO (out of memory, a path of 4 GiB).
 */
enum wsnap_status wsnap_index_freeze(struct wsnap_index **out,
				     struct wsnap_index_tree *tree,
				     uint32_t **inomap,
				     struct wsnap_error *err);

/* Gives idx the n case dependencies of its symlinks (deps, malloc'd, now
 * the index's; NULL when n is 0) and counts them in its memory. */
void wsnap_index_set_case_deps(struct wsnap_index *idx,
			       struct wsnap_index_case_dep *deps, size_t n);

#endif
