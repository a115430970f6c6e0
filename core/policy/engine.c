/* SPDX-License-Identifier: MIT */
/*
 * The policy engine (policy.md sections 3, 4, 5 and 8) and the tree the
 * index is frozen from. The rules that judge a member by its name alone
 * are in rules.c, the symlink target checks of 4.5 in resolve.c; this file
 * receives the members, keeps the state (policy_private.h) and decides
 * what runs when.
 *
 * wsnap_builder_add runs phase one on each member as it arrives, in this
 * order; the first failing step wins and ends the build:
 *
 *   0. the reader's contract: no NUL inside a name or target, nanoseconds
 *      below 1e9, sparse maps sorted and inside the file, data that ends
 *      below 2^63 -> '<tar>' 'invalid tar stream' (never seen with a
 *      correct reader; it guards every offset used later for reads);
 *   P. with a strip prefix (section 8): the single-member rules on the
 *      original name with symlinks allowed, then the rename; everything
 *      below sees the new name;
 *   1. skip (4.1): the member is dropped and counts for nothing;
 *   2. single-member rules (section 3); root entries stop here;
 *   L. limits (section 5), in this order: member count, rel path length,
 *      depth, symlink target length [wsnap], file size, total size (file
 *      data and, [wsnap], the member's extension header bytes: what a
 *      spill file stores for it). They sit after the single-member rules,
 *      so only members that could be indexed count, and before anything
 *      is stored, so a hostile archive is rejected before it costs memory.
 *      [wsnap] Root entries stop at step 2 and count as no member, but
 *      their extension headers count against the total size too, and at
 *      most max(--max-members, 2,000,000) of them are read ('archive
 *      member count exceeds limit' beyond): each is a header a spill file
 *      stores;
 *   3. protected paths, 4. duplicates, 5. lexical symlink targets,
 *   6. named symlinks;
 *   R. the member enters the tree, with its missing ancestors as implicit
 *      directories. [wsnap] Implicit directories cost memory like members
 *      but no limit of the spec counts them: at most max(--max-members,
 *      2,000,000) of them ('archive member count exceeds limit' on the
 *      member that needed them), so that node numbers fit 32 bits. And
 *      every entry the member adds is charged to the index size (one deep
 *      name makes up to depth - 1 implicit directories, each holding its
 *      full path; 50,000 symlinks with 4 KB paths and targets asked for
 *      600 MB): WSNAP_INDEX_ENTRY_BYTES per entry, its path, a symlink's
 *      target, a sparse map (index_impl.h). Past --max-index-size ->
 *      'archive index size exceeds limit', before anything is stored.
 *
 * wsnap_builder_finish freezes the tree into the index (index.c), then runs
 * the [wsnap] symlink resolution walk (resolve.c) and phase two on the
 * frozen index, so both see the finished tree whatever the member order.
 *
 * Invariants of the tree: nodes[id - 1], id 1 is the root; a node's parent
 * has a smaller id (ancestors are created before the member); (parent id,
 * name) is unique and found through 'buckets', an open-addressing table of
 * id and hash (SipHash under a key drawn per builder, so hostile names
 * cannot be made to collide, nor cluster). In a tree node,
 * 'path' is the entry's own name, 'name_off' its length and 'first_child'
 * the low 32 bits of its hash. Names and raw member names live in an arena
 * freed with the builder, targets in one the index takes over (so they are
 * never copied); tables grow by doubling, bounded by the limits; nothing is
 * allocated per member.
 */
#include <stdlib.h>
#include <string.h>

#include "policy_private.h"

#define ROOT_ID 1u

/* Members and implicit directories each stay below this, so that node
 * numbers (root + members + implicit) fit 32 bits whatever --max-members
 * says. */
#define MAX_MEMBERS_CAP ((UINT32_MAX - 2u) / 2u)

/* The count budget of implicit directories (step R) and root entries. */
#define IMPLICIT_MIN_COUNT WSNAP_DEFAULT_MAX_MEMBERS

