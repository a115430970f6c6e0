/* SPDX-License-Identifier: MIT */
/*
 * The symlink target checks of policy.md 4.5: the lexical one of phase one
 * (wsnap_resolve_lexical, on each symlink member as it arrives) and the
 * [wsnap] strict walk between the phases (wsnap_resolve_links), which
 * resolves every symlink's target the way the kernel would inside the
 * finished tree. The lexical check alone lets 'link -> ./' plus
 * 'escape -> link/link/../../x' through, and that escapes on disk.
 *
 * Invariants of the walk: it runs on the frozen index, so it sees the
 * whole tree whatever the member order, and changes nothing in it. A
 * position is (node, phantoms): 'phantoms' components below 'node' that
 * name nothing in the tree. Each link's resolution from its own directory
 * depends on the link alone and is memoized per ino, so the walk costs
 * O(target bytes) per link plus O(1) per link met; recursion and
 * replacements are both bounded by MAX_REPLACEMENTS, the kernel's
 * MAXSYMLINKS. A link met again while it is being resolved is a loop and
 * escapes.
 *
 * Case and normalization: the walk runs twice per link, byte for byte and
 * folded (fold.h), as the same archive lands on a case-sensitive and on a
 * case-folding, normalization-insensitive filesystem; each has its own
 * memo, and either escaping rejects the link. Folded, a component goes to
 * the member its caseless key matches when byte for byte it names nothing;
 * when it matches several members that are not interchangeable (one is a
 * symlink or a directory with entries) either may be the one such a
 * filesystem holds, and the link is refused as escaping. Where the folded
 * look-up differs from the exact one the walk records (link, member), at
 * most once per directory, for export (7.7). A walk inside one filesystem
 * where some directories fold and others do not is export's to refuse: it
 * writes no link whose resolution depends on case into a folding one.
 */
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "policy_private.h"

/* Most symlink replacements of one resolution (the kernel's MAXSYMLINKS). */
#define MAX_REPLACEMENTS 40u

/* 4.5, lexically: a link that points outside the snapshot would let a
 * reader of the mount or a later write on export follow it out. From the
 * link's parent, '..' must never pop the root. */
enum wsnap_status wsnap_resolve_lexical(const struct wsnap_name *nm,
					const char *t, size_t len,
					struct wsnap_error *err)
{
	size_t depth = nm->depth - 1, i = 0;

	if (len && t[0] == '/')
		return wsnap_error_reject(
			err, nm->disp,
			"absolute symlink target not allowed: %s", t);
	while (i < len) {
		size_t j = i;

		while (j < len && t[j] != '/')
			j++;
		if (j - i == 2 && t[i] == '.' && t[i + 1] == '.') {
			if (depth == 0)
				return wsnap_error_reject(
					err, nm->disp,
					"symlink target escapes archive root: "
					"%s",
					t);
			depth--;
		} else if (j > i && !(j - i == 1 && t[i] == '.')) {
			depth++;
		}
		i = j + 1;
	}
	return WSNAP_OK;
}

/* The [wsnap] symlink resolution walk */

enum link_state {
	LINK_UNKNOWN = 0,
	LINK_BUSY, /* being resolved: meeting it again is a loop */
	LINK_OK,
	LINK_ESCAPES,
	LINK_ABSOLUTE,
};

enum walk_result {
	WALK_OK,
	WALK_ESCAPES,
	WALK_ABSOLUTE,
	WALK_TOO_DEEP, /* more than MAX_REPLACEMENTS nested: not memoized */
};

/*
 * What a symlink resolves to from its own directory, which is all a walk
 * needs when it meets the link: the position reached and the replacements
 * it took. Positions are (node, phantoms): 'phantoms' components below
 * 'node' that name nothing in the tree (treated lexically; nothing below
 * them can exist, so only their number matters for '..').
 */
struct link_memo {
	uint32_t node;
	uint32_t phantoms;
	uint8_t inner; /* replacements inside its own resolution, <= 40 */
	uint8_t state;
};

struct where {
	uint32_t node;
	uint32_t phantoms;
};

struct walker {
	const struct wsnap_index *idx;
	struct link_memo *memo;	 /* per ino */
	struct wsnap_fold *fold; /* NULL: byte for byte */
	/* the folded walk's case dependencies, one per directory */
	struct wsnap_index_case_dep *deps;
	size_t ndeps, capdeps;
	unsigned char *noted; /* per ino: a directory with one recorded */
	bool oom;
};

