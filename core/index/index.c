/* SPDX-License-Identifier: MIT */
/*
 * The member index (index.h): freezing the builder's tree into the
 * immutable index, lookups, and reads of member data.
 *
 * Invariants, beyond those of index.h:
 *  - a parent sorts before its children (its path is a proper prefix of
 *    theirs), so parent < ino for every ino but the root;
 *  - children[first_child .. first_child + nchildren) of a directory are its
 *    children in ascending ino order, which is ascending name order: they
 *    all share the prefix "dir/" and differ after it;
 *  - every node but the root is in exactly one chain of 'buckets', chosen by
 *    SipHash of its full path under a key drawn for this index; a lookup by
 *    path and one by (parent, name) hash the same bytes, so both are one
 *    probe;
 *  - memory: sizeof(struct wsnap_node) (72) per node, 4 in the children
 *    table, 4 to 8 for buckets (a power of two >= count), the path bytes
 *    exactly (NUL included), the targets in the arena the engine filled
 *    (taken over, not copied), the sparse maps; nothing per node is
 *    allocated on its own. At most what the engine charged for the tree
 *    (WSNAP_INDEX_ENTRY_BYTES and the rest, index_impl.h).
 */
#include "index_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "fsutil.h"
#include "grow.h"
#include "policy.h"
#include "seek.h"
#include "stream.h"

/* The paths being sorted: tree id i's path is paths + off[i]. */
struct sort_ctx {
	const char *paths;
	const uint64_t *off;
};

static int sort_id_cmp(const void *a, const void *b, void *ctx)
{
	const struct sort_ctx *c = ctx;

	return strcmp(c->paths + c->off[*(const uint32_t *)a],
		      c->paths + c->off[*(const uint32_t *)b]);
}

static uint32_t path_bucket(const struct wsnap_index *idx, const char *dir,
			    size_t dirlen, const char *name, size_t len)
{
	struct wsnap_hasher h;

	wsnap_hasher_init(&h, &idx->key);
	if (dirlen) {
		wsnap_hasher_update(&h, dir, dirlen);
		wsnap_hasher_update(&h, "/", 1);
	}
	wsnap_hasher_update(&h, name, len);
	return (uint32_t)wsnap_hasher_final(&h) & idx->mask;
}

static void index_release(struct wsnap_index *idx)
{
	wsnap_index_digests_free(idx->digests);
	/* a loaded index's case dependencies are its own copy (indexfile.c) */
	free(idx->case_deps);
	if (idx->map) {
		if (idx->nodes_map_len)
			munmap(idx->nodes, idx->nodes_map_len);
		munmap(idx->map, idx->map_len);
		return;
	}
	free(idx->nodes);
	free(idx->children);
	free(idx->buckets);
	free(idx->paths);
	wsnap_arena_release(&idx->targets);
	free(idx->runs);
	free(idx->sparse);
}

void wsnap_index_free(struct wsnap_index *idx)
{
	if (!idx)
		return;
	wsnap_index_digests_stop(idx->digests);
	if (idx->data_fd >= 0)
		close(idx->data_fd);
	wsnap_stream_free(idx->stream);
	wsnap_seek_table_free(idx->seek);
	index_release(idx);
	free(idx);
}

/* Presents a tree node (already at its ino) as an index node. */
static void present(struct wsnap_node *d)
{
	d->hash_next = 0;
	d->first_child = 0;
	switch (d->type) {
	case WSNAP_TYPE_DIR:
		d->mode = WSNAP_DIR_MODE;
		d->size = WSNAP_DIR_SIZE;
		d->offset = 0;
		d->nchildren = 0; /* counted by link_nodes */
		d->target = NULL;
		break;
	case WSNAP_TYPE_SYMLINK:
		d->mode = 0777;
		d->offset = 0;
		d->nchildren = 0;
		break;
	default:
		d->mode = (uint16_t)wsnap_policy_file_mode(d->mode);
		d->target = NULL;
		break;
	}
}

/* How many nodes ahead of its insert link_nodes hashes a node (a power
 * of two). */
#define LINK_AHEAD 16u