/* How the raw name of a member is kept for messages after phase one. */
enum raw_kind {
	RAW_IS_REL,	/* it is the rel path */
	RAW_IS_DOT_REL, /* it is "./" + the rel path */
	RAW_COPIED,	/* and up: raws[kind - RAW_COPIED] (in 'strings') */
};

/* Tree */

static uint32_t tree_hash(const struct wsnap_builder *b, uint32_t parent,
			  const char *name, size_t len)
{
	return (uint32_t)wsnap_hash_entry(&b->key, parent, name, len);
}

/*
 * The lookup table: open addressing, linear probing, at most half full.
 * A slot holds a node's id (low 32 bits, 0: empty) and its hash (high 32
 * bits), so a name that is not there (every new member's duplicate check)
 * costs the probes of one cache line or two, not a visit to each node of
 * a chain: the nodes are only read when the hash matches.
 */
static uint64_t tree_slot(uint32_t id, uint32_t h)
{
	return (uint64_t)h << 32 | id;
}

static uint32_t tree_find(const struct wsnap_builder *b, uint32_t parent,
			  const char *name, size_t len, uint32_t *hash)
{
	uint32_t h = tree_hash(b, parent, name, len);
	size_t mask = b->nbuckets - 1, i = h & mask;

	*hash = h;

	for (;; i = (i + 1) & mask) {
		uint64_t e = b->buckets[i];
		const struct wsnap_node *n;

		if (!e)
			return 0;
		if ((uint32_t)(e >> 32) != h)
			continue;
		n = &b->nodes[(uint32_t)e - 1];
		if (n->parent == parent && n->name_off == len &&
		    memcmp(n->path, name, len) == 0)
			return (uint32_t)e;
	}
}

/* Puts node id with hash h in the first free slot from its own. */
static void tree_insert(uint64_t *slots, size_t mask, uint32_t id, uint32_t h)
{
	size_t i = h & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = tree_slot(id, h);
}

static bool tree_rehash(struct wsnap_builder *b)
{
	size_t nb = b->nbuckets * 2, i;
	uint64_t *bk = wsnap_table_calloc(nb, sizeof(*bk));

	if (!bk)
		return false;
	for (i = 0; i < b->nbuckets; i++)
		if (b->buckets[i])
			tree_insert(bk, nb - 1, (uint32_t)b->buckets[i],
				    (uint32_t)(b->buckets[i] >> 32));
	free(b->buckets);
	b->buckets = bk;
	b->nbuckets = nb;
	return true;
}

/* A new node (zeroed) named name under parent, whose tree_hash is h; 0
 * when out of memory. The caller has made room in the node array. */
static uint32_t tree_add(struct wsnap_builder *b, uint32_t parent,
			 const char *name, size_t len, uint32_t h)
{
	uint32_t id = b->nnodes + 1;
	struct wsnap_node *n = &b->nodes[id - 1];

	/* load factor at most 1/2 (the root has no slot) */
	if (id > b->nbuckets / 2 && !tree_rehash(b))
		return 0;
	memset(n, 0, sizeof(*n));
	n->path = wsnap_arena_dup(&b->tree_names, name, len);
	if (!n->path)
		return 0;
	n->name_off = (uint32_t)len;
	n->parent = parent;
	n->first_child = h;
	tree_insert(b->buckets, b->nbuckets - 1, id, h);
	b->nnodes = id;
	return id;
}

void wsnap_builder_prefetch(const struct wsnap_builder *b,
			    const struct wsnap_raw_member *m)
{
	const char *name = m->name, *slash;
	size_t len = m->name_len, dl;
	uint32_t h;

	while (len >= 2 && name[0] == '.' && name[1] == '/') {
		name += 2;
		len -= 2;
	}
	while (len && name[len - 1] == '/')
		len--;
	slash = len ? memrchr(name, '/', len) : NULL;
	if (!slash || !b->cache_id || !b->buckets)
		return;
	dl = (size_t)(slash - name);
	if (dl != b->cachelen || memcmp(b->cache, name, dl) != 0)
		return;
	h = tree_hash(b, b->cache_id, slash + 1, len - dl - 1);
	__builtin_prefetch(&b->buckets[h & (b->nbuckets - 1)]);
}

