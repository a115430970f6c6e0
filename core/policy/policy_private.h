/* SPDX-License-Identifier: MIT */
/*
 * What the files of the policy engine share (internal to core/policy):
 *
 *   options.c  the policy's options (policy.h);
 *   rules.c    a member name taken apart (section 1) and the rules that
 *              judge one member by its name and type alone (section 3, and
 *              skip, protected paths and named symlinks of section 4);
 *   resolve.c  the symlink target checks of 4.5: the lexical one of phase
 *              one and the [wsnap] strict walk between the phases, byte
 *              for byte and folded (core/index/fold.h);
 *   engine.c   the state below: members received in archive order, limits,
 *              duplicates, the tree, phase two and the finished index.
 *
 * Invariants: struct wsnap_builder belongs to engine.c. rules.c sees only
 * the policy, a parsed name and the name scratch it is handed, never the
 * tree; resolve.c reads the frozen index and the members' archive order
 * (seq), and gets raw names only through wsnap_engine_raw_name. A struct
 * wsnap_name points into scratch that the next wsnap_name_parse on the same
 * buffer (or wsnap_engine_raw_name) overwrites.
 */
#ifndef WSNAP_POLICY_PRIVATE_H
#define WSNAP_POLICY_PRIVATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "engine.h"
#include "grow.h"
#include "hash.h"
#include "index_impl.h"

/* A member name taken apart (section 1). */
struct wsnap_name {
	const char *disp; /* raw name; a directory's without trailing '/' */
	size_t len;
	enum wsnap_raw_type type;
	const char *rel; /* components joined with '/', '..' kept */
	size_t rel_len;
	size_t depth;	  /* components */
	size_t first_len; /* bytes of the first component */
	size_t last_off;  /* where the last component starts in rel */
	bool dotdot;	  /* a component is '..' */
};

/* The scratch a struct wsnap_name points into, reused member by member. */
struct wsnap_name_buf {
	char *rel, *disp;
	size_t relcap, dispcap;
};

/* One indexed member, in archive order (first occurrence); 'kind' says how
 * its raw name is kept for messages after phase one (engine.c): 8 bytes a
 * member, since the rare name kept as a copy is in the builder's 'raws'. */
struct wsnap_seq_ent {
	uint32_t id;
	uint32_t kind;
};

struct wsnap_builder {
	struct wsnap_policy policy;
	size_t strip_len;
	uint64_t max_members;  /* --max-members, at most MAX_MEMBERS_CAP */
	uint64_t max_implicit; /* implicit directories, root entries: same */
	struct wsnap_hash_key key;

	struct wsnap_node *nodes;
	uint32_t nnodes;
	size_t capnodes;
	uint64_t *buckets;	       /* hash << 32 | id, 0 empty (engine.c) */
	size_t nbuckets;	       /* a power of two */
	struct wsnap_arena tree_names; /* freed once frozen */
	struct wsnap_arena strings;    /* raw member names kept as copies */
	struct wsnap_arena targets;    /* symlink targets: go to the index */
	struct wsnap_index_run *runs;
	size_t nruns, capruns;
	struct wsnap_index_sparse *sparse;
	size_t nsparse, capsparse;
	struct wsnap_seq_ent *seq;
	size_t nseq, capseq;
	const char **raws; /* raw names kept as copies (in 'strings') */
	size_t nraws, capraws;

	uint64_t position;    /* members received */
	uint64_t members;     /* non-root members counted against the limit */
	uint64_t implicit;    /* implicit directories in the tree */
	uint64_t roots;	      /* root entries */
	uint64_t total_size;  /* regular file and extension header bytes */
	uint64_t index_bytes; /* charged against --max-index-size */

	/* scratch: the member's names, the renamed member */
	struct wsnap_name_buf names;
	char *renamed;
	size_t renamedcap;
	/* the directory of the previous member: consecutive members of a
	 * directory find their parent without a walk from the root */
	char *cache;
	size_t cachelen, cachecap;
	uint32_t cache_id;
};

static inline enum wsnap_status wsnap_engine_oom(struct wsnap_error *err)
{
	return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
}

/* Makes *buf (capacity *cap) hold at least need bytes; false (the buffer
 * untouched) when out of memory. */
static inline bool wsnap_engine_scratch(char **buf, size_t *cap, size_t need)
{
	char *p = wsnap_grow(*buf, cap, need, 1);

	if (!p)
		return false;
	*buf = p;
	return true;
}

/* engine.c */

/* The raw name of an indexed member, for a message: valid until the next
 * call (it may live in b's scratch). */
const char *wsnap_engine_raw_name(struct wsnap_builder *b,
				  const struct wsnap_seq_ent *e,
				  const struct wsnap_node *n);

/* rules.c */

/*
 * Takes the member name name[0..len) of the given type apart into nm
 * (section 1), in buf's scratch. Errors: WSNAP_IO when out of memory.
 */
enum wsnap_status wsnap_name_parse(struct wsnap_name *nm,
				   struct wsnap_name_buf *buf, const char *name,
				   size_t len, enum wsnap_raw_type type,
				   struct wsnap_error *err);

/*
 * Section 3, in its order, the first failing rule winning (WSNAP_REJECTED).
 * symlinks says whether symlink members are allowed (rule 3.6); target_len
 * is the length of a symlink's target (rule 3.9; ignored for other types).
 * Sets *root for an accepted root entry, which no later rule sees.
 */
enum wsnap_status wsnap_rule_single(const struct wsnap_name *nm, bool symlinks,
				    size_t target_len, bool *root,
				    struct wsnap_error *err);

/* 4.1: whether a variant of the name is within a --skip path. */
bool wsnap_rule_skip(const struct wsnap_policy *p, const struct wsnap_name *nm);

/* 4.3 (--reject-path) and 4.6 (--reject-symlink; other types pass):
 * WSNAP_OK or WSNAP_REJECTED. */
enum wsnap_status wsnap_rule_protected(const struct wsnap_policy *p,
				       const struct wsnap_name *nm,
				       struct wsnap_error *err);
enum wsnap_status wsnap_rule_named_symlink(const struct wsnap_policy *p,
					   const struct wsnap_name *nm,
					   struct wsnap_error *err);

/* resolve.c */

/* 4.5 lexically, for a symlink member nm with target t[0..len): WSNAP_OK
 * or WSNAP_REJECTED. */
enum wsnap_status wsnap_resolve_lexical(const struct wsnap_name *nm,
					const char *t, size_t len,
					struct wsnap_error *err);

/*
 * The [wsnap] walk between the phases over the frozen index idx, per
 * symlink member in archive order (b->seq, whose ids are inos by then),
 * byte for byte and folded; on success idx gets the case dependencies the
 * folded walk found (wsnap_index_case_deps). Errors: WSNAP_REJECTED on the
 * first link that fails, WSNAP_IO.
 */
enum wsnap_status wsnap_resolve_links(struct wsnap_builder *b,
				      struct wsnap_index *idx,
				      struct wsnap_error *err);

#endif