/* The bucket of a presented node: its full path is its parent's, '/' and
 * its name, the bytes a lookup by (parent, name) hashes. */
static uint32_t node_bucket(const struct wsnap_index *idx,
			    const struct wsnap_node *d)
{
	return path_bucket(idx, NULL, 0, d->path,
			   d->name_off + strlen(d->path + d->name_off));
}

/* Puts ino at the head of bucket b's chain. */
static void chain_insert(struct wsnap_index *idx, uint32_t ino, uint32_t b)
{
	idx->nodes[ino - 1].hash_next = idx->buckets[b];
	idx->buckets[b] = ino;
}

/* Children tables and the lookup hash of a frozen node array. */
static enum wsnap_status link_nodes(struct wsnap_index *idx,
				    struct wsnap_error *err)
{
	struct wsnap_node *nodes = idx->nodes;
	uint32_t n = idx->count, ino, pos = 0;
	uint32_t ahead[LINK_AHEAD];
	size_t nb = 1;

	/* a directory's offset is its count of subdirectories (present()
	 * zeroed it) */
	for (ino = 2; ino <= n; ino++) {
		struct wsnap_node *p = &nodes[nodes[ino - 1].parent - 1];

		p->nchildren++;
		p->offset += nodes[ino - 1].type == WSNAP_TYPE_DIR;
	}
	/* only a directory's word is a count of children: a file's is its
	 * sparse map reference (the union of index.h) */
	for (ino = 1; ino <= n; ino++) {
		nodes[ino - 1].first_child = pos;
		if (nodes[ino - 1].type == WSNAP_TYPE_DIR)
			pos += nodes[ino - 1].nchildren;
	}
	idx->children = malloc((n > 1 ? n - 1 : 1) * sizeof(uint32_t));
	while (nb < n)
		nb <<= 1;
	idx->buckets = wsnap_table_calloc(nb, sizeof(uint32_t));
	if (!idx->children || !idx->buckets)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	idx->mask = (uint32_t)(nb - 1);
	/* hash_next counts the children placed so far, then becomes the
	 * chain link */
	for (ino = 2; ino <= n; ino++) {
		struct wsnap_node *p = &nodes[nodes[ino - 1].parent - 1];

		idx->children[p->first_child + p->hash_next++] = ino;
	}
	for (ino = 1; ino <= n; ino++)
		nodes[ino - 1].hash_next = 0;
	/*
	 * The chains, inserted from ino n down to 2 (each chain then lists
	 * its inos ascending). A node's bucket is a random write into a
	 * table of 4 to 8 bytes per node: it is hashed and prefetched
	 * LINK_AHEAD nodes before its insert, which stays in the same
	 * order.
	 */
	for (ino = n; ino >= 2; ino--) {
		uint32_t b = node_bucket(idx, &nodes[ino - 1]);

		__builtin_prefetch(&idx->buckets[b], 1);
		if (n - ino >= LINK_AHEAD)
			chain_insert(idx, ino + LINK_AHEAD,
				     ahead[(ino + LINK_AHEAD) % LINK_AHEAD]);
		ahead[ino % LINK_AHEAD] = b;
	}
	for (ino = n <= LINK_AHEAD ? n : LINK_AHEAD + 1; ino >= 2; ino--)
		chain_insert(idx, ino, ahead[ino % LINK_AHEAD]);
	return WSNAP_OK;
}

static void compute_stats(struct wsnap_index *idx)
{
	struct wsnap_index_stats *st = &idx->stats;
	uint32_t ino;

	memset(st, 0, sizeof(*st));
	for (ino = 2; ino <= idx->count; ino++) {
		const struct wsnap_node *n = &idx->nodes[ino - 1];

		if (!(n->flags & WSNAP_NODE_IMPLICIT))
			st->members++;
		switch (n->type) {
		case WSNAP_TYPE_DIR:
			st->dirs++;
			if (n->flags & WSNAP_NODE_IMPLICIT)
				st->implicit++;
			break;
		case WSNAP_TYPE_FILE:
			st->files++;
			st->total_bytes += n->size;
			break;
		default:
			st->symlinks++;
			break;
		}
	}
	st->memory_bytes = sizeof(*idx) +
			   (uint64_t)idx->count * sizeof(struct wsnap_node) +
			   (uint64_t)(idx->count > 1 ? idx->count - 1 : 1) *
				   sizeof(uint32_t) +
			   ((uint64_t)idx->mask + 1) * sizeof(uint32_t) +
			   idx->paths_bytes + idx->targets.bytes +
			   idx->nruns * sizeof(struct wsnap_index_run) +
			   idx->nsparse * sizeof(struct wsnap_index_sparse);
	st->compression = "none";
}