/* Lifecycle */

enum wsnap_status wsnap_builder_new(struct wsnap_builder **out,
				    const struct wsnap_policy *policy,
				    struct wsnap_error *err)
{
	struct wsnap_builder *b;
	enum wsnap_status st;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return wsnap_engine_oom(err);
	wsnap_policy_init(&b->policy);
	st = wsnap_policy_copy(&b->policy, policy, err);
	if (st != WSNAP_OK)
		goto fail;
	b->strip_len =
		b->policy.strip_prefix ? strlen(b->policy.strip_prefix) : 0;
	b->max_members = b->policy.max_members < MAX_MEMBERS_CAP
				 ? b->policy.max_members
				 : MAX_MEMBERS_CAP;
	b->max_implicit = b->max_members > IMPLICIT_MIN_COUNT
				  ? b->max_members
				  : IMPLICIT_MIN_COUNT;
	wsnap_hash_key_init(&b->key);
	b->nodes = wsnap_grow(NULL, &b->capnodes, 64, sizeof(*b->nodes));
	b->nbuckets = 64;
	b->buckets = calloc(b->nbuckets, sizeof(*b->buckets));
	if (!b->nodes || !b->buckets) {
		st = wsnap_engine_oom(err);
		goto fail;
	}
	/* the root: an implicit directory until a root entry says more */
	memset(&b->nodes[0], 0, sizeof(b->nodes[0]));
	b->nodes[0].path = "";
	b->nodes[0].parent = ROOT_ID;
	b->nodes[0].type = WSNAP_TYPE_DIR;
	b->nodes[0].mode = WSNAP_DIR_MODE;
	b->nodes[0].flags = WSNAP_NODE_IMPLICIT;
	b->nnodes = 1;
	*out = b;
	return WSNAP_OK;
fail:
	wsnap_builder_free(b);
	return st;
}

void wsnap_builder_free(struct wsnap_builder *b)
{
	if (!b)
		return;
	wsnap_policy_release(&b->policy);
	wsnap_arena_release(&b->tree_names);
	wsnap_arena_release(&b->strings);
	wsnap_arena_release(&b->targets);
	free(b->nodes);
	free(b->buckets);
	free(b->runs);
	free(b->sparse);
	free(b->seq);
	free(b->raws);
	free(b->names.rel);
	free(b->names.disp);
	free(b->renamed);
	free(b->cache);
	free(b);
}

/* Phase one */

/* The bytes a member counts against --max-total-size: its file data and
 * its extension headers (step L). */
static uint64_t member_bytes(const struct wsnap_raw_member *m)
{
	return m->ext_bytes + (m->type == WSNAP_RAW_FILE ? m->size : 0);
}

static enum wsnap_status total_size_exceeded(const struct wsnap_name *nm,
					     struct wsnap_error *err)
{
	return wsnap_error_reject(err, nm->disp,
				  "archive extracted size exceeds limit");
}

/* Section 5, in the order of the header comment. */
static enum wsnap_status check_limits(const struct wsnap_builder *b,
				      const struct wsnap_name *nm,
				      const struct wsnap_raw_member *m,
				      struct wsnap_error *err)
{
	const struct wsnap_policy *p = &b->policy;

	if (b->members >= b->max_members)
		return wsnap_error_reject(err, nm->disp,
					  "archive member count exceeds limit");
	if (nm->rel_len > p->max_path_length)
		return wsnap_error_reject(err, nm->disp, "path too long");
	if (nm->depth > p->max_depth)
		return wsnap_error_reject(err, nm->disp, "path too deep");
	/* [wsnap] the spec puts no bound on targets; one longer than a path
	 * may be is refused so that no target grows memory without bound */
	if (nm->type == WSNAP_RAW_SYMLINK &&
	    m->linkname_len > p->max_path_length)
		return wsnap_error_reject(err, nm->disp, "path too long");
	if (nm->type == WSNAP_RAW_FILE && m->size > p->max_file_size)
		return wsnap_error_reject(err, nm->disp,
					  "file size exceeds limit");
	if (member_bytes(m) > p->max_total_size - b->total_size)
		return total_size_exceeded(nm, err);
	return WSNAP_OK;
}

