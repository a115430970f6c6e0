/* SPDX-License-Identifier: MIT */
/*
 * The folded view of an index (fold.h).
 *
 * Invariants:
 *  - a directory is read ("loaded") the first time it is asked about: each
 *    of its entries, in ino order, joins the group of its caseless key in
 *    that directory, or starts one. A group is represented by its first
 *    entry (the lowest ino), and only representatives are in the hash
 *    chains, so a look-up is one probe whatever the number of spellings;
 *  - the chains are keyed by SipHash of (directory, key) under a key drawn
 *    for this table, so names cannot be chosen to collide in it;
 *  - per node: next (chain), group (count << 1 | not-inert, for a
 *    representative), hi (the upper hash bits of a representative, which
 *    filter the chain before keys are compared), dir (0: not loaded, 1:
 *    loaded without a collision, else the first entry that collided).
 *    Everything is allocated in wsnap_fold_new; a look-up never allocates.
 */
#include "fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "casefold.h"
#include "hash.h"
#include "index_impl.h"

#define DIR_LOADED 1u

struct wsnap_fold {
	const struct wsnap_index *idx;
	struct wsnap_hash_key key;
	uint32_t *buckets;
	uint32_t mask;
	uint32_t *next, *group, *hi, *dir;
	uint32_t *qkey, *ckey, *scratch; /* the query's key, a candidate's */
};

enum wsnap_status wsnap_fold_new(struct wsnap_fold **out,
				 const struct wsnap_index *idx,
				 struct wsnap_error *err)
{
	size_t n = (size_t)idx->count + 1, nb = 1,
	       cap = WSNAP_CASEFOLD_CAP(WSNAP_FOLD_MAX_NAME);
	struct wsnap_fold *f = calloc(1, sizeof(*f));

	*out = NULL;
	while (nb < n)
		nb <<= 1;
	if (f) {
		f->buckets = calloc(nb, sizeof(uint32_t));
		f->next = calloc(n, sizeof(uint32_t));
		f->group = calloc(n, sizeof(uint32_t));
		f->hi = calloc(n, sizeof(uint32_t));
		f->dir = calloc(n, sizeof(uint32_t));
		f->qkey = malloc(cap * sizeof(uint32_t));
		f->ckey = malloc(cap * sizeof(uint32_t));
		f->scratch = malloc(cap * sizeof(uint32_t));
	}
	if (!f || !f->buckets || !f->next || !f->group || !f->hi || !f->dir ||
	    !f->qkey || !f->ckey || !f->scratch) {
		wsnap_fold_free(f);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	f->idx = idx;
	f->mask = (uint32_t)(nb - 1);
	wsnap_hash_key_init(&f->key);
	*out = f;
	return WSNAP_OK;
}

void wsnap_fold_free(struct wsnap_fold *f)
{
	if (!f)
		return;
	free(f->buckets);
	free(f->next);
	free(f->group);
	free(f->hi);
	free(f->dir);
	free(f->qkey);
	free(f->ckey);
	free(f->scratch);
	free(f);
}

static bool inert(const struct wsnap_node *n)
{
	return n->type != WSNAP_TYPE_SYMLINK &&
	       !(n->type == WSNAP_TYPE_DIR && n->nchildren > 0);
}

/* The representative of (dir, f->qkey[0..len)) with hash h, or 0. */
static uint32_t find(struct wsnap_fold *f, uint32_t dir, size_t len, uint64_t h)
{
	const struct wsnap_node *nodes = f->idx->nodes;
	uint32_t r;

	for (r = f->buckets[h & f->mask]; r; r = f->next[r]) {
		const struct wsnap_node *n = &nodes[r - 1];
		const char *name = wsnap_node_name(n);
		size_t cl;

		if (n->parent != dir || f->hi[r] != (uint32_t)(h >> 32))
			continue;
		cl = wsnap_casefold_key(f->ckey, f->scratch, name,
					strlen(name));
		if (cl == len &&
		    memcmp(f->ckey, f->qkey, len * sizeof(uint32_t)) == 0)
			return r;
	}
	return 0;
}

/* f->qkey = the key of name; its hash in dir. */
static uint64_t query(struct wsnap_fold *f, uint32_t dir, const char *name,
		      size_t len, size_t *klen)
{
	*klen = wsnap_casefold_key(f->qkey, f->scratch, name, len);
	return wsnap_hash_entry(&f->key, dir, f->qkey,
				*klen * sizeof(uint32_t));
}

static void load(struct wsnap_fold *f, uint32_t dir)
{
	const struct wsnap_node *nodes = f->idx->nodes;
	const uint32_t *kids;
	uint32_t nk = wsnap_index_children(f->idx, dir, &kids), i;

	f->dir[dir] = DIR_LOADED;
	for (i = 0; i < nk; i++) {
		const struct wsnap_node *n = &nodes[kids[i] - 1];
		const char *name = wsnap_node_name(n);
		size_t klen;
		uint64_t h = query(f, dir, name, strlen(name), &klen);
		uint32_t r = find(f, dir, klen, h), c = kids[i];

		if (r) {
			f->group[r] += 2u;
			if (!inert(n))
				f->group[r] |= 1u;
			if (f->dir[dir] == DIR_LOADED)
				f->dir[dir] = c;
			continue;
		}
		f->group[c] = 2u | !inert(n);
		f->hi[c] = (uint32_t)(h >> 32);
		f->next[c] = f->buckets[h & f->mask];
		f->buckets[h & f->mask] = c;
	}
}

/* dir when it is a directory of the index, loaded; else 0. */
static uint32_t loaded_dir(struct wsnap_fold *f, uint32_t dir)
{
	const struct wsnap_node *d = wsnap_index_node(f->idx, dir);

	if (!d || d->type != WSNAP_TYPE_DIR)
		return 0;
	if (!f->dir[dir])
		load(f, dir);
	return dir;
}

void wsnap_fold_lookup(struct wsnap_fold *f, uint32_t dir, const char *name,
		       size_t len, struct wsnap_fold_match *m)
{
	size_t klen;
	uint64_t h;
	uint32_t r;

	m->first = 0;
	m->count = 0;
	m->inert = true;
	if (len == 0 || len > WSNAP_FOLD_MAX_NAME || !loaded_dir(f, dir))
		return;
	h = query(f, dir, name, len, &klen);
	r = find(f, dir, klen, h);
	if (!r)
		return;
	m->first = r;
	m->count = f->group[r] >> 1;
	m->inert = !(f->group[r] & 1u);
}

uint32_t wsnap_fold_collision(struct wsnap_fold *f, uint32_t dir,
			      uint32_t *other)
{
	const struct wsnap_node *n;
	struct wsnap_fold_match m;
	const char *name;

	*other = 0;
	if (!loaded_dir(f, dir) || f->dir[dir] == DIR_LOADED)
		return 0;
	n = &f->idx->nodes[f->dir[dir] - 1];
	name = wsnap_node_name(n);
	wsnap_fold_lookup(f, dir, name, strlen(name), &m);
	*other = m.first;
	return f->dir[dir];
}