/* Archives are often written in path order already (tar --sort=name, wsnap
 * pack): then one pass replaces the sort. */
static bool ids_sorted(const struct sort_ctx *c, uint32_t n)
{
	uint32_t id;

	for (id = 2; id <= n; id++)
		if (strcmp(c->paths + c->off[id - 1], c->paths + c->off[id]) >
		    0)
			return false;
	return true;
}

/*
 * Full paths of the tree into buf (NULL: only measure), in id order: id's
 * path at buf + off[id], off[count + 1] the end (off has count + 2 entries,
 * and each path's length is where the next one starts, less its NUL).
 * Returns the bytes needed, or 0 when a path would not fit a 32-bit name
 * offset. Measuring fills off; writing reads it.
 */
static size_t tree_paths(const struct wsnap_node *src, uint32_t count,
			 uint64_t *off, char *buf)
{
	uint64_t at = 0, l;
	uint32_t id;

	if (!buf) {
		/* lengths first (a parent's is known before its children's) */
		off[1] = 0;
		for (id = 2; id <= count; id++) {
			const struct wsnap_node *s = &src[id - 1];

			l = s->name_off;
			if (s->parent != 1)
				l += off[s->parent] + 1;
			if (l >= UINT32_MAX)
				return 0;
			off[id] = l;
		}
		/* then where each starts */
		for (id = 1; id <= count; id++) {
			l = off[id];
			off[id] = at;
			at += l + 1;
		}
		off[count + 1] = at;
		return (size_t)at;
	}
	buf[0] = '\0';
	for (id = 2; id <= count; id++) {
		const struct wsnap_node *s = &src[id - 1];
		char *p = buf + off[id];

		if (s->parent != 1) {
			l = off[s->parent + 1] - off[s->parent] - 1;
			memcpy(p, buf + off[s->parent], l);
			p += l;
			*p++ = '/';
		}
		memcpy(p, s->path, s->name_off);
		p[s->name_off] = '\0';
	}
	return (size_t)off[count + 1];
}

/* Turns perm (perm[k] = the id at rank k, 1..n) into its inverse in place,
 * following its cycles (done: a zeroed bitmap of n + 1 bits). */
static void invert(uint32_t *perm, uint32_t n, uint8_t *done)
{
	uint32_t i, j, prev, next;

	for (i = 1; i <= n; i++) {
		if (done[i / 8] & (1u << (i % 8)))
			continue;
		prev = i;
		j = perm[i];
		while (j != i) {
			next = perm[j];
			perm[j] = prev;
			done[j / 8] |= (uint8_t)(1u << (j % 8));
			prev = j;
			j = next;
		}
		perm[i] = prev;
		done[i / 8] |= (uint8_t)(1u << (i % 8));
	}
}

/* Moves nodes[id - 1] to nodes[inomap[id] - 1] for every id, following the
 * cycles of the permutation (done: a bitmap of count + 1 bits). */
static void permute(struct wsnap_node *nodes, uint32_t n,
		    const uint32_t *inomap, uint8_t *done)
{
	uint32_t start;

	for (start = 1; start <= n; start++) {
		struct wsnap_node carry, tmp;
		uint32_t id = start;

		if (done[start / 8] & (1u << (start % 8)))
			continue;
		carry = nodes[start - 1];
		do {
			uint32_t dst = inomap[id];

			done[id / 8] |= (uint8_t)(1u << (id % 8));
			tmp = nodes[dst - 1];
			nodes[dst - 1] = carry;
			carry = tmp;
			id = dst;
		} while (id != start);
	}
}