/* Step L for a root entry (see the header comment); then its metadata. */
static enum wsnap_status add_root(struct wsnap_builder *b,
				  const struct wsnap_name *nm,
				  const struct wsnap_raw_member *m,
				  struct wsnap_error *err)
{
	struct wsnap_node *r = &b->nodes[0];

	if (b->roots >= b->max_implicit)
		return wsnap_error_reject(err, nm->disp,
					  "archive member count exceeds limit");
	if (m->ext_bytes > b->policy.max_total_size - b->total_size)
		return total_size_exceeded(nm, err);
	b->roots++;
	b->total_size += m->ext_bytes;
	/* any number of root entries; the last one's metadata holds */
	r->mtime_sec = m->mtime_sec;
	r->mtime_nsec = m->mtime_nsec;
	r->mode = (uint16_t)(m->mode & 07777);
	r->flags = m->mtime_nsec ? WSNAP_NODE_MTIME_FRAC : 0;
	return WSNAP_OK;
}

/* The reader's contract (step 0 of the header comment). */
static bool member_sane(const struct wsnap_raw_member *m)
{
	uint64_t stored = 0, end = 0;
	size_t i;

	if (!m->name || memchr(m->name, '\0', m->name_len))
		return false;
	if (m->linkname && memchr(m->linkname, '\0', m->linkname_len))
		return false;
	if (m->mtime_nsec >= 1000000000u ||
	    m->ext_bytes > WSNAP_READER_MAX_HEADER_BYTES)
		return false;
	if (m->type != WSNAP_RAW_FILE)
		return true;
	if (!m->sparse)
		return m->size <= INT64_MAX &&
		       m->data_offset <= INT64_MAX - m->size;
	for (i = 0; i < m->nsparse; i++) {
		const struct wsnap_sparse_run *r = &m->sparse[i];

		if (r->offset < end || r->length > m->size ||
		    r->offset > m->size - r->length)
			return false;
		end = r->offset + r->length;
		stored += r->length;
	}
	return m->size <= INT64_MAX && m->data_offset <= INT64_MAX - stored;
}

/* Where a member's path meets the tree: 'at' holds its first 'comp'
 * components; the next one starts at rel + off and, when comp is less
 * than the depth, hashes to h under at (tree_hash). */
struct spot {
	uint32_t at;
	size_t comp;
	size_t off;
	uint32_t h;
};

static void locate(const struct wsnap_builder *b, const struct wsnap_name *nm,
		   struct spot *s)
{
	s->at = ROOT_ID;
	s->comp = 0;
	s->off = 0;
	s->h = 0;
	if (b->cache_id && nm->depth >= 2 && b->cachelen + 1 == nm->last_off &&
	    memcmp(b->cache, nm->rel, b->cachelen) == 0) {
		s->at = b->cache_id;
		s->comp = nm->depth - 1;
		s->off = nm->last_off;
	}
	while (s->comp < nm->depth) {
		const char *c = nm->rel + s->off;
		const char *e = memchr(c, '/', nm->rel_len - s->off);
		size_t cl = e ? (size_t)(e - c) : nm->rel_len - s->off;
		uint32_t id = tree_find(b, s->at, c, cl, &s->h);

		if (!id)
			return;
		s->at = id;
		s->comp++;
		s->off += cl + 1;
	}
}

