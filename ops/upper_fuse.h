/* SPDX-License-Identifier: MIT */
/*
 * fuse-overlayfs' '.wh.' names for the merged view (upper.h): where the
 * view may read them as markers, and where it must give up. Internal to
 * ops/upper*.c.
 *
 * Read from disk, a name that starts with '.wh.' is a marker in every
 * layer: '.wh..wh..opq' makes its directory opaque, '.wh.X' hides X (in
 * its own layer too). But what fuse-overlayfs made under such a name
 * itself (a rename, a link, mkdir, a symlink, a fifo) it shows as it is
 * until it is mounted again, and a bare '.wh.' empties the root alone. So
 * a marker is modelled only where the workspace agrees: the name and what
 * it hides are both absent from it (a lookup each through the overlay, as
 * many as there are such names), nothing of that name is beside it, and
 * it is not bare.
 */
#ifndef WSNAP_UPPER_FUSE_H
#define WSNAP_UPPER_FUSE_H

#define WH_PREFIX     ".wh."
#define WH_PREFIX_LEN 4
#define WH_OPAQUE     ".wh..wh..opq"

/* *live before its directory was opened (wsnap_upper_fuse_check). */
#define WSNAP_UPPER_LIVE_UNOPENED (-2)

/*
 * The '.wh.' name of the upper directory fd, whose directory is rel ("."
 * or "./<rel>") of the workspace merged_fd (-1: none): NULL when
 * fuse-overlayfs reads it as the marker the view models, else why not
 * (static text). *live caches that directory of the workspace: opened on
 * first need from WSNAP_UPPER_LIVE_UNOPENED (-1 when it cannot be), to be
 * closed by the caller when >= 0.
 */
const char *wsnap_upper_fuse_check(int fd, const char *name, int merged_fd,
				   const char *rel, int *live);

#endif
