/* SPDX-License-Identifier: MIT */
/*
 * The index as a case-folding, normalization-insensitive filesystem would
 * see it (policy.md 4 and 7.7): the members of a directory whose names have
 * the same caseless key (casefold.h) are one name there. Internal to core
 * and ops (the resolver, export); one thread at a time per table.
 */
#ifndef WSNAP_FOLD_H
#define WSNAP_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "index.h"

/* Longest name a look-up compares: a symlink target is shorter (rule 3.9),
 * and a longer name's key is longer than any member name's. */
#define WSNAP_FOLD_MAX_NAME 4096u

struct wsnap_fold;

/* The members of one directory that a name matches when folded. */
struct wsnap_fold_match {
	uint32_t first; /* the lowest ino among them; 0 when none */
	uint32_t count; /* how many */
	bool inert;	/* none is a symlink or a directory with entries: they
			   lead to the same places, so any stands for all */
};

/*
 * A folded view of idx (which must outlive it). Directories are read on
 * first use; memory is about 16 bytes per node plus a bucket, allocated
 * here. Errors: WSNAP_IO when out of memory.
 */
enum wsnap_status wsnap_fold_new(struct wsnap_fold **out,
				 const struct wsnap_index *idx,
				 struct wsnap_error *err);

/* NULL does nothing. */
void wsnap_fold_free(struct wsnap_fold *f);

/* The members of directory dir that name[0..len) matches when folded (none
 * when dir is not a directory or the name is longer than
 * WSNAP_FOLD_MAX_NAME). */
void wsnap_fold_lookup(struct wsnap_fold *f, uint32_t dir, const char *name,
		       size_t len, struct wsnap_fold_match *m);

/* The first entry of directory dir, in ino order, whose name folds to that
 * of an earlier one, or 0; *other is then the earliest of that name. */
uint32_t wsnap_fold_collision(struct wsnap_fold *f, uint32_t dir,
			      uint32_t *other);

#endif