/* Fills n (a new or implicit node) from the member. */
static enum wsnap_status set_member(struct wsnap_builder *b,
				    struct wsnap_node *n,
				    const struct wsnap_raw_member *m,
				    struct wsnap_error *err)
{
	n->mode = (uint16_t)(m->mode & 07777);
	n->mtime_sec = m->mtime_sec;
	n->mtime_nsec = m->mtime_nsec;
	n->flags = m->mtime_nsec ? WSNAP_NODE_MTIME_FRAC : 0;
	n->order =
		b->position < UINT32_MAX ? (uint32_t)b->position : UINT32_MAX;
	n->size = 0;
	n->offset = 0;
	n->sparse = 0;
	n->target = NULL;
	switch (m->type) {
	case WSNAP_RAW_DIR:
		n->type = WSNAP_TYPE_DIR;
		break;
	case WSNAP_RAW_SYMLINK:
		n->type = WSNAP_TYPE_SYMLINK;
		n->size = m->linkname_len;
		n->target = wsnap_arena_dup(&b->targets, m->linkname,
					    m->linkname_len);
		if (!n->target)
			return wsnap_engine_oom(err);
		break;
	default:
		n->type = WSNAP_TYPE_FILE;
		n->size = m->size;
		n->offset = m->data_offset;
		break;
	}
	if (n->type == WSNAP_TYPE_FILE && m->sparse) {
		struct wsnap_index_sparse *sp;
		struct wsnap_index_run *runs;
		uint64_t stored = 0;
		size_t i;

		if (b->nsparse >= UINT32_MAX - 1)
			return wsnap_engine_oom(err);
		sp = wsnap_grow(b->sparse, &b->capsparse, b->nsparse + 1,
				sizeof(*sp));
		if (!sp)
			return wsnap_engine_oom(err);
		b->sparse = sp;
		runs = wsnap_grow(b->runs, &b->capruns,
				  b->nruns + m->nsparse + 1, sizeof(*runs));
		if (!runs)
			return wsnap_engine_oom(err);
		b->runs = runs;
		sp[b->nsparse].first = b->nruns;
		sp[b->nsparse].count = m->nsparse;
		for (i = 0; i < m->nsparse; i++) {
			runs[b->nruns].logical = m->sparse[i].offset;
			runs[b->nruns].length = m->sparse[i].length;
			runs[b->nruns].stored = stored;
			stored += m->sparse[i].length;
			b->nruns++;
		}
		n->sparse = (uint32_t)++b->nsparse;
		n->flags |= WSNAP_NODE_SPARSE;
	}
	return WSNAP_OK;
}

static enum wsnap_status add_seq(struct wsnap_builder *b, uint32_t id,
				 const struct wsnap_name *nm,
				 struct wsnap_error *err)
{
	struct wsnap_seq_ent *e =
		wsnap_grow(b->seq, &b->capseq, b->nseq + 1, sizeof(*e));

	if (!e)
		return wsnap_engine_oom(err);
	b->seq = e;
	e += b->nseq;
	e->id = id;
	if (nm->len == nm->rel_len && memcmp(nm->disp, nm->rel, nm->len) == 0) {
		e->kind = RAW_IS_REL;
	} else if (nm->len == nm->rel_len + 2 && nm->disp[0] == '.' &&
		   nm->disp[1] == '/' &&
		   memcmp(nm->disp + 2, nm->rel, nm->rel_len) == 0) {
		e->kind = RAW_IS_DOT_REL;
	} else {
		const char **r = wsnap_grow(b->raws, &b->capraws, b->nraws + 1,
					    sizeof(*r));

		/* members are fewer than UINT32_MAX - RAW_COPIED (the cap) */
		if (!r)
			return wsnap_engine_oom(err);
		b->raws = r;
		r[b->nraws] = wsnap_arena_dup(&b->strings, nm->disp, nm->len);
		if (!r[b->nraws])
			return wsnap_engine_oom(err);
		e->kind = (uint32_t)(RAW_COPIED + b->nraws++);
	}
	b->nseq++;
	return WSNAP_OK;
}

static void remember_dir(struct wsnap_builder *b, const struct wsnap_name *nm,
			 uint32_t id)
{
	const struct wsnap_node *n = &b->nodes[id - 1];
	size_t len = nm->rel_len;

	if (n->type != WSNAP_TYPE_DIR) {
		len = nm->last_off ? nm->last_off - 1 : 0;
		id = n->parent;
	}
	b->cache_id = 0;
	if (!wsnap_engine_scratch(&b->cache, &b->cachecap, len + 1))
		return;
	memcpy(b->cache, nm->rel, len);
	b->cachelen = len;
	b->cache_id = id;
}

