/* SPDX-License-Identifier: MIT */
/*
 * The merged view of a hydrated workspace computed from its two layers
 * instead of read through the overlay: the lower layer is the snapshot's
 * index, the upper directory holds every change. This is the directory
 * side of 'wsnap diff ARCHIVE WORKSPACE' whose file system cost grows with
 * the changes, not with the snapshot: only the upper directory is listed
 * and stat'ed, untouched files are never opened (their bytes are known to
 * be the archive's own), and no request crosses the overlay or FUSE.
 *
 * What the upper directory says (overlayfs.rst, fuse-overlayfs):
 *  - a whiteout hides the lower entry of its name: a character device
 *    0/0; for fuse-overlayfs also a file '.wh.NAME';
 *  - an opaque directory hides the whole lower directory of its name: the
 *    xattr <prefix>opaque = "y" (prefix trusted.overlay. for the kernel,
 *    user.overlay. with userxattr; fuse-overlayfs writes
 *    user.fuseoverlayfs.opaque or one of those) or, for fuse-overlayfs, an
 *    entry '.wh..wh..opq';
 *  - a redirect (kernel, redirect_dir=on) makes a directory merge with the
 *    lower directory at another path: xattr <prefix>redirect, an absolute
 *    path from the layer's root, or one name in the parent's lower
 *    directory;
 *  - anything else in the upper directory is the entry itself (a copied-up
 *    or new file holds all its data: metacopy is off), and a directory in
 *    both layers merges their entries.
 * fuse-overlayfs takes every name that starts with '.wh.' for a marker, in
 * both layers, when it reads them from disk, but shows what it made under
 * such a name itself until it is mounted again. Where that matters (such a
 * name in the archive, a '.wh.' name that the workspace shows, a bare
 * '.wh.', a whiteout beside the entry it names) the view declines and the
 * caller compares through the overlay; otherwise each '.wh.' name costs a
 * lookup or two in the workspace, the only requests that cross it.
 *
 * The merged tree is produced member by member exactly as the directory
 * walker (tree.h) would produce it from the workspace: root ".", entries
 * "./<rel>" of each directory in bytewise order, a directory before its
 * contents, --skip paths pruned, the same listing and depth bounds; and
 * it goes through the same index builder under the same policy. So its
 * index, rejections included, is the one the walker would build, and a
 * comparison against it gives the full comparison's answer.
 */
#ifndef WSNAP_UPPER_H
#define WSNAP_UPPER_H

#include <stdint.h>

#include "diff.h"
#include "error.h"
#include "index.h"
#include "policy.h"

enum wsnap_upper_format {
	WSNAP_UPPER_OVERLAYFS,	    /* kernel, trusted.overlay.* xattrs */
	WSNAP_UPPER_OVERLAYFS_USER, /* kernel with userxattr: user.overlay.* */
	WSNAP_UPPER_FUSE_OVERLAYFS, /* fuse-overlayfs */
};

struct wsnap_upper_stats {
	uint64_t upper_entries; /* entries of the upper directory listed */
	uint64_t whiteouts;	/* of which whiteouts */
	uint64_t opaque_dirs;	/* directories hiding their lower one */
	uint64_t redirects;	/* directories merged with a renamed one */
	uint64_t lower_nodes;	/* merged nodes taken from the lower index */
};

struct wsnap_upper;

/*
 * Builds the merged view of lower (the snapshot's index, built with
 * keep_data under policy; it must outlive the view, as must policy) and
 * the upper directory upper_fd (not closed; must outlive the view).
 * merged_fd is the workspace itself (not closed; -1 if none), where
 * fuse-overlayfs' '.wh.' names are looked up. label names the workspace in
 * messages ("label/rel"), lower_label the archive. On success *out owns
 * the view; or, when the layers cannot say what the workspace shows (see
 * above), *out is NULL, *declined (static text) says why and the caller
 * compares through the overlay instead.
 * Errors: those of the walker and the builder for the merged tree
 * (WSNAP_REJECTED, WSNAP_IO), and WSNAP_IO for an upper directory that
 * cannot be read.
 */
enum wsnap_status wsnap_upper_new(struct wsnap_upper **out,
				  const struct wsnap_index *lower, int upper_fd,
				  int merged_fd, enum wsnap_upper_format fmt,
				  const char *label, const char *lower_label,
				  const struct wsnap_policy *policy,
				  const char **declined,
				  struct wsnap_error *err);

/*
 * The first node of idx (in path order) whose name starts with '.wh.',
 * which fuse-overlayfs would take for a whiteout or an opaque marker
 * instead of showing it (a bare '.wh.' even empties its directory); NULL
 * when there is none. The kernel's overlayfs shows such names as they are.
 */
const struct wsnap_node *wsnap_upper_fuse_hidden(const struct wsnap_index *idx);

/* The merged index (owned by the view). */
const struct wsnap_index *wsnap_upper_index(const struct wsnap_upper *u);

void wsnap_upper_stats(const struct wsnap_upper *u,
		       struct wsnap_upper_stats *st);

/*
 * A diff side over the view: the merged index; a file of the upper
 * directory is read there (through a tree cursor, as the walker's side
 * does), a file of the lower layer from the archive, with the archive's
 * identity, so that against the same archive as side A it is never read.
 * Valid while u lives.
 */
void wsnap_upper_diff_side(struct wsnap_upper *u, struct wsnap_diff_side *side);

/*
 * Where merged node n (of wsnap_upper_index) comes from: the ino of the
 * lower index node it is, taken whole from the lower layer (so it holds
 * that node's bytes), or 0 when it lives in the upper directory.
 */
uint32_t wsnap_upper_source(const struct wsnap_upper *u,
			    const struct wsnap_node *n);

/* Frees the view and its index. NULL does nothing. */
void wsnap_upper_free(struct wsnap_upper *u);

#endif
