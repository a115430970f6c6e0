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

#include "error.h"
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
	char *targets; /* every symlink target, NUL-terminated, exact size */
	size_t targets_bytes;
	struct wsnap_index_run *runs;
	size_t nruns;
	struct wsnap_index_sparse *sparse; /* node->sparse is 1-based in it */
	size_t nsparse;
	struct wsnap_index_stats stats;
	/* data (wsnap_index_attach_data) */
	int data_fd;
	bool data_stat_valid;
	dev_t data_dev;
	ino_t data_ino;
	off_t data_size;
	struct timespec data_mtime;
	/* loaded from a cache entry (indexfile.c): the private mapping the
	 * tables point into, unmapped instead of freeing them, but for the
	 * nodes, in an anonymous mapping of nodes_map_len bytes of their own */
	void *map;
	size_t map_len;
	size_t nodes_map_len;
	/* loaded from a sidecar (sidecar.c): digests of the data, or NULL */
	struct wsnap_index_digests *digests;
};

struct wsnap_index_digests;

/* Frees a digest table (sidecar.c). NULL does nothing. */
void wsnap_index_digests_free(struct wsnap_index_digests *d);

/*
 * The tree the builder hands over: nodes[id - 1] for ids 1..count, id 1 the
 * root; parents have smaller ids than their children. In each node 'path'
 * is the entry's own name (not NUL-terminated necessarily), 'name_off' its
 * length, 'parent' the parent's id, 'mode' the header's mode bits, 'size'
 * the target length of a symlink; the other public fields are final.
 * The node array (capacity at least count), runs and sparse tables are
 * taken over whatever the outcome: the pointers in the tree are set to
 * NULL. Names and targets stay the caller's.
 */
struct wsnap_index_tree {
	struct wsnap_node *nodes;
	uint32_t count;
	struct wsnap_index_run *runs;
	size_t nruns;
	struct wsnap_index_sparse *sparse;
	size_t nsparse;
};

/*
 * Freezes a tree into an index: full paths, inos in bytewise path order,
 * children tables, the lookup hash, stats. The node array is permuted and
 * presented in place, so the peak stays near one node array. On success
 * *out owns the index and inomap[id] (an array of tree->count + 1 entries)
 * gives each id's ino. Errors: WSNAP_IO (out of memory, a path of 4 GiB).
 */
enum wsnap_status wsnap_index_freeze(struct wsnap_index **out,
				     struct wsnap_index_tree *tree,
				     uint32_t *inomap, struct wsnap_error *err);

#endif