/*
 * What a member adds to the index (step R): need new entries (need - 1
 * implicit directories whose paths, NULs included, take dir_bytes, then
 * the member's own; none when it takes over an implicit directory), its
 * target, its sparse map.
 */
static uint64_t index_cost(const struct wsnap_name *nm,
			   const struct wsnap_raw_member *m, size_t need,
			   uint64_t dir_bytes)
{
	uint64_t cost = 0;

	if (need)
		cost = (uint64_t)need * WSNAP_INDEX_ENTRY_BYTES + dir_bytes +
		       nm->rel_len + 1;
	if (m->type == WSNAP_RAW_SYMLINK)
		cost += (uint64_t)m->linkname_len + 1;
	if (m->type == WSNAP_RAW_FILE && m->sparse)
		cost += WSNAP_INDEX_SPARSE_BYTES +
			(uint64_t)m->nsparse * WSNAP_INDEX_RUN_BYTES;
	return cost;
}

/* Step R: the member enters the tree. */
static enum wsnap_status record(struct wsnap_builder *b,
				const struct wsnap_name *nm,
				const struct spot *s,
				const struct wsnap_raw_member *m,
				struct wsnap_error *err)
{
	uint32_t id = s->at;
	size_t need = nm->depth - s->comp, off = s->off, k;
	uint64_t bytes = 0, cost, max = b->policy.max_index_size;
	struct wsnap_node *nodes;
	enum wsnap_status st;

	if (need == 0 && !(b->nodes[id - 1].flags & WSNAP_NODE_IMPLICIT)) {
		/* a repeated directory: the later metadata wins */
		struct wsnap_node *n = &b->nodes[id - 1];

		n->mode = (uint16_t)(m->mode & 07777);
		n->mtime_sec = m->mtime_sec;
		n->mtime_nsec = m->mtime_nsec;
		n->flags = m->mtime_nsec ? WSNAP_NODE_MTIME_FRAC : 0;
		goto counted;
	}
	/* the new implicit directories end where a '/' is */
	for (k = off; k < nm->rel_len; k++)
		if (nm->rel[k] == '/')
			bytes += k + 1;
	if (need && b->implicit + (need - 1) > b->max_implicit)
		return wsnap_error_reject(err, nm->disp,
					  "archive member count exceeds limit");
	cost = index_cost(nm, m, need, bytes);
	if (cost > max || b->index_bytes > max - cost)
		return wsnap_error_reject(err, nm->disp,
					  "archive index size exceeds limit");
	b->index_bytes += cost;
	if (need == 0) {
		/* an implicit directory becomes the member */
		st = set_member(b, &b->nodes[id - 1], m, err);
		if (st != WSNAP_OK)
			return st;
		b->implicit--;
		goto indexed;
	}
	nodes = wsnap_grow(b->nodes, &b->capnodes, (size_t)b->nnodes + need,
			   sizeof(*nodes));
	if (!nodes)
		return wsnap_engine_oom(err);
	b->nodes = nodes;
	for (k = 0; k < need; k++) {
		const char *c = nm->rel + off;
		const char *e = memchr(c, '/', nm->rel_len - off);
		size_t cl = e ? (size_t)(e - c) : nm->rel_len - off;

		/* the first new component is the one locate did not find */
		id = tree_add(b, id, c, cl,
			      k == 0 ? s->h : tree_hash(b, id, c, cl));
		if (!id)
			return wsnap_engine_oom(err);
		off += cl + 1;
		if (k + 1 < need) {
			b->nodes[id - 1].type = WSNAP_TYPE_DIR;
			b->nodes[id - 1].mode = WSNAP_DIR_MODE;
			b->nodes[id - 1].flags = WSNAP_NODE_IMPLICIT;
			b->implicit++;
		}
	}
	st = set_member(b, &b->nodes[id - 1], m, err);
	if (st != WSNAP_OK)
		return st;
indexed:
	st = add_seq(b, id, nm, err);
	if (st != WSNAP_OK)
		return st;
counted:
	b->members++;
	b->total_size += member_bytes(m);
	remember_dir(b, nm, id);
	return WSNAP_OK;
}