static enum walk_result resolve(struct walker *w, uint32_t link,
				unsigned depth);

/* Records that link's resolution depends on case at member. */
static void note_dep(struct walker *w, uint32_t dir, uint32_t link,
		     uint32_t member)
{
	struct wsnap_index_case_dep *d;

	if (w->noted[dir])
		return;
	d = wsnap_grow(w->deps, &w->capdeps, w->ndeps + 1, sizeof(*d));
	if (!d) {
		w->oom = true;
		return;
	}
	w->deps = d;
	w->deps[w->ndeps++] = (struct wsnap_index_case_dep){link, member};
	w->noted[dir] = 1;
}

/*
 * The entry that component c names in directory dir (0: nothing), byte for
 * byte or, in the folded walk, as a folding filesystem finds it. WALK_ESCAPES
 * when it folds to several members that do not lead to the same places.
 */
static enum walk_result look_up(struct walker *w, uint32_t link, uint32_t dir,
				const char *c, size_t cl, uint32_t *child)
{
	struct wsnap_fold_match m;

	*child = wsnap_index_child(w->idx, dir, c, cl);
	if (!w->fold)
		return WALK_OK;
	wsnap_fold_lookup(w->fold, dir, c, cl, &m);
	if (m.count == 0 || (m.count == 1 && *child))
		return WALK_OK; /* the same either way */
	if (m.count > 1 && !m.inert)
		return WALK_ESCAPES;
	note_dep(w, dir, link, m.first);
	if (!*child)
		*child = m.first;
	return WALK_OK;
}

/*
 * Applies the components of s to *at, replacing each component that names
 * a symlink by where that symlink resolves to; *count counts replacements.
 * Work: O(len) plus O(1) per symlink met (their resolutions are memoized),
 * so every link costs time bounded by its own target.
 */
static enum walk_result walk(struct walker *w, uint32_t link, struct where *at,
			     const char *s, size_t len, unsigned *count,
			     unsigned depth)
{
	const struct wsnap_index *idx = w->idx;
	size_t i = 0;

	while (i < len) {
		const char *c = s + i;
		size_t cl;
		uint32_t child;
		enum walk_result r;

		while (i < len && s[i] != '/')
			i++;
		cl = (size_t)(s + i - c);
		i++;
		if (cl == 0 || (cl == 1 && c[0] == '.'))
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			if (at->phantoms)
				at->phantoms--;
			else if (at->node == WSNAP_ROOT_INO)
				return WALK_ESCAPES;
			else
				at->node = idx->nodes[at->node - 1].parent;
			continue;
		}
		if (at->phantoms) {
			at->phantoms++;
			continue;
		}
		r = look_up(w, link, at->node, c, cl, &child);
		if (r != WALK_OK)
			return r;
		if (!child) {
			at->phantoms = 1;
			continue;
		}
		if (idx->nodes[child - 1].type != WSNAP_TYPE_SYMLINK) {
			at->node = child;
			continue;
		}
		r = resolve(w, child, depth + 1);
		if (r != WALK_OK)
			return r;
		*count += 1u + w->memo[child].inner;
		if (*count > MAX_REPLACEMENTS)
			return WALK_ESCAPES;
		at->node = w->memo[child].node;
		at->phantoms = w->memo[child].phantoms;
	}
	return WALK_OK;
}

/*
 * Resolves a symlink's target from the link's directory, memoized: the
 * result depends on the link alone. depth is the nesting of replacements
 * above; past MAX_REPLACEMENTS the outermost resolution has more than
 * that many already, so the answer is WALK_TOO_DEEP (kept out of the memo,
 * as inner links may be fine on their own), which also bounds recursion.
 * Meeting a link that is being resolved is a loop: it never ends, so it
 * escapes, and so does every link on the loop.
 */
static enum walk_result resolve(struct walker *w, uint32_t link, unsigned depth)
{
	const struct wsnap_node *n = &w->idx->nodes[link - 1];
	struct link_memo *m = &w->memo[link];
	struct where at = {n->parent, 0};
	unsigned inner = 0;
	enum walk_result r;