enum wsnap_status wsnap_index_freeze(struct wsnap_index **out,
				     struct wsnap_index_tree *tree,
				     uint32_t **inomap_out,
				     struct wsnap_error *err)
{
	uint32_t *inomap = NULL;
	uint32_t n = tree->count, id;
	uint64_t *off = NULL;
	uint8_t *done = NULL;
	struct sort_ctx sc;
	struct wsnap_index *idx;
	struct wsnap_node *shrunk;
	size_t total;
	enum wsnap_status st;

	*out = NULL;
	*inomap_out = NULL;
	idx = calloc(1, sizeof(*idx));
	if (!idx) {
		wsnap_arena_release(&tree->names);
		free(tree->nodes);
		free(tree->runs);
		free(tree->sparse);
		wsnap_arena_release(&tree->targets);
		tree->nodes = NULL;
		tree->runs = NULL;
		tree->sparse = NULL;
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	idx->data_fd = -1;
	idx->count = n;
	idx->nodes = tree->nodes;
	idx->runs = tree->runs;
	idx->nruns = tree->nruns;
	idx->sparse = tree->sparse;
	idx->nsparse = tree->nsparse;
	idx->targets = tree->targets;
	tree->nodes = NULL;
	tree->runs = NULL;
	tree->sparse = NULL;
	tree->targets.head = NULL;
	tree->targets.bytes = 0;
	wsnap_hash_key_init(&idx->key);

	/*
	 * Per node only the 8-byte offset of its path here: the ids are
	 * sorted in inomap itself and the order inverted there in place (a
	 * 16-byte sort entry and a length each cost 20 MB at 1,000,000).
	 */
	off = malloc(((size_t)n + 2) * sizeof(*off));
	if (!off)
		goto oom;
	total = tree_paths(idx->nodes, n, off, NULL);
	if (!total) {
		st = wsnap_error_io(err, ENAMETOOLONG, NULL, "path too long");
		goto out;
	}
	idx->paths = malloc(total);
	if (!idx->paths)
		goto oom;
	idx->paths_bytes = total;
	tree_paths(idx->nodes, n, off, idx->paths);
	/* the peak: from here on nodes name their full paths */
	wsnap_arena_release(&tree->names);
	inomap = malloc(((size_t)n + 1) * sizeof(*inomap));
	done = calloc((size_t)n / 8 + 1, 1);
	if (!inomap || !done)
		goto oom;
	sc.paths = idx->paths;
	sc.off = off;
	for (id = 1; id <= n; id++)
		inomap[id] = id;
	/* the root's "" sorts first */
	if (!ids_sorted(&sc, n))
		qsort_r(inomap + 1, n, sizeof(*inomap), sort_id_cmp, &sc);
	invert(inomap, n, done);
	memset(done, 0, (size_t)n / 8 + 1);
	permute(idx->nodes, n, inomap, done);
	free(done);
	done = NULL;
	for (id = 1; id <= n; id++) {
		struct wsnap_node *d = &idx->nodes[inomap[id] - 1];

		d->name_off =
			(uint32_t)(off[id + 1] - off[id] - 1) - d->name_off;
		d->path = idx->paths + off[id];
		d->parent = id == 1 ? 1 : inomap[d->parent];
		present(d);
	}
	free(off);
	off = NULL;
	shrunk = realloc(idx->nodes, (size_t)n * sizeof(*shrunk));
	if (shrunk)
		idx->nodes = shrunk;
	st = link_nodes(idx, err);
	if (st != WSNAP_OK)
		goto out;
	compute_stats(idx);
	*out = idx;
	idx = NULL;
	*inomap_out = inomap;
	inomap = NULL;
	goto out;
oom:
	st = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
out:
	wsnap_arena_release(&tree->names);
	free(inomap);
	free(off);
	free(done);
	wsnap_index_free(idx);
	return st;
}

uint32_t wsnap_index_count(const struct wsnap_index *idx)
{
	return idx ? idx->count : 0;
}

const struct wsnap_node *wsnap_index_node(const struct wsnap_index *idx,
					  uint32_t ino)
{
	if (!idx || ino < 1 || ino > idx->count)
		return NULL;
	return &idx->nodes[ino - 1];
}

/* s[0..len) equals the NUL-terminated z (s holds no NUL: checked). */
static bool same_text(const char *z, const char *s, size_t len)
{
	return strncmp(z, s, len) == 0 && z[len] == '\0';
}

uint32_t wsnap_index_lookup(const struct wsnap_index *idx, const char *path,
			    size_t len)
{
	uint32_t ino;
	size_t i;

	if (!idx)
		return 0;
	if (len == 0)
		return WSNAP_ROOT_INO;
	if (memchr(path, '\0', len))
		return 0;
	for (i = 0; i < len; i++)
		if (path[i] == '/' &&
		    (i == 0 || i + 1 == len || path[i + 1] == '/'))
			return 0;
	ino = idx->buckets[path_bucket(idx, NULL, 0, path, len)];
	for (; ino; ino = idx->nodes[ino - 1].hash_next)
		if (same_text(idx->nodes[ino - 1].path, path, len))
			return ino;
	return 0;
}

uint32_t wsnap_index_child(const struct wsnap_index *idx, uint32_t parent,
			   const char *name, size_t len)
{
	const struct wsnap_node *p = wsnap_index_node(idx, parent);
	uint32_t ino;

	if (!p || p->type != WSNAP_TYPE_DIR || len == 0 ||
	    memchr(name, '\0', len) || memchr(name, '/', len))
		return 0;
	ino = idx->buckets[path_bucket(idx, p->path, strlen(p->path), name,
				       len)];
	for (; ino; ino = idx->nodes[ino - 1].hash_next) {
		const struct wsnap_node *n = &idx->nodes[ino - 1];

		if (n->parent == parent &&
		    same_text(n->path + n->name_off, name, len))
			return ino;
	}
	return 0;
}

uint32_t wsnap_index_children(const struct wsnap_index *idx, uint32_t dir,
			      const uint32_t **children)
{
	const struct wsnap_node *d = wsnap_index_node(idx, dir);

	if (!d || d->type != WSNAP_TYPE_DIR) {
		*children = NULL;
		return 0;
	}
	*children = idx->children + d->first_child;
	return d->nchildren;
}

uint32_t wsnap_index_nsubdirs(const struct wsnap_index *idx, uint32_t dir)
{
	const struct wsnap_node *d = wsnap_index_node(idx, dir);

	/* at most nchildren: checked so when loaded (indexfile.c) */
	return d && d->type == WSNAP_TYPE_DIR ? (uint32_t)d->offset : 0;
}

void wsnap_index_stats(const struct wsnap_index *idx,
		       struct wsnap_index_stats *st)
{
	if (!idx) {
		memset(st, 0, sizeof(*st));
		st->compression = "none";
		return;
	}
	*st = idx->stats;
}

void wsnap_index_set_case_deps(struct wsnap_index *idx,
			       struct wsnap_index_case_dep *deps, size_t n)
{
	free(idx->case_deps);
	idx->case_deps = n ? deps : NULL;
	idx->ncase_deps = n;
	if (!n)
		free(deps);
	idx->stats.memory_bytes += n * sizeof(*deps);
}

size_t wsnap_index_case_deps(const struct wsnap_index *idx,
			     const struct wsnap_index_case_dep **deps)
{
	*deps = idx ? idx->case_deps : NULL;
	return idx ? idx->ncase_deps : 0;
}

/* Data access. */

void wsnap_index_attach_data(struct wsnap_index *idx, int fd,
			     const struct wsnap_reader_result *res)
{
	if (!idx) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (idx->data_fd >= 0 && idx->data_fd != fd)
		close(idx->data_fd);
	if (fd >= 0) {
		wsnap_stream_free(idx->stream);
		idx->stream = NULL;
	}
	idx->data_fd = fd;
	idx->data_spilled = res && res->spilled;
	idx->data_stat_valid = false;
	/*
	 * Our own unlinked spill file changes only by our hand; any other
	 * file is dated once the clock has passed its ctime (fileid.h).
	 */
	if (fd >= 0)
		idx->data_stat_valid =
			(idx->data_spilled
				 ? wsnap_fileid_get(fd, &idx->data_id)
				 : wsnap_fileid_settle(fd, &idx->data_id)) == 0;
	if (res) {
		idx->stats.stream_bytes = res->stream_bytes;
		idx->stats.input_bytes = res->input_bytes;
		idx->stats.zstd_table = res->zstd_table;
		if (res->compression)
			idx->stats.compression = res->compression;
	}
}

void wsnap_index_attach_stream(struct wsnap_index *idx, struct wsnap_stream *s)
{
	if (!idx) {
		wsnap_stream_free(s);
		return;
	}
	if (idx->data_fd >= 0)
		close(idx->data_fd);
	idx->data_fd = -1;
	idx->data_spilled = false;
	idx->data_stat_valid = false;
	if (idx->stream != s)
		wsnap_stream_free(idx->stream);
	idx->stream = s;
	wsnap_index_digests_watch(idx);
}

/* The seekable stream of t over src as idx's data; takes over both. */
static int attach_seek(struct wsnap_index *idx, struct wsnap_source *src,
		       struct wsnap_seek_table *t, size_t cache_bytes)
{
	struct wsnap_stream *s = NULL;
	int rc;