/* Section 8: the member's name once the prefix is stripped, in
 * b->renamed. */
static enum wsnap_status strip_name(struct wsnap_builder *b,
				    const struct wsnap_raw_member *m,
				    const char **name, size_t *len,
				    struct wsnap_error *err)
{
	const char *p = b->policy.strip_prefix;
	const char *src;
	struct wsnap_name nm;
	size_t n;
	bool root;
	enum wsnap_status st;

	st = wsnap_name_parse(&nm, &b->names, m->name, m->name_len, m->type,
			      err);
	if (st == WSNAP_OK)
		st = wsnap_rule_single(&nm, true, m->linkname_len, &root, err);
	if (st != WSNAP_OK)
		return st;
	if (root || (nm.rel_len == b->strip_len &&
		     memcmp(nm.rel, p, b->strip_len) == 0)) {
		src = ".";
		n = 1;
	} else if (wsnap_path_within(nm.rel, nm.rel_len, p, b->strip_len)) {
		src = nm.rel + b->strip_len + 1;
		n = nm.rel_len - b->strip_len - 1;
	} else {
		return wsnap_error_reject(
			err, nm.disp, "member does not start with prefix: %s",
			p);
	}
	if (!wsnap_engine_scratch(&b->renamed, &b->renamedcap, n + 1))
		return wsnap_engine_oom(err);
	memmove(b->renamed, src, n);
	b->renamed[n] = '\0';
	*name = b->renamed;
	*len = n;
	return WSNAP_OK;
}

enum wsnap_status wsnap_builder_add(void *builder,
				    const struct wsnap_raw_member *m,
				    struct wsnap_error *err)
{
	struct wsnap_builder *b = builder;
	const char *name = m->name;
	size_t len = m->name_len;
	struct spot s;
	struct wsnap_name nm;
	bool root;
	enum wsnap_status st;

	b->position++;
	if (!member_sane(m)) {
		wsnap_error_stream(err);
		wsnap_error_detail(err,
				   "member %llu does not hold together (a bad "
				   "name, link, time or data range)",
				   (unsigned long long)b->position);
		return WSNAP_REJECTED;
	}
	if (b->policy.strip_prefix) {
		st = strip_name(b, m, &name, &len, err);
		if (st != WSNAP_OK)
			return st;
	}
	st = wsnap_name_parse(&nm, &b->names, name, len, m->type, err);
	if (st != WSNAP_OK)
		return st;
	/* 4.1 */
	if (wsnap_rule_skip(&b->policy, &nm))
		return WSNAP_OK;
	st = wsnap_rule_single(&nm, !b->policy.no_symlinks, m->linkname_len,
			       &root, err);
	if (st != WSNAP_OK)
		return st;
	if (root)
		return add_root(b, &nm, m, err);
	st = check_limits(b, &nm, m, err);
	if (st == WSNAP_OK)
		st = wsnap_rule_protected(&b->policy, &nm, err);
	if (st != WSNAP_OK)
		return st;
	/* 4.4: one path, one member (a directory may be repeated): a second
	 * member would silently replace what was checked */
	locate(b, &nm, &s);
	if (s.comp == nm.depth &&
	    !(b->nodes[s.at - 1].flags & WSNAP_NODE_IMPLICIT) &&
	    (m->type != WSNAP_RAW_DIR ||
	     b->nodes[s.at - 1].type != WSNAP_TYPE_DIR))
		return wsnap_error_reject(err, nm.disp,
					  "duplicate archive path: %s", nm.rel);
	/* 4.5 lexically (the strict walk comes after phase one), 4.6 */
	if (m->type == WSNAP_RAW_SYMLINK && !b->policy.allow_external_symlinks)
		st = wsnap_resolve_lexical(&nm, m->linkname ? m->linkname : "",
					   m->linkname_len, err);
	if (st == WSNAP_OK)
		st = wsnap_rule_named_symlink(&b->policy, &nm, err);
	if (st != WSNAP_OK)
		return st;
	return record(b, &nm, &s, m, err);
}

/* Phase two and the finished index */