	switch (m->state) {
	case LINK_OK:
		return WALK_OK;
	case LINK_ABSOLUTE:
		return WALK_ABSOLUTE;
	case LINK_BUSY:
	case LINK_ESCAPES:
		return WALK_ESCAPES;
	default:
		break;
	}
	if (depth > MAX_REPLACEMENTS)
		return WALK_TOO_DEEP;
	if (n->size && n->target[0] == '/') {
		m->state = LINK_ABSOLUTE;
		return WALK_ABSOLUTE;
	}
	m->state = LINK_BUSY;
	r = walk(w, link, &at, n->target, n->size, &inner, depth);
	switch (r) {
	case WALK_OK:
		m->state = LINK_OK;
		m->node = at.node;
		m->phantoms = at.phantoms;
		m->inner = (uint8_t)inner;
		break;
	case WALK_ABSOLUTE:
		m->state = LINK_ABSOLUTE;
		break;
	case WALK_ESCAPES:
		m->state = LINK_ESCAPES;
		break;
	default:
		m->state = LINK_UNKNOWN;
		break;
	}
	return r;
}

/* One link of the walk: from its directory, itself resolved. */
static enum walk_result resolve_top(struct walker *w, uint32_t ino)
{
	const struct wsnap_node *nodes = w->idx->nodes, *n = &nodes[ino - 1];
	struct where at = {WSNAP_ROOT_INO, 0};
	unsigned count = 0;
	uint32_t a;
	enum walk_result r;

	for (a = n->parent; a != WSNAP_ROOT_INO; a = nodes[a - 1].parent)
		if (nodes[a - 1].type == WSNAP_TYPE_SYMLINK)
			break;
	if (a == WSNAP_ROOT_INO)
		return resolve(w, ino, 0);
	/* the link's directory goes through a symlink (phase two rejects
	 * that later, but the walk comes first) */
	r = walk(w, ino, &at, n->path, n->name_off ? n->name_off - 1 : 0,
		 &count, 0);
	if (r != WALK_OK)
		return r;
	if (n->size && n->target[0] == '/')
		return WALK_ABSOLUTE;
	return walk(w, ino, &at, n->target, n->size, &count, 0);
}

/* One link, byte for byte and then folded. */
static enum walk_result resolve_both(struct walker *exact,
				     struct walker *folded, uint32_t ino)
{
	enum walk_result r = resolve_top(exact, ino);

	return r == WALK_OK ? resolve_top(folded, ino) : r;
}

/* [wsnap] Between the phases: each symlink member in archive order, the
 * first that fails winning; the message prints the link's own target. */
enum wsnap_status wsnap_resolve_links(struct wsnap_builder *b,
				      struct wsnap_index *idx,
				      struct wsnap_error *err)
{
	size_t n = (size_t)idx->count + 1, i;
	struct walker exact = {.idx = idx}, folded = {.idx = idx};
	struct link_memo *memo;
	enum wsnap_status st = WSNAP_OK;

	if (idx->stats.symlinks == 0)
		return WSNAP_OK;
	memo = calloc(2 * n, sizeof(*memo));
	folded.noted = calloc(n, 1);
	if (!memo || !folded.noted) {
		st = wsnap_engine_oom(err);
		goto out;
	}
	st = wsnap_fold_new(&folded.fold, idx, err);
	if (st != WSNAP_OK)
		goto out;
	exact.memo = memo;
	folded.memo = memo + n;
	for (i = 0; i < b->nseq && st == WSNAP_OK; i++) {
		uint32_t ino = b->seq[i].id;
		const struct wsnap_node *nd = &idx->nodes[ino - 1];
		enum walk_result r;

		if (nd->type != WSNAP_TYPE_SYMLINK)
			continue;
		r = resolve_both(&exact, &folded, ino);
		if (r == WALK_ABSOLUTE)
			st = wsnap_error_reject(
				err, wsnap_engine_raw_name(b, &b->seq[i], nd),
				"absolute symlink target not allowed: %s",
				nd->target);
		else if (r != WALK_OK)
			st = wsnap_error_reject(
				err, wsnap_engine_raw_name(b, &b->seq[i], nd),
				"symlink target escapes archive root: %s",
				nd->target);
	}
	if (st == WSNAP_OK && folded.oom)
		st = wsnap_engine_oom(err);
	if (st == WSNAP_OK) {
		wsnap_index_set_case_deps(idx, folded.deps, folded.ndeps);
		folded.deps = NULL;
	}
out:
	free(folded.deps);
	free(folded.noted);
	wsnap_fold_free(folded.fold);
	free(memo);
	return st;
}