	if (t->stream_size != idx->stats.stream_bytes) {
		wsnap_source_free(src);
		wsnap_seek_table_free(t);
		return -EINVAL;
	}
	rc = wsnap_stream_seekable(src, t, cache_bytes, &s);
	if (rc)
		return rc;
	wsnap_index_attach_stream(idx, s);
	return 0;
}

void wsnap_index_set_span_cache(struct wsnap_index *idx, size_t bytes)
{
	if (idx)
		wsnap_stream_seek_set_cache(idx->stream, bytes);
}

int wsnap_index_attach_seekable(struct wsnap_index *idx, int fd,
				struct wsnap_seek_table *t, size_t cache_bytes)
{
	struct wsnap_source *src = NULL;
	int rc;

	rc = wsnap_source_file(fd, "", &src);
	if (rc) {
		wsnap_seek_table_free(t);
		return rc;
	}
	return attach_seek(idx, src, t, cache_bytes);
}

bool wsnap_index_has_seek_table(const struct wsnap_index *idx)
{
	return idx && idx->seek;
}

int wsnap_index_attach_seek_source(struct wsnap_index *idx,
				   struct wsnap_source *src, size_t cache_bytes)
{
	struct wsnap_seek_table *t = idx->seek;

	if (!t) {
		wsnap_source_free(src);
		return -ENOENT;
	}
	idx->seek = NULL;
	return attach_seek(idx, src, t, cache_bytes);
}

enum wsnap_status wsnap_index_seek_status(int rc, struct wsnap_error *err)
{
	if (rc == -EINVAL)
		return wsnap_error_io(err, EIO, NULL,
				      "archive changed since it was indexed");
	return rc ? wsnap_error_io(err, -rc, NULL,
				   "cannot read archive in place")
		  : WSNAP_OK;
}

const struct wsnap_seek_table *
wsnap_index_seek_table(const struct wsnap_index *idx)
{
	if (!idx)
		return NULL;
	return idx->seek ? idx->seek : wsnap_stream_seek_table(idx->stream);
}

bool wsnap_index_has_data(const struct wsnap_index *idx)
{
	return idx && (idx->data_fd >= 0 || idx->stream);
}

int wsnap_index_data_fd(const struct wsnap_index *idx)
{
	return idx ? idx->data_fd : -1;
}

bool wsnap_index_data_spilled(const struct wsnap_index *idx)
{
	return idx && idx->data_fd >= 0 && idx->data_spilled;
}

/*
 * No data descriptor is -EBADF; a descriptor whose file is no longer the
 * one recorded at attach time (other device, inode, size, mtime or ctime)
 * -EIO.
 */
int wsnap_index_data_check(const struct wsnap_index *idx)
{
	struct wsnap_fileid now;

	if (idx && idx->stream)
		return wsnap_stream_check(idx->stream);
	if (!idx || idx->data_fd < 0)
		return -EBADF;
	if (!idx->data_stat_valid ||
	    wsnap_fileid_get(idx->data_fd, &now) != 0 ||
	    !wsnap_fileid_same(&now, &idx->data_id))
		return -EIO;
	return 0;
}

/*
 * The extent returned starts at off itself (logical == off) and runs to the
 * end of the data run or hole that contains off.
 */
int wsnap_index_extent(const struct wsnap_index *idx, uint32_t ino,
		       uint64_t off, struct wsnap_extent *ext)
{
	const struct wsnap_node *n = wsnap_index_node(idx, ino);
	const struct wsnap_index_run *runs;
	size_t lo = 0, hi;

	if (!n || n->type != WSNAP_TYPE_FILE || off >= n->size)
		return -EINVAL;
	ext->logical = off;
	if (!(n->flags & WSNAP_NODE_SPARSE)) {
		ext->length = n->size - off;
		ext->physical = (int64_t)(n->offset + off);
		return 0;
	}
	runs = idx->runs + idx->sparse[n->sparse - 1].first;
	hi = idx->sparse[n->sparse - 1].count;
	/* the first run that ends after off (runs are sorted, disjoint) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[mid].logical + runs[mid].length <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	hi = idx->sparse[n->sparse - 1].count;
	if (lo < hi && runs[lo].logical <= off) {
		ext->length = runs[lo].logical + runs[lo].length - off;
		ext->physical = (int64_t)(n->offset + runs[lo].stored +
					  (off - runs[lo].logical));
	} else {
		ext->length = (lo < hi ? runs[lo].logical : n->size) - off;
		ext->physical = -1;
	}
	if (ext->length > n->size - off)
		ext->length = n->size - off;
	return 0;
}

/* Reads exactly len bytes at off of fd: 0, -EIO when the file ends first,
 * or -errno. */
ssize_t wsnap_index_read_stored(const struct wsnap_index *idx, void *buf,
				size_t len, uint64_t phys)
{
	size_t got;
	int e;

	if (!idx)
		return -EBADF;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (idx->stream) {
		ssize_t r, done = 0;

		while ((size_t)done < len) {
			r = idx->stream->ops->pread(
				idx->stream, (char *)buf + done,
				len - (size_t)done, phys + (uint64_t)done);
			if (r < 0)
				return r;
			if (r == 0)
				break;
			done += r;
		}
		return done;
	}
	if (idx->data_fd < 0)
		return -EBADF;
	if (phys > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	e = wsnap_pread_full(idx->data_fd, buf, len, phys, &got);
	return e ? -e : (ssize_t)got;
}

static int read_exact(const struct wsnap_index *idx, char *buf, size_t len,
		      int64_t off)
{
	ssize_t got = wsnap_index_read_stored(idx, buf, len, (uint64_t)off);

	if (got < 0)
		return (int)got;
	return (size_t)got < len ? -EIO : 0;
}

ssize_t wsnap_index_pread(const struct wsnap_index *idx, uint32_t ino,
			  void *buf, size_t len, uint64_t off)
{
	const struct wsnap_node *n = wsnap_index_node(idx, ino);
	size_t done = 0;
	int rc;

	if (!n || n->type != WSNAP_TYPE_FILE)
		return -EINVAL;
	rc = wsnap_index_data_check(idx);
	if (rc)
		return rc;
	if (off >= n->size)
		return 0;
	if (len > n->size - off)
		len = (size_t)(n->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		struct wsnap_extent ext;
		size_t chunk;

		rc = wsnap_index_extent(idx, ino, off + done, &ext);
		if (rc)
			return rc;
		chunk = ext.length < len - done ? (size_t)ext.length
						: len - done;
		if (ext.physical < 0)
			memset((char *)buf + done, 0, chunk);
		else if ((rc = wsnap_index_verify(
				  idx, ino, (uint64_t)ext.physical, chunk)) ||
			 (rc = read_exact(idx, (char *)buf + done, chunk,
					  ext.physical)))
			return rc;
		done += chunk;
	}
	/* what was read is what was judged only if nothing changed meanwhile */
	rc = wsnap_index_data_check(idx);
	if (rc)
		return rc;
	return (ssize_t)done;
}