const char *wsnap_engine_raw_name(struct wsnap_builder *b,
				  const struct wsnap_seq_ent *e,
				  const struct wsnap_node *n)
{
	size_t len;

	if (e->kind >= RAW_COPIED)
		return b->raws[e->kind - RAW_COPIED];
	switch (e->kind) {
	case RAW_IS_DOT_REL:
		len = strlen(n->path);
		if (!wsnap_engine_scratch(&b->names.disp, &b->names.dispcap,
					  len + 3))
			return n->path;
		b->names.disp[0] = '.';
		b->names.disp[1] = '/';
		memcpy(b->names.disp + 2, n->path, len + 1);
		return b->names.disp;
	default:
		return n->path;
	}
}

/* Phase two: nothing may stand below a symlink or a non-directory (writing
 * it would follow the link or fail halfway). bad[ino] is the nearest
 * ancestor that is not a directory, computed parents first. */
static enum wsnap_status phase_two(struct wsnap_builder *b,
				   const struct wsnap_index *idx,
				   struct wsnap_error *err)
{
	const struct wsnap_node *nodes = idx->nodes;
	enum wsnap_status st = WSNAP_OK;
	uint32_t *bad, ino;
	size_t i;

	bad = calloc((size_t)idx->count + 1, sizeof(*bad));
	if (!bad)
		return wsnap_engine_oom(err);
	for (ino = 2; ino <= idx->count; ino++) {
		uint32_t p = nodes[ino - 1].parent;

		bad[ino] = p != WSNAP_ROOT_INO &&
					   nodes[p - 1].type != WSNAP_TYPE_DIR
				   ? p
				   : bad[p];
	}
	for (i = 0; i < b->nseq && st == WSNAP_OK; i++) {
		uint32_t m = b->seq[i].id, a = bad[m];

		if (!a)
			continue;
		st = wsnap_error_reject(
			err,
			wsnap_engine_raw_name(b, &b->seq[i], &nodes[m - 1]),
			nodes[a - 1].type == WSNAP_TYPE_SYMLINK
				? "archive path descends through symlink: %s"
				: "archive path descends through "
				  "non-directory: %s",
			nodes[a - 1].path);
	}
	free(bad);
	return st;
}

enum wsnap_status wsnap_builder_finish(struct wsnap_builder *b,
				       struct wsnap_index **out,
				       struct wsnap_error *err)
{
	struct wsnap_index_tree tree;
	struct wsnap_index *idx = NULL;
	uint32_t *inomap = NULL;
	size_t i;
	enum wsnap_status st;

	*out = NULL;
	/* the lookup table of phase one is done with; the nodes, runs,
	 * sparse maps and targets go to the index; the strings arena (raw
	 * names copied) stays until the end */
	free(b->buckets);
	b->buckets = NULL;
	tree.nodes = b->nodes;
	tree.count = b->nnodes;
	tree.runs = b->runs;
	tree.nruns = b->nruns;
	tree.sparse = b->sparse;
	tree.nsparse = b->nsparse;
	tree.targets = b->targets;
	b->targets.head = NULL;
	b->targets.bytes = 0;
	b->nodes = NULL;
	b->runs = NULL;
	b->sparse = NULL;
	/* the tree's names (10 MB at 1,000,000 members) go too, released as
	 * soon as the full paths are written */
	tree.names = b->tree_names;
	b->tree_names.head = NULL;
	b->tree_names.bytes = 0;
	st = wsnap_index_freeze(&idx, &tree, &inomap, err);
	if (st != WSNAP_OK)
		goto out;
	/* members by ino from here on; the map is done with */
	for (i = 0; i < b->nseq; i++)
		b->seq[i].id = inomap[b->seq[i].id];
	free(inomap);
	inomap = NULL;
	if (!b->policy.allow_external_symlinks)
		st = wsnap_resolve_links(b, idx, err);
	if (st == WSNAP_OK)
		st = phase_two(b, idx, err);
	if (st == WSNAP_OK) {
		*out = idx;
		idx = NULL;
	}
out:
	free(inomap);
	wsnap_index_free(idx);
	wsnap_builder_free(b);
	return st;
}
